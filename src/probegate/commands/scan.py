"""``probegate scan``: flags -> config -> plan -> run -> report -> gates -> exit code."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from probegate.commands.flags import add_scan_flags, any_case
from probegate.config import (
    ALLOW_OUTSIDE_FLAG,
    DEFAULT_CONFIG,
    DEFAULT_STORE,
    ScanConfig,
    build_config,
    flag_name,
    read_config_file,
    scan_settings_replaced,
)
from probegate.engine.journal import read_invocation
from probegate.errors import UsageError
from probegate.reports import formats_help
from probegate.scan import execute_scan
from probegate.scan_flags import SCAN_FLAGS, Form, PathRule, ScanFlag
from probegate.targets.registry import (
    PROTOCOL,
    TARGETS,
    apply_flags,
    positional_kinds,
    protocols,
    reproducer_args,
    selecting_flags,
    target_flags,
    target_keys_replaced,
)
from probegate.terminal import Style
from probegate.validation import closest


def add_parser(sub: Any) -> None:
    kinds = "; ".join(f"{', '.join(spec.kinds)}: {spec.summary}" for spec in TARGETS)
    p = sub.add_parser(
        "scan",
        help="run a scan against an agent",
        description=(
            "Scan an agent with the probe library and write reports. Every flag can also be "
            "set under scan: in the config file, by its long name (docs/targets.md); a flag "
            "replaces that one setting of the file and the rest still applies."
        ),
        epilog=f"target kinds (docs/targets.md): {kinds}.",
    )
    p.add_argument(
        "target",
        nargs="?",
        help=f"{', '.join(positional_kinds())}, or a config file "
        f"(default: ./{DEFAULT_CONFIG} when it exists)",
    )
    t = p.add_argument_group("target")
    t.add_argument(
        "--config", metavar="FILE", help=f"config file (default: ./{DEFAULT_CONFIG} when it exists)"
    )
    t.add_argument(
        ALLOW_OUTSIDE_FLAG,
        dest="allow_outside_config",
        action="store_true",
        default=None,
        help="let the config file's paths lead outside its directory tree (default: they may "
        "not; a config from a pull request must not read or write elsewhere)",
    )
    for flag in target_flags():
        choices = protocols() if flag is PROTOCOL else None
        t.add_argument(
            flag.flag,
            dest=flag.key,
            help=flag.help,
            metavar=flag.metavar,
            choices=choices,
            type=any_case if choices else None,
        )
    add_scan_flags(p, {"output": formats_help()})


# What a stored invocation keeps besides the stored scan flags: how the target was named.
_TARGET_NAMING = ("target", "config", "allow_outside_config")


def _invocation(args: argparse.Namespace) -> dict[str, Any]:
    """The command line as data, every path absolute, for ``--resume SCAN_ID`` on its own:
    how the target was named and every scan flag that shapes the scan (scan_flags.py)."""
    cwd = Path.cwd()
    keys = [*_TARGET_NAMING, *(f.key for f in target_flags())]
    keys += [row.key for row in SCAN_FLAGS if row.stored]
    data = {k: v for k in keys if (v := getattr(args, k, None)) is not None}
    paths = {"config", *(f.key for f in target_flags() if f.path)}
    paths |= {row.key for row in SCAN_FLAGS if row.path is not PathRule.NONE}
    for key in paths & data.keys():
        value = data[key]
        data[key] = [str(cwd / v) for v in value] if isinstance(value, list) else str(cwd / value)
    target = data.get("target")
    if isinstance(target, str) and target not in positional_kinds():
        data["target"] = str(cwd / target)
    return data


def _names_target(args: argparse.Namespace) -> bool:
    return bool(args.target or args.config or any(getattr(args, f.key) for f in target_flags()))


def _resumed_args(args: argparse.Namespace) -> argparse.Namespace:
    """``--resume SCAN_ID`` alone: the stored invocation, under whatever this line adds."""
    store = Path(args.store) if args.store else Path(DEFAULT_STORE)
    stored = read_invocation(store, args.resume)
    merged = dict(stored)
    for key, value in vars(args).items():
        if value is not None and value is not False and value != []:
            merged[key] = value
        merged.setdefault(key, value)
    merged["store"] = str(store.resolve())  # where the scan was found is where it lives
    return argparse.Namespace(**merged)


def config_from_args(args: argparse.Namespace) -> tuple[ScanConfig, list[str]]:
    """The scan's config, and the file's settings the flags replaced (``target.x (--flag)``).

    The config file (named, or ``./probegate.yml`` when it exists and no bundled agent is
    named) is read whatever else the command line says: a flag replaces that one key of the
    file and the rest still applies (docs/targets.md, "Flags and the config file").
    """
    invocation = _invocation(args)
    named: str | None = args.target
    kind = named if named in positional_kinds() else None
    given: dict[str, str | None] = {f.key: getattr(args, f.key) for f in target_flags()}
    config_path = _config_path(args, kind, given)
    if config_path is not None and named is None and not args.config:
        # ./probegate.yml: --resume SCAN_ID finds the same file from wherever it is run
        invocation["config"] = str(config_path.resolve())
    outside = bool(args.allow_outside_config)
    file_data: dict[str, Any] = (
        read_config_file(config_path, allow_outside=outside) if config_path else {}
    )
    flags = _scan_flags(args)
    source = str(config_path) if config_path else "command line"
    replaced = [f"scan.{k} ({flag_name(k)})" for k in scan_settings_replaced(file_data, flags)]
    file_target = file_data.get("target")
    if file_target is None or isinstance(file_target, dict):  # else: validation says what is wrong
        from_file = dict(file_target or {})
        target = apply_flags(from_file, given, kind, source=source if config_path else None)
        if kind is None:
            replaced[:0] = [f"target.{k} ({f})" for f, k in target_keys_replaced(from_file, given)]
        if target:
            file_data = {**file_data, "target": target}
    flags["target_args"] = reproducer_args(given, kind, config_path)
    flags["config_path"] = config_path
    flags["base_dir"] = config_path.parent.resolve() if config_path else Path.cwd()
    flags["invocation"] = invocation
    return build_config(file_data, flags, source=source), replaced


def _config_path(
    args: argparse.Namespace, kind: str | None, given: dict[str, str | None]
) -> Path | None:
    """The config file a scan reads: the one named (positionally or with --config), else
    ./probegate.yml when no bundled agent is named; None when the flags alone say it all."""
    named: str | None = args.target
    config_path: Path | None = Path(args.config) if args.config else None
    if named and kind is None:
        if config_path is not None:
            raise UsageError("give either a config file or --config, not both")
        meant = closest(named, positional_kinds())
        if meant is not None and not Path(named).exists():
            raise UsageError(
                f"{named}: no such config file, nor a bundled agent (did you mean {meant!r}?)"
            )
        return Path(named)
    if named is None and config_path is None:
        if Path(DEFAULT_CONFIG).exists():
            return Path(DEFAULT_CONFIG)
        if not any(given[f.key] for f in selecting_flags()):
            kinds = ", ".join(f"'{k}'" for k in positional_kinds())
            options = "/".join(f.flag for f in selecting_flags())
            raise UsageError(
                f"no target: give {kinds}, a config file, or {options} (no ./probegate.yml here)"
            )
    return config_path


def _scan_flags(args: argparse.Namespace) -> dict[str, Any]:
    """Every scan setting by field, None where its flag was not given (the file decides).
    Paths in flags are relative to where the user stands; in the config file, to the file."""
    return {row.field: _flag_value(args, row) for row in SCAN_FLAGS}


def _flag_value(args: argparse.Namespace, row: ScanFlag) -> Any:
    value = getattr(args, row.key, None)
    if row.form is Form.SWITCH:
        return True if value else None  # a global switch is False when not given
    if value is None or row.path is not PathRule.RESOLVED:
        return value
    if isinstance(value, list):
        return [str(Path(v).resolve()) for v in value]
    return str(Path(value).resolve())


def _say_replaced(config: ScanConfig, replaced: list[str]) -> None:
    """One line naming the file's settings the command line replaced; the rest still apply."""
    if not replaced or config.quiet or config.config_path is None:
        return
    style = Style(sys.stderr)
    print(
        f"{style('note:', 'yellow')} {config.config_path}: the command line replaces "
        f"{', '.join(replaced)}; the file's other settings apply",
        file=sys.stderr,
    )


def run(args: argparse.Namespace) -> int:
    if args.resume and not _names_target(args):
        args = _resumed_args(args)
    config, replaced = config_from_args(args)
    _say_replaced(config, replaced)
    return execute_scan(
        config, out=sys.stdout, err=sys.stderr, verbose=bool(args.verbose), as_json=bool(args.json)
    )
