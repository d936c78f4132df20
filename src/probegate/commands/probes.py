"""``probegate probes``: browse the probe library (``list``, ``show ID``) and check your own
probes (``lint DIR``); ``--json`` for machines.

Text output is for people and cleaned for the terminal (payloads hide instructions in invisible
characters on purpose; they are shown as escapes). JSON output is sorted and stable, so scripts
and the docs test can rely on it. ``--probe-dir DIR`` adds custom probes exactly as ``scan``
does, so ``list`` and ``show`` see what a scan would run (docs/custom-probes.md).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from probegate.canonical import pretty_bytes
from probegate.errors import ExitCode, UsageError
from probegate.library.controls import control_text
from probegate.library.docs import ORACLE_KINDS, probe_record, visible
from probegate.library.lint import lint_directory
from probegate.library.loader import Library, extend_library, load_atlas, load_library
from probegate.library.mutators import MUTATORS
from probegate.library.probe import Probe
from probegate.models.taxonomy import ASI_IDS, ASI_TITLES, CSA_TITLES, OWASP_LLM_TITLES, unknown_asi
from probegate.terminal import clean, json_text


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "probes",
        help="browse the probe library",
        description="Browse the probe library: list probes or show one in full.",
    )
    actions = p.add_subparsers(dest="probes_action", metavar="ACTION")
    ls = actions.add_parser(
        "list",
        help="list probes (the default)",
        description=(
            "List every probe with its ASI category, severity, channel and oracles. Oracle "
            f"kinds: {', '.join(ORACLE_KINDS)} (docs/probes.md, 'Oracle kinds')."
        ),
    )
    ls.add_argument("--asi", action="append", help="only these ASI categories (ASI01,ASI03)")
    _probe_dir(ls)
    show = actions.add_parser(
        "show",
        help="show one probe in full",
        description="Show one probe: what it tests, its turns and fixtures, how it is judged.",
    )
    show.add_argument(
        "probe_id", metavar="ID", help="probe id, e.g. asi01.direct-system-prompt-leak.v1"
    )
    _probe_dir(show)
    lint = actions.add_parser(
        "lint",
        help="check a directory of your own probes: every problem, in one run",
        description=(
            "Check every probe file in DIR against the probe format (docs/custom-probes.md) "
            "and report every problem with its file, line and field. Exit 0 when every probe "
            "is valid, 2 when any is not."
        ),
    )
    lint.add_argument("directory", metavar="DIR", help="directory of probe YAML files")


def _probe_dir(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--probe-dir",
        dest="probe_dir",
        action="append",
        metavar="DIR",
        help="also your own probes from DIR, as 'scan --probe-dir' (repeatable)",
    )


def _library(args: argparse.Namespace) -> Library:
    dirs = [Path(d) for d in getattr(args, "probe_dir", None) or []]
    return extend_library(load_library(), dirs)


def run(args: argparse.Namespace) -> int:
    action = getattr(args, "probes_action", None)
    if action == "lint":
        return _lint(Path(args.directory), as_json=bool(args.json), quiet=bool(args.quiet))
    if action == "show":
        return _show(_library(args), args.probe_id, as_json=args.json)
    return _list(
        _library(args), getattr(args, "asi", None) or [], as_json=bool(getattr(args, "json", False))
    )


def _lint(directory: Path, *, as_json: bool, quiet: bool) -> int:
    result = lint_directory(directory, known_ids=[p.id for p in load_library().probes])
    code = ExitCode.USAGE if result.problems else ExitCode.PASSED
    if as_json:
        data = {
            "directory": directory.as_posix(),
            "files": result.files,
            "valid": [p.id for p in result.probes],
            "problems": [p.to_dict() for p in result.problems],
        }
        sys.stdout.write(json_text(json.dumps(data, indent=2, sort_keys=True)) + "\n")
        return code
    for problem in result.problems:
        print(clean(problem.text()), file=sys.stderr)
    if result.problems:
        files = len({p.path for p in result.problems})
        print(
            f"{len(result.problems)} problem(s) in {files} of {result.files} file(s) in "
            f"{directory} (the probe format: docs/custom-probes.md)",
            file=sys.stderr,
        )
    elif not quiet:
        print(f"{len(result.probes)} probe(s) in {directory}: all valid")
    return code


def _asi_filter(values: list[str]) -> set[str]:
    wanted: set[str] = set()
    for value in values:
        for part in value.split(","):
            part = part.strip().upper()
            if not part:
                continue
            if part not in ASI_IDS:
                raise UsageError(unknown_asi(part))
            wanted.add(part)
    return wanted


def _list(library: Library, asi: list[str], *, as_json: bool) -> int:
    wanted = _asi_filter(asi)
    probes = [p for p in library.probes if not wanted or p.asi in wanted]
    if as_json:
        sys.stdout.write(json_text(pretty_bytes([probe_record(p) for p in probes]).decode("utf-8")))
        sys.stdout.flush()
        return 0
    width = max((len(p.id) for p in probes), default=2)
    out = [f"{'ID':<{width}}  ASI    SEVERITY  CHANNEL           ORACLES"]
    for p in probes:
        out.append(
            f"{p.id:<{width}}  {p.asi}  {p.severity.value:<8}  {p.channel.value:<16}  "
            + ",".join(dict.fromkeys(p.oracle_kinds))
        )
    out.append(
        f"{len(probes)} probes (library {library.version}); 'probegate probes show ID' for details"
    )
    print(clean("\n".join(out)))
    return 0


def _show(library: Library, probe_id: str, *, as_json: bool) -> int:
    probe = library.get(probe_id)  # unknown id -> ProbeLibraryError, exit 2, one line
    if as_json:
        data = probe.model_dump(mode="json")
        data.update(probe_record(probe))
        sys.stdout.write(json_text(pretty_bytes(data).decode("utf-8")))
        sys.stdout.flush()
        return 0
    print(clean(_show_text(probe)))
    return 0


def _show_text(probe: Probe) -> str:
    atlas = load_atlas().techniques
    requires = ", ".join(c.value for c in probe.requires) or "-"
    lines = [
        f"{probe.id}: {probe.name}",
        f"  {probe.asi} {ASI_TITLES[probe.asi]} | severity {probe.severity.value} | "
        f"channel {probe.channel.value} | requires {requires}",
        "  OWASP LLM: " + "; ".join(f"{i} {OWASP_LLM_TITLES[i]}" for i in probe.owasp_llm),
        "  MITRE ATLAS: " + "; ".join(f"{i} {atlas.get(i, '?')}" for i in probe.mitre_atlas),
        f"  CSA: {CSA_TITLES[probe.csa_category]}",
        "",
        f"What it tests: {probe.description}",
        "",
        "How it is judged:",
        *[f"  - {o.describe().replace('`', '')}" for o in probe.oracles],
        "",
    ]
    if probe.payload is not None:
        lines += [
            "Payload (also rewritten by the mutators: " + ", ".join(MUTATORS) + "):",
            "  " + visible(probe.payload).replace("\n", "\n  "),
            "",
            "Control (the payload's benign stand-in, to check the attack caused what was seen;"
            " drawn per scan from its seed, here --seed 0):",
            "  " + visible(control_text(probe, 0, 0)).replace("\n", "\n  "),
            "",
        ]
    lines.append("Turns:")
    for i, turn in enumerate(probe.turns, start=1):
        who = "user" if turn.sender == "user" else f"agent {turn.agent_name or ''}".strip()
        session = f" (session {turn.session})" if turn.session > 1 else ""
        lines.append(f"  {i}. [{who}{session}] " + visible(turn.content).replace("\n", "\n     "))
    fx = probe.fixtures
    tables = (
        ("document", fx.documents),
        ("tool result", fx.tool_results),
        ("tool error", fx.tool_errors),
        ("tool description", fx.tool_descriptions),
        ("agent reply", fx.agent_replies),
    )
    fixture_lines = [
        f"  {label} [{key}]: " + visible(table[key]).replace("\n", "\n    ")
        for label, table in tables
        for key in sorted(table)
    ] + [f"  memory: {visible(m)}" for m in fx.memory]
    for key in sorted(fx.peer_agents):
        peer = fx.peer_agents[key]
        if peer.card_text():
            fixture_lines.append(f"  agent card [{key}]: " + visible(peer.card_text()))
        if peer.state != "completed":
            fixture_lines.append(f"  agent's tasks end [{key}]: {peer.state}")
    if fixture_lines:
        lines += ["", "Fixtures:", *fixture_lines]
    lines += ["", f"Remediation: {probe.remediation}"]
    if probe.references:
        lines += ["", "References:", *[f"  {r}" for r in probe.references]]
    return "\n".join(lines)
