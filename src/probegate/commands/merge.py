"""``probegate merge SHARD.json...``: the report of a scan run as ``--shard K/N`` jobs.

The shards' findings and per-probe results are joined and every score is recomputed from them
(:mod:`probegate.engine.shards`); the merged report is signed afresh when signing material is
present, written in the asked formats, and gated like a scan (``--fail-on``, ``--fail-under``).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from probegate.commands.flags import add_flags
from probegate.engine.shards import load_shards, merge_reports
from probegate.gate import evaluate_gates
from probegate.library.loader import load_library
from probegate.models.taxonomy import Severity
from probegate.reports import formats_help, parse_formats, write_outputs
from probegate.reports.headline import out_of_100
from probegate.reports.signing import report_signatures, signing_material
from probegate.scan_flags import GATE_FLAGS, SIGNING_FLAGS
from probegate.terminal import clean, json_text


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "merge",
        help="combine shard reports of one scan into one report",
        description=(
            "Join the scan.json reports of the --shard K/N jobs of one scan. Scores are "
            "recomputed from the merged evidence; shards of different scans are refused."
        ),
    )
    p.add_argument("shards", nargs="+", metavar="SHARD.json", help="scan.json of each shard")
    p.add_argument(
        "--output",
        action="append",
        metavar="FORMATS",
        help=formats_help(),
    )
    p.add_argument(
        "--output-dir",
        dest="output_dir",
        default="probegate-out",
        metavar="DIR",
        help="where the merged report goes (default: probegate-out)",
    )
    add_flags(
        p,
        (*GATE_FLAGS, *SIGNING_FLAGS),
        {
            "fail_under": "exit 1 below SCORE, 3 when the merged scan is not authoritative "
            "(default: none)",
            "fail_on": "exit 1 on a finding at or above: critical, high, medium, low "
            "(default: none)",
            "sign": "require signing (default: sign when signing material is in the environment)",
        },
    )


def run(args: argparse.Namespace) -> int:
    formats = parse_formats(args.output)
    shards = load_shards([Path(p) for p in args.shards])
    library = load_library()
    merged = merge_reports(shards, library_probe_ids={p.id for p in library.probes})
    secret, key_pem = signing_material(args.sign, args.signing_key)
    if secret is not None or key_pem is not None:
        signed = report_signatures(merged.to_fields(), secret=secret, private_key_pem=key_pem)
        merged = merged.model_copy(update={"signatures": signed})
    written = write_outputs(merged, formats, Path(args.output_dir))
    result = evaluate_gates(
        merged,
        fail_under=args.fail_under,
        fail_on=Severity(args.fail_on) if args.fail_on else None,
        comparison=None,
    )
    if args.json:
        summary = {
            "scan_id": merged.scan_id,
            "shards": len(shards),
            "score": merged.aivss,
            "band": merged.band,
            "authoritative": merged.authority.authoritative,
            "findings": len(merged.findings),
            "unjudged": len(merged.unjudged),
            "files": {name: str(path) for name, path in written.items()},
            "gates": list(result.reasons),
            "exit_code": result.exit_code,
        }
        print(json_text(json.dumps(summary, indent=2, sort_keys=True)))
    elif not args.quiet:
        auth = "authoritative" if merged.authority.authoritative else "not authoritative"
        print(
            f"merged {len(shards)} shards: score {out_of_100(merged.aivss)} band {merged.band} "
            f"({merged.mode} mode, {auth}); findings: {len(merged.findings)}; "
            f"unjudged attempts: {len(merged.unjudged)}"
        )
        for name, path in written.items():
            print(f"wrote {name}: {path}")
    for line in result.reasons:
        print(f"gate {clean(line)}", file=sys.stderr)
    return result.exit_code
