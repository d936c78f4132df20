"""`probegate verify FILE`: check a signed report's schema, signatures and trust anchor.

Prints exactly four lines (``schema:``, ``HMAC-SHA256:``, ``Ed25519:``, ``trust anchor:``) and
exits 0 only when nothing failed and the report was signed by a pinned key: a valid signature
by an unknown key proves nothing about who made the report (PRODUCT.md section 6).
Exit 1 for any FAIL or UNANCHORED, exit 2 when the file or a key cannot be read at all.
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path
from typing import Any

from probegate.errors import ReportError, UsageError
from probegate.reports.signing import SECRET_ENV, verify_report


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "verify",
        help="check schema, HMAC-SHA256, Ed25519 and trust anchor of a signed report",
        description=(
            "Verify a signed scan report. Exit 0 only if every signature present checks and "
            "the signing key is pinned with --pubkey-file; 1 on any failure or UNANCHORED; "
            "2 if the file cannot be read."
        ),
    )
    p.add_argument("file", metavar="FILE", help="the scan JSON (scan.json)")
    p.add_argument(
        "--pubkey-file",
        action="append",
        default=[],
        metavar="KEY",
        help="a trusted Ed25519 public key (PEM); repeat to pin several",
    )
    p.add_argument(
        "--secret",
        default=None,
        help=f"HMAC secret (prefer ${SECRET_ENV}: a flag shows up in process listings)",
    )


def run(args: argparse.Namespace) -> int:
    data = load_report_json(Path(args.file))
    pinned = []
    for key_file in args.pubkey_file:
        try:
            pinned.append(Path(key_file).read_bytes())
        except OSError as exc:
            raise UsageError(f"cannot read public key {key_file}: {exc.strerror}") from exc
    secret_text = args.secret if args.secret is not None else os.environ.get(SECRET_ENV, "")
    secret = secret_text.encode("utf-8") if secret_text else None
    result = verify_report(data, secret=secret, pinned_public_keys=pinned)
    for line in result.lines():
        print(line)
    return 0 if result.ok else 1


def load_report_json(path: Path) -> dict[str, Any]:
    """Parse a report file strictly: valid UTF-8 JSON, an object, no duplicate keys, no NaN.

    Duplicate keys matter for signatures: parsers disagree on which copy wins, so a file with
    ``"aivss": 99`` before the signed ``"aivss": 42`` could show one number to a dashboard and
    another to the verifier.
    """
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise ReportError(f"cannot read {path}: {exc.strerror}") from exc
    return parse_report_json(raw, str(path))


def parse_report_json(raw: bytes, source: str = "report") -> dict[str, Any]:
    """:func:`load_report_json` for bytes already in memory."""
    try:
        data = json.loads(
            raw.decode("utf-8"),
            object_pairs_hook=_no_duplicates,
            parse_constant=_no_constants,
        )
    except (UnicodeDecodeError, ValueError) as exc:
        raise ReportError(f"{source} is not valid JSON: {exc}") from exc
    if not isinstance(data, dict):
        raise ReportError(f"{source} is not a JSON object")
    return data


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise ValueError(f"duplicate key {key!r}")
        out[key] = value
    return out


def _no_constants(name: str) -> Any:
    raise ValueError(f"{name} is not allowed in a report")
