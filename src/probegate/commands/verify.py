"""`probegate verify FILE`: check a signed report's schema, signatures and trust anchor.

Prints exactly four lines (``schema:``, ``HMAC-SHA256:``, ``Ed25519:``, ``trust anchor:``) and
exits 0 only when nothing failed and the report is anchored: signed by a pinned key, or
carrying an HMAC that matches the secret the verifier gave. A valid signature by an unknown
key proves nothing about who made the report (docs/signing.md).
Exit 1 for any FAIL or UNANCHORED, exit 2 when the file or a key cannot be read at all.
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path
from typing import Any

from probegate.files import MAX_INPUT_BYTES, read_bytes
from probegate.models.stored import load_report_json
from probegate.reports.signing import SECRET_ENV, verify_report
from probegate.terminal import json_text, one_line

VERIFY_LINE_MAX = 400  # a note may quote the report at length; one bounded line each


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "verify",
        help="check schema, HMAC-SHA256, Ed25519 and trust anchor of a signed report",
        description=(
            "Verify a signed scan report. Exit 0 only if every signature present checks and "
            "the report is anchored: its Ed25519 key pinned with --pubkey-file, or its HMAC "
            "matching the secret given; 1 on any failure or UNANCHORED; 2 if the file cannot "
            "be read."
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
        pinned.append(read_bytes(Path(key_file), what="public key", max_bytes=MAX_INPUT_BYTES))
    secret_text = args.secret if args.secret is not None else os.environ.get(SECRET_ENV, "")
    secret = secret_text.encode("utf-8") if secret_text else None
    result = verify_report(data, secret=secret, pinned_public_keys=pinned)
    if args.json:
        checks = {
            "schema": result.schema,
            "hmac_sha256": result.hmac_sha256,
            "ed25519": result.ed25519,
            "trust_anchor": result.trust_anchor,
        }
        out: dict[str, Any] = {name: status.value for name, status in checks.items()}
        out.update(ok=result.ok, key_id=result.key_id, notes=dict(result.notes))
        print(json_text(json.dumps(out, indent=2, sort_keys=True)))
        return 0 if result.ok else 1
    for line in result.lines():  # notes quote the report (a key name, a field): untrusted
        print(one_line(line, VERIFY_LINE_MAX))
    return 0 if result.ok else 1
