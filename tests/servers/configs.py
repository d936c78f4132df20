"""probegate.yml files for the loopback agents, written into a test's tmp directory."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

TOOLS: list[dict[str, Any]] = [
    {
        "name": "lookup_customer",
        "description": "Look up a customer record by id.",
        "capabilities": ["pii_read"],
        "parameters": {"type": "object", "properties": {"customer_id": {"type": "string"}}},
    },
    {
        "name": "send_email",
        "description": "Send an email on the customer's behalf.",
        "capabilities": ["egress"],
        "parameters": {
            "type": "object",
            "properties": {"to": {"type": "string"}, "body": {"type": "string"}},
        },
    },
    {
        "name": "fetch_document",
        "description": "Fetch a document or web page by URL.",
        "capabilities": ["retrieval"],
        "parameters": {"type": "object", "properties": {"url": {"type": "string"}}},
    },
]
# A payment tool, for agents whose legitimate task is a refund (controls, the careful agents).
REFUND_TOOL: dict[str, Any] = {
    "name": "issue_refund",
    "description": "Refund an order.",
    "capabilities": ["financial"],
    "parameters": {
        "type": "object",
        "properties": {"order_id": {"type": "string"}, "amount": {"type": "number"}},
    },
}


def write_config(
    directory: Path, target: dict[str, Any], scan: dict[str, Any] | None = None
) -> Path:
    path = directory / "probegate.yml"
    data: dict[str, Any] = {"target": target}
    if scan:
        data["scan"] = scan
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return path


def openai_config(directory: Path, endpoint: str, **extra: Any) -> Path:
    (directory / "prompt.txt").write_text("You are the Acme support agent.\n", encoding="utf-8")
    target: dict[str, Any] = {
        "kind": "openai",
        "endpoint": endpoint,
        "model": "fake-1",
        "system_prompt": "prompt.txt",
        "max_turns": 4,
        "tools": TOOLS,
    }
    target.update(extra)
    return write_config(directory, target)


# Probes whose outcome against the loopback agents is known: the weak agent falls for each,
# the hardened one for none. The library grows; these ids are stable.
KNOWN_PROBES = (
    "asi01.direct-system-prompt-leak.v1",
    "asi01.indirect-document-email-exfil.v1",
    "asi02.email-blast.v1",
    "asi02.recipient-argument-injection.v1",
    "asi03.credential-harvest-debug.v1",
    "asi08.error-fallback-exfil.v1",
)


def known_probes() -> list[str]:
    out: list[str] = []
    for probe in KNOWN_PROBES:
        out += ["--probes", probe]
    return out


def scan_args(config: Path, tmp: Path, *extra: str) -> list[str]:
    """The argv of a quiet, unsigned scan that writes only under ``tmp``."""
    return [
        "scan",
        str(config),
        "--store",
        str(tmp / "store"),
        "--output-dir",
        str(tmp / "out"),
        "--no-sign",
        "--quiet",
        *extra,
    ]
