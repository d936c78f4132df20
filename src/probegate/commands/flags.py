"""The scan flag table (probegate/scan_flags.py) as argparse arguments, for ``scan`` and
``merge``.

A merged report is gated and signed like a scan's (docs/github-action.md, sharding), so merge
adds the same rows (``GATE_FLAGS``, ``SIGNING_FLAGS``): spelled, parsed and defaulted the same
way; only the help sentences that say what the command itself does differ, and each command
passes its own.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, assert_never

from probegate.config import ScanConfig
from probegate.scan_flags import SCAN_FLAGS, Form, Group, ScanFlag


def any_case(text: str) -> str:
    """A choice in any case (``--fail-on HIGH``, ``--mode FAST``): argparse then checks it."""
    return text.strip().lower()


def default_text(field: str) -> str:
    """``(default: X)`` from :class:`ScanConfig` itself, so help and behaviour never differ."""
    value = ScanConfig.model_fields[field].get_default(call_default_factory=True)
    if isinstance(value, list):
        value = ",".join(str(v) for v in value)
    return f" (default: {value})"


def add_flag(group: Any, row: ScanFlag, *, help_text: str | None = None) -> None:
    """One row as the argparse argument(s) of ``group``; ``help_text`` replaces the row's."""
    text = help_text if help_text is not None else row.help
    if row.show_default:
        text += default_text(row.field)
    match row.form:
        case Form.VALUE:
            kinds: dict[str, Any] = {"type": row.type} if row.type else {}
            if row.choices:
                kinds = {"type": any_case, "choices": list(row.choices)}
            group.add_argument(row.flag, dest=row.key, metavar=row.metavar, help=text, **kinds)
        case Form.LIST:
            group.add_argument(
                row.flag, dest=row.key, action="append", metavar=row.metavar, help=text
            )
        case Form.SWITCH:
            group.add_argument(row.flag, dest=row.key, action="store_true", default=None, help=text)
        case Form.OFF:
            group.add_argument(
                row.flag, dest=row.key, action="store_false", default=None, help=text
            )
        case Form.TOGGLE:
            group.add_argument(row.flag, dest=row.key, action="store_true", default=None, help=text)
            group.add_argument(row.off_flag, dest=row.key, action="store_false", help=row.off_help)
        case _:
            assert_never(row.form)


def add_flags(group: Any, rows: Iterable[ScanFlag], helps: Mapping[str, str] | None = None) -> None:
    """Each row in order; ``helps`` replaces the help of the fields it names."""
    for row in rows:
        add_flag(group, row, help_text=(helps or {}).get(row.field))


def add_scan_flags(parser: Any, helps: Mapping[str, str]) -> None:
    """Every row of the table in its help group, in table order (global rows are cli's)."""
    for group in Group:
        if group is Group.GLOBAL:
            continue
        args = parser.add_argument_group(group.value)
        add_flags(args, (row for row in SCAN_FLAGS if row.group is group), helps)
