"""``probegate scan``: flags -> config -> plan -> run -> report -> gates -> exit code."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from probegate.config import DEFAULT_CONFIG, ScanConfig, build_config, read_config_file
from probegate.errors import UsageError
from probegate.reports import formats_help
from probegate.scan import execute_scan
from probegate.targets.registry import (
    PROTOCOL,
    TARGETS,
    apply_flags,
    endpoint_kinds,
    positional_kinds,
    reproducer_args,
    selecting_flags,
    target_flags,
)


def add_parser(sub: Any) -> None:
    kinds = "; ".join(f"{', '.join(spec.kinds)}: {spec.summary}" for spec in TARGETS)
    p = sub.add_parser(
        "scan",
        help="run a scan against an agent",
        description="Scan an agent with the probe library and write reports.",
        epilog=f"target kinds (docs/targets.md): {kinds}.",
    )
    p.add_argument("target", nargs="?", help=f"{', '.join(positional_kinds())}, or a config file")
    t = p.add_argument_group("target")
    t.add_argument("--config", help="config file (default ./probegate.yml when it exists)")
    for flag in target_flags():
        choices = endpoint_kinds() if flag is PROTOCOL else None
        t.add_argument(
            flag.flag, dest=flag.key, help=flag.help, metavar=flag.metavar, choices=choices
        )
    s = p.add_argument_group("scan")
    s.add_argument("--mode", choices=["fast", "smart", "full"])
    s.add_argument("--asi", action="append", help="only these ASI categories (ASI01,ASI03)")
    s.add_argument("--probes", action="append", help="only probes whose id matches this glob")
    s.add_argument(
        "--probe-dir",
        dest="probe_dir",
        action="append",
        help="extra directory of your own probe YAML files (repeatable)",
    )
    s.add_argument("--concurrency", type=int)
    s.add_argument("--rps", type=float, help="max requests per second to the target")
    s.add_argument("--timeout", type=float, help="per-request timeout in seconds")
    s.add_argument("--retries", type=int)
    s.add_argument("--repeat", type=int, help="runs of each variant (full mode default 3)")
    s.add_argument("--seed", type=int)
    s.add_argument("--budget-usd", dest="budget_usd", type=float)
    s.add_argument("--max-requests", dest="max_requests", type=int)
    s.add_argument("--judge", help="LLM judge, e.g. openai:gpt-4o-mini")
    s.add_argument("--dry-run", dest="dry_run", action="store_true", default=None)
    s.add_argument("--resume", metavar="SCAN_ID")
    s.add_argument("--record", metavar="DIR")
    s.add_argument("--shard", metavar="K/N")
    s.add_argument("--store", metavar="DIR", help="journal and scan store (default .probegate)")
    m = p.add_argument_group("probegate's MCP server (docs/agent-service.md)")
    m.add_argument(
        "--mcp-listen",
        dest="mcp_listen",
        metavar="HOST:PORT",
        help="where the MCP server listens when the agent takes its tools from it "
        "(default 127.0.0.1 on a free port)",
    )
    m.add_argument(
        "--mcp-advertise",
        dest="mcp_advertise",
        metavar="URL",
        help="the base URL the agent is given for the MCP server, when it reaches probegate "
        "across a network, e.g. from a container (default: the listen address)",
    )
    o = p.add_argument_group("output and gates")
    o.add_argument("--output", action="append", metavar="FMT", help=formats_help())
    o.add_argument("--output-dir", dest="output_dir")
    o.add_argument("--fail-under", dest="fail_under", type=float)
    o.add_argument("--fail-on", dest="fail_on", choices=["critical", "high", "medium", "low"])
    o.add_argument("--baseline", help="baseline scan JSON to compare against")
    o.add_argument("--tolerance", type=float, help="allowed score drop against the baseline")
    o.add_argument("--allow-mismatch", dest="allow_mismatch", action="store_true", default=None)
    o.add_argument("--suppressions", help="suppression file (default .probegate-suppressions.yml)")
    o.add_argument("--sign", dest="sign", action="store_true", default=None)
    o.add_argument("--no-sign", dest="sign", action="store_false")
    o.add_argument("--signing-key", dest="signing_key", help="Ed25519 private key (PEM)")
    o.add_argument("--quiet", action="store_true", default=None)


_SCAN_FLAGS = (
    "mode",
    "concurrency",
    "rps",
    "timeout",
    "retries",
    "repeat",
    "seed",
    "budget_usd",
    "max_requests",
    "judge",
    "dry_run",
    "resume",
    "record",
    "shard",
    "store",
    "mcp_listen",
    "mcp_advertise",
    "output_dir",
    "fail_under",
    "fail_on",
    "baseline",
    "suppressions",
    "sign",
    "signing_key",
    "quiet",
)


def _config_from_args(args: argparse.Namespace) -> ScanConfig:
    named: str | None = args.target
    kind = named if named in positional_kinds() else None
    config_path: Path | None = Path(args.config) if args.config else None
    if named and kind is None:
        if config_path is not None:
            raise UsageError("give either a config file or --config, not both")
        config_path = Path(named)
    given: dict[str, str | None] = {f.key: getattr(args, f.key) for f in target_flags()}
    if named is None and config_path is None and not any(given[f.key] for f in selecting_flags()):
        if Path(DEFAULT_CONFIG).exists():
            config_path = Path(DEFAULT_CONFIG)
        else:
            kinds = ", ".join(f"'{k}'" for k in positional_kinds())
            options = "/".join(f.flag for f in selecting_flags())
            raise UsageError(
                f"no target: give {kinds}, a config file, or {options} (no ./probegate.yml here)"
            )
    file_data: dict[str, Any] = read_config_file(config_path) if config_path else {}
    flags: dict[str, Any] = {k: getattr(args, k) for k in _SCAN_FLAGS}
    for key in ("baseline", "suppressions", "signing_key", "record"):
        if flags[key] is not None:  # flag paths are relative to where the user stands
            flags[key] = str(Path(flags[key]).resolve())
    flags["asi"] = args.asi
    flags["probes"] = args.probes
    # flag paths are relative to where the user stands; config-file paths to the file
    flags["probe_dirs"] = (
        [str(Path(d).resolve()) for d in args.probe_dir] if args.probe_dir else None
    )
    flags["output"] = args.output
    if args.tolerance is not None:
        flags["tolerance"] = args.tolerance
    if args.allow_mismatch is not None:
        flags["allow_mismatch"] = args.allow_mismatch
    file_target = file_data.get("target")
    if file_target is None or isinstance(file_target, dict):  # else: validation says what is wrong
        target = apply_flags(dict(file_target or {}), given, kind)
        if target:
            file_data = {**file_data, "target": target}
    flags["target_args"] = reproducer_args(given, kind, config_path)
    flags["config_path"] = config_path
    flags["base_dir"] = config_path.parent.resolve() if config_path else Path.cwd()
    source = str(config_path) if config_path else "command line"
    return build_config(file_data, flags, source=source)


def run(args: argparse.Namespace) -> int:
    config = _config_from_args(args)
    return execute_scan(config, out=sys.stdout, err=sys.stderr)
