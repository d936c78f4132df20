"""Flags that more than one command takes (``scan`` and ``merge``), defined once.

A merged report is gated and signed like a scan's (docs/github-action.md, sharding), so the
gate and signing flags must be spelled, parsed and defaulted the same way in both; only the
help sentences that say what the command itself does differ, and each command passes its own.
"""

from __future__ import annotations

from typing import Any

SEVERITIES = ("critical", "high", "medium", "low")


def any_case(text: str) -> str:
    """A choice in any case (``--fail-on HIGH``, ``--mode FAST``): argparse then checks it."""
    return text.strip().lower()


def add_gate_flags(group: Any, *, fail_under_help: str, fail_on_help: str) -> None:
    """``--fail-under SCORE`` and ``--fail-on SEVERITY`` (docs/gating.md)."""
    group.add_argument(
        "--fail-under",
        dest="fail_under",
        type=float,
        metavar="SCORE",
        help=fail_under_help,
    )
    group.add_argument(
        "--fail-on",
        dest="fail_on",
        choices=list(SEVERITIES),
        type=any_case,
        metavar="SEVERITY",
        help=fail_on_help,
    )


def add_signing_flags(group: Any, *, sign_help: str) -> None:
    """``--sign``/``--no-sign`` and ``--signing-key FILE`` (docs/signing.md): unset ``sign``
    (None) means "sign when signing material is present"."""
    group.add_argument(
        "--sign",
        dest="sign",
        action="store_true",
        default=None,
        help=sign_help,
    )
    group.add_argument("--no-sign", dest="sign", action="store_false", help="never sign")
    group.add_argument(
        "--signing-key",
        dest="signing_key",
        metavar="FILE",
        help="Ed25519 private key, PEM (default: $PROBEGATE_SIGNING_KEY)",
    )
