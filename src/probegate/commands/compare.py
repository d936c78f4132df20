"""`probegate compare BASELINE CURRENT`: what changed between two scans; exit 1 on regression.

Only wiring: read both reports, optionally re-apply a suppression file to CURRENT, call
:func:`probegate.baseline.compare`, render, write, return the exit code. The exit code depends on
the comparison alone, never on ``--output`` or ``--write-baseline``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import sys
from pathlib import Path
from typing import Any

from probegate.baseline import compare, write_baseline
from probegate.canonical import pretty_bytes
from probegate.commands.flags import any_case
from probegate.errors import ExitCode, ReportError
from probegate.files import write_atomic
from probegate.models.comparison import Comparison
from probegate.models.stored import load_report
from probegate.reports.diff_markdown import render_diff
from probegate.reports.diff_text import render_text
from probegate.suppressions import apply_suppressions, load_suppressions
from probegate.terminal import Style, json_text


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "compare",
        help="new / fixed / persisting findings and score deltas; exit 1 on regression",
        description=(
            "Compare a scan report with a baseline report. Findings are matched by fp. "
            "Exit 1 on a regression (a new unsuppressed finding, or an AIVSS drop larger than "
            "--tolerance), 0 otherwise, 2 on bad input."
        ),
    )
    p.add_argument("baseline", type=Path, metavar="BASELINE", help="baseline scan.json")
    p.add_argument("current", type=Path, metavar="CURRENT", help="current scan.json")
    p.add_argument(
        "--tolerance",
        type=float,
        default=0.0,
        metavar="X",
        help="AIVSS points the score may drop without a regression (default 0)",
    )
    p.add_argument(
        "--allow-mismatch",
        action="store_true",
        help="compare scans of different probe-library versions or modes (common probes only)",
    )
    p.add_argument(
        "--output",
        choices=("text", "md", "json"),
        default="text",
        type=any_case,
        help="text: aligned, for a terminal (default); md: Markdown, as in the job summary; "
        "json: the comparison as canonical JSON",
    )
    p.add_argument(
        "--output-path", type=Path, metavar="P", help="write the output here instead of stdout"
    )
    p.add_argument(
        "--write-baseline",
        type=Path,
        metavar="PATH",
        help="copy CURRENT to PATH as the new baseline (the exit code still reports regressions)",
    )
    p.add_argument(
        "--suppressions",
        type=Path,
        metavar="FILE",
        help="re-apply this suppression file to CURRENT as of today "
        "(default: keep the suppressions recorded in CURRENT)",
    )


def run(args: argparse.Namespace) -> int:
    comparison = _compare(args)
    if args.output == "json" or args.json:
        text = json_text(pretty_bytes(comparison.to_dict()).decode("utf-8"))
    elif args.output == "md":
        text = render_diff(comparison)
    else:  # colour only on a terminal, never in a file
        to_file = args.output_path is not None
        text = render_text(comparison, Style(sys.stdout, enabled=False if to_file else None))

    if args.output_path is not None and not args.json:
        write_atomic(args.output_path, text, error=ReportError)
        decision = "regression" if comparison.regression else "no regression"
        print(f"probegate compare: {decision}; wrote {args.output_path}")
    else:
        sys.stdout.write(text)
    if args.write_baseline is not None:
        write_baseline(args.current, args.write_baseline)
        if not args.quiet:
            print(f"probegate compare: wrote baseline {args.write_baseline}", file=sys.stderr)
    return ExitCode.GATE_FAILED if comparison.regression else ExitCode.PASSED


def _compare(args: argparse.Namespace) -> Comparison:
    """The comparison of the two reports, which are let go before it is rendered.

    A comparison shows no transcript: each is read and validated, then let go at once, so two
    10,000-finding reports fit where one with its transcripts did.
    """
    baseline = load_report(args.baseline, transcripts=False, evidence=False)
    current = load_report(args.current, transcripts=False, evidence=False)
    if args.suppressions is not None:
        entries = load_suppressions(args.suppressions, explicit=True)
        current = apply_suppressions(current, entries, dt.date.today())
    return compare(baseline, current, tolerance=args.tolerance, allow_mismatch=args.allow_mismatch)
