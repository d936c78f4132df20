"""``probegate scan``: flags -> config -> plan -> run -> report -> gates -> exit code."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from probegate.commands.flags import add_gate_flags, add_signing_flags, any_case
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


def _default(field: str) -> str:
    """``(default: X)`` from :class:`ScanConfig` itself, so help and behaviour never differ."""
    value = ScanConfig.model_fields[field].get_default(call_default_factory=True)
    if isinstance(value, list):
        value = ",".join(str(v) for v in value)
    return f" (default: {value})"


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
    s = p.add_argument_group("scan")
    modes = ["fast", "smart", "full"]
    s.add_argument(
        "--mode",
        choices=modes,
        type=any_case,
        help="fast: every applicable probe once; smart: then mutated variants where the agent "
        "resisted; full: every probe x every mutator x --repeat (the only authoritative mode)"
        + _default("mode"),
    )
    s.add_argument(
        "--asi",
        action="append",
        metavar="LIST",
        help="only these ASI categories, comma list or repeated: ASI01,ASI03 (default: all)",
    )
    s.add_argument(
        "--probes",
        action="append",
        metavar="GLOB",
        help="only probes whose id matches this glob, e.g. 'asi01*' (repeatable; default: all)",
    )
    s.add_argument(
        "--suite",
        metavar="agentdojo[:SUITE]",
        help="run AgentDojo's task pairs instead of the probe library: agentdojo (its four "
        "suites) or agentdojo:banking,slack,travel,workspace; each attempt is also checked by "
        "AgentDojo's own security check and the report states the agreement (needs "
        "pip install 'probegate[agentdojo]'; docs/agentdojo.md)",
    )
    s.add_argument(
        "--probe-dir",
        dest="probe_dir",
        action="append",
        metavar="DIR",
        help="extra directory of your own probe YAML files (repeatable; docs/custom-probes.md)",
    )
    s.add_argument(
        "--variant",
        metavar="NAME",
        help="only this variant of each probe: seed or a mutator's name, as a finding's "
        "reproducer runs it (default: every variant the mode plans)",
    )
    s.add_argument(
        "--concurrency",
        type=int,
        metavar="N",
        help="attempts in flight at once against an agent that waits on a network or a model "
        "(the demo agents and replays only compute: one at a time)" + _default("concurrency"),
    )
    s.add_argument(
        "--rps",
        type=float,
        metavar="N",
        help="max requests per second to the target (default: no limit)",
    )
    s.add_argument(
        "--timeout",
        type=float,
        metavar="SECONDS",
        help="per-request timeout" + _default("timeout"),
    )
    s.add_argument(
        "--retries",
        type=int,
        metavar="N",
        help="retries of a failed request, with backoff that honours Retry-After"
        + _default("retries"),
    )
    s.add_argument(
        "--deadline",
        type=float,
        metavar="SECONDS",
        help="stop the scan after this many seconds and write its report (default: none)",
    )
    s.add_argument(
        "--max-wait",
        dest="max_wait",
        type=float,
        metavar="SECONDS",
        help="most seconds the whole scan pauses for Retry-After" + _default("max_wait"),
    )
    s.add_argument(
        "--repeat",
        type=int,
        metavar="N",
        help="runs of each variant (default: 3 in full mode, else 1)",
    )
    s.add_argument(
        "--seed",
        type=int,
        metavar="N",
        help="seed of the mutators and planted canaries: same seed, same scan" + _default("seed"),
    )
    s.add_argument(
        "--budget-usd",
        dest="budget_usd",
        type=float,
        metavar="X",
        help="stop starting attempts at 80%% of this many dollars, never exceed it "
        "(default: no cap)",
    )
    s.add_argument(
        "--allow-unpriced",
        dest="allow_unpriced",
        action="store_true",
        default=None,
        help="run with --budget-usd although a model has no price in target.prices, so the "
        "dollar cap counts nothing for it (default: such a scan is refused)",
    )
    s.add_argument(
        "--max-requests",
        dest="max_requests",
        type=int,
        metavar="N",
        help="stop after this many requests to the target and judge (default: no cap)",
    )
    s.add_argument(
        "--judge",
        metavar="SPEC",
        help="LLM judge for probes oracles cannot decide, e.g. openai:gpt-4o-mini "
        "(default: none; evidence oracles only)",
    )
    s.add_argument(
        "--no-controls",
        dest="controls",
        action="store_false",
        default=None,
        help="do not re-run vulnerable attempts without the attack to check the attack caused "
        "them (faster; the scan is then not authoritative; default: controls run)",
    )
    s.add_argument(
        "--dry-run",
        dest="dry_run",
        action="store_true",
        default=None,
        help="print the plan and its estimated requests and cost; send nothing",
    )
    s.add_argument(
        "--resume",
        metavar="SCAN_ID",
        help="continue an interrupted scan from its journal; needs no other flag "
        "(the scan's settings are stored with it)",
    )
    s.add_argument(
        "--record",
        metavar="DIR",
        help="write every attempt's transcript here, for --replay DIR (default: none)",
    )
    s.add_argument(
        "--shard",
        metavar="K/N",
        help="run the K-th of N parts of the plan; join them with 'probegate merge' "
        "(default: the whole plan)",
    )
    s.add_argument(
        "--store",
        metavar="DIR",
        help="where each scan's journal, transcripts, report and reproducers are kept"
        + _default("store"),
    )
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
    a = p.add_argument_group("probegate's A2A peers (docs/scan-your-agent/a2a.md)")
    a.add_argument(
        "--a2a-listen",
        dest="a2a_listen",
        metavar="HOST:PORT",
        help="where the A2A peers listen when the agent calls other agents through them "
        "(default 127.0.0.1 on a free port)",
    )
    a.add_argument(
        "--a2a-advertise",
        dest="a2a_advertise",
        metavar="URL",
        help="the base URL the agent is given for the A2A peers, when it reaches probegate "
        "across a network, e.g. from a container (default: the listen address)",
    )
    o = p.add_argument_group("output and gates")
    o.add_argument(
        "--output",
        action="append",
        metavar="FORMATS",
        help=formats_help(),
    )
    o.add_argument(
        "--output-dir",
        dest="output_dir",
        metavar="DIR",
        help="where the report files go (files of formats not asked for this time are "
        "removed, so the folder is one scan's)" + _default("output_dir"),
    )
    add_gate_flags(
        o,
        fail_under_help="exit 1 when the score (0-100) is below SCORE; exit 3 on a scan that is "
        "not authoritative (default: no score gate)",
        fail_on_help="exit 1 on an unsuppressed finding at or above: critical, high, medium, "
        "low (default: no severity gate)",
    )
    o.add_argument(
        "--baseline",
        metavar="FILE",
        help="baseline scan JSON; exit 1 on a new finding or a score drop (default: none)",
    )
    o.add_argument(
        "--tolerance",
        type=float,
        metavar="X",
        help="score points the baseline comparison allows to drop" + _default("tolerance"),
    )
    o.add_argument(
        "--allow-mismatch",
        dest="allow_mismatch",
        action="store_true",
        default=None,
        help="compare with a baseline of another library version or mode (common probes only)",
    )
    o.add_argument(
        "--suppressions",
        metavar="FILE",
        help="accepted findings (default: .probegate-suppressions.yml when it exists)",
    )
    add_signing_flags(
        o, sign_help="require signing (default: sign when PROBEGATE_SIGNING_SECRET or a key is set)"
    )


_SCAN_FLAGS = (
    "mode",
    "variant",
    "suite",
    "concurrency",
    "rps",
    "timeout",
    "retries",
    "deadline",
    "max_wait",
    "repeat",
    "seed",
    "budget_usd",
    "allow_unpriced",
    "max_requests",
    "judge",
    "controls",
    "dry_run",
    "resume",
    "record",
    "shard",
    "store",
    "mcp_listen",
    "mcp_advertise",
    "a2a_listen",
    "a2a_advertise",
    "output_dir",
    "fail_under",
    "fail_on",
    "baseline",
    "suppressions",
    "sign",
    "signing_key",
)
# Flags whose value is a path, as the user typed it: relative to where they stand.
_PATH_FLAGS = ("baseline", "suppressions", "signing_key", "record", "store", "output_dir")
# What a stored invocation keeps: every flag that shapes the scan, none that only runs it once.
_NOT_STORED = frozenset({"command", "resume", "dry_run", "debug", "json", "verbose", "help"})


def _invocation(args: argparse.Namespace) -> dict[str, Any]:
    """The command line as data, every path absolute, for ``--resume SCAN_ID`` on its own."""
    cwd = Path.cwd()
    data = {k: v for k, v in vars(args).items() if k not in _NOT_STORED and v is not None}
    path_flags = {*_PATH_FLAGS, "config", *(f.key for f in target_flags() if f.path)}
    for key in path_flags:
        if isinstance(data.get(key), str):
            data[key] = str(cwd / data[key])
    target = data.get("target")
    if isinstance(target, str) and target not in positional_kinds():
        data["target"] = str(cwd / target)
    if data.get("probe_dir"):
        data["probe_dir"] = [str(cwd / d) for d in data["probe_dir"]]
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


def _config_from_args(args: argparse.Namespace) -> tuple[ScanConfig, list[str]]:
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
    """The scan settings given as flags, None where not given (the file decides). Paths in
    flags are relative to where the user stands; in the config file, to the file."""
    flags: dict[str, Any] = {k: getattr(args, k, None) for k in _SCAN_FLAGS}
    for key in ("baseline", "suppressions", "signing_key", "record"):
        if flags[key] is not None:
            flags[key] = str(Path(flags[key]).resolve())
    flags["quiet"] = True if args.quiet else None  # the global -q; else the file decides
    flags["asi"] = args.asi
    flags["probes"] = args.probes
    flags["probe_dirs"] = (
        [str(Path(d).resolve()) for d in args.probe_dir] if args.probe_dir else None
    )
    flags["output"] = args.output
    if args.tolerance is not None:
        flags["tolerance"] = args.tolerance
    if args.allow_mismatch is not None:
        flags["allow_mismatch"] = args.allow_mismatch
    return flags


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
    config, replaced = _config_from_args(args)
    _say_replaced(config, replaced)
    return execute_scan(
        config, out=sys.stdout, err=sys.stderr, verbose=bool(args.verbose), as_json=bool(args.json)
    )
