"""`probegate scan`: not built yet."""

from __future__ import annotations

import argparse
from typing import Any

from probegate.errors import UsageError


def add_parser(sub: Any) -> None:
    p = sub.add_parser("scan", help="(not built yet)")
    p.add_argument("rest", nargs="*")


def run(args: argparse.Namespace) -> int:
    raise UsageError("'probegate scan' is not built yet")
