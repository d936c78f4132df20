"""Join the shard reports of one scan (``--shard K/N``) into the report of the whole scan.

Shards split a plan by probe, so every probe's attempts, result and finding live in exactly one
shard. Merging therefore concatenates per-probe results, findings and unjudged attempts, adds
up the attempt totals, and hands them to :func:`~probegate.engine.assemble.summarise`, the same
function a single scan uses: the merged score is recomputed from the merged evidence, never
averaged, and equals the score of the unsharded scan.

Shards that do not belong together (another library version, mode, seed or target, a shard
missing or given twice, probes in two shards) are refused: a merged report must never claim a
coverage it does not have.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from probegate.engine.assemble import ScanMeta, Tally, summarise
from probegate.errors import UsageError
from probegate.models.causes import CUT_SHORT
from probegate.models.report import Budget, JudgeUsage, ScanReport, StopReason, UnjudgedAttempt
from probegate.models.sections import GuardSummary, McpSummary, PeersSummary, ProxySummary
from probegate.models.shard import Shard, parse_shard
from probegate.models.stored import load_report

# The merged scan stopped for the first of its shards' reasons in this order (every reason).
STOP_ORDER: tuple[StopReason, ...] = (
    StopReason.EARLY_STOP,
    StopReason.CANCELLED,
    StopReason.DEADLINE,
    StopReason.BUDGET,
    StopReason.COMPLETED,
)


def _shard_of(report: ScanReport, source: str) -> Shard:
    if report.shard is None:
        raise UsageError(f"{source} is not a shard report (it was scanned without --shard)")
    try:
        return parse_shard(report.shard)
    except ValueError as exc:
        raise UsageError(f"{source}: shard: {exc}") from None


def check_shards(reports: list[tuple[str, ScanReport]]) -> int:
    """Refuse shards that are not the complete set of one scan; return N."""
    if not reports:
        raise UsageError("merge needs at least one shard report")
    first_source, first = reports[0]
    seen: dict[int, str] = {}
    total: int | None = None
    owner: dict[str, str] = {}
    for source, report in reports:
        k, n = _shard_of(report, source)
        if total is None:
            total = n
        elif n != total:
            raise UsageError(f"{source} is shard {k}/{n}, but {first_source} is one of {total}")
        if k in seen:
            raise UsageError(f"{source} and {seen[k]} are both shard {k}/{n}")
        seen[k] = source
        for label, mine, theirs in (
            ("probe library version", report.probe_library_version, first.probe_library_version),
            ("probegate version", report.package_version, first.package_version),
            ("scoring formula", report.aivss_formula_version, first.aivss_formula_version),
            ("mode", report.mode, first.mode),
            ("seed", str(report.seed), str(first.seed)),
            ("target", report.target.ref, first.target.ref),
            ("target tools", ",".join(report.target.tools), ",".join(first.target.tools)),
        ):
            if mine != theirs:
                raise UsageError(
                    f"{source} is not a shard of the same scan as {first_source}: "
                    f"{label} {mine!r} != {theirs!r}"
                )
        for result in report.results:
            if result.probe_id in owner:
                raise UsageError(
                    f"probe {result.probe_id} is in both {owner[result.probe_id]} and {source}; "
                    "these are not shards of one plan"
                )
            owner[result.probe_id] = source
    assert total is not None
    missing = sorted(set(range(1, total + 1)) - set(seen))
    if missing:
        raise UsageError(
            "missing shard(s) " + ", ".join(f"{k}/{total}" for k in missing) + " of this scan"
        )
    return total


def _evaluation_mode(reports: list[ScanReport]) -> str:
    modes = {r.evaluation_mode for r in reports if r.coverage.get("probes_judged", 0)}
    if not modes:
        return "real"
    if len(modes) == 1:
        return modes.pop()
    return "mixed"


def _budget(reports: list[ScanReport]) -> Budget | None:
    budgets = [r.budget for r in reports if r.budget is not None]
    if not budgets:
        return None
    caps = [b.cap_usd for b in budgets]
    limits = [b.max_requests for b in budgets]
    return Budget(
        cap_usd=None if any(c is None for c in caps) else sum(c or 0.0 for c in caps),
        max_requests=None if any(m is None for m in limits) else sum(m or 0 for m in limits),
        requests_used=sum(b.requests_used for b in budgets),
        soft_stop_fraction=budgets[0].soft_stop_fraction,
        finalise_truncated=any(b.finalise_truncated for b in budgets),
    )


def _judge(shards: list[ScanReport]) -> JudgeUsage | None:
    """The judge's usage over every shard (its cost is already in each shard's cost_usd)."""
    usages = [s.judge for s in shards if s.judge is not None]
    if not usages:
        return None
    total = usages[0]
    for usage in usages[1:]:
        total = total.plus(usage)
    return total


def merge_reports(
    reports: list[tuple[str, ScanReport]], *, library_probe_ids: set[str] | None = None
) -> ScanReport:
    """The report of the whole scan from its shards' reports (``(source, report)`` pairs).

    ``library_probe_ids``: the probes of the full library; the merged scan counts as having
    selected everything (an authority condition) only when it covers all of them. Scores are
    recomputed from the shards' evidence (``summarise``), never averaged.
    """
    check_shards(reports)
    shards = [r for _, r in sorted(reports, key=lambda item: _shard_of(item[1], item[0]).number)]
    first = shards[0]
    results = [r for s in shards for r in s.results]
    unjudged = [u for s in shards for u in s.unjudged]
    tally = _tally(shards, unjudged)
    covered = {r.probe_id for r in results}
    selected = sum(int(s.coverage.get("probes_selected", 0)) for s in shards)
    applicable = sum(int(s.coverage.get("probes_applicable", 0)) for s in shards)
    merged = summarise(
        results,
        [f for s in shards for f in s.findings],
        unjudged,
        tally,
        _meta(shards, tally, library_probe_ids is not None and library_probe_ids <= covered),
        probes_selected=selected,
        probes_not_applicable=selected - applicable,
    )
    return merged.model_copy(update={"package_version": first.package_version, **_sections(shards)})


def _sections(shards: list[ScanReport]) -> dict[str, Any]:
    """What the shards' reports add beside their results: suppressions, and the sections a
    target kind writes (a guard's, the MCP server's, the model proxy's, the A2A peers'), each
    merged."""
    return {
        "stale_suppressions": sorted({x for s in shards for x in s.stale_suppressions}),
        "expired_suppressions": sorted({x for s in shards for x in s.expired_suppressions}),
        "guard": GuardSummary.merged([s.guard for s in shards if s.guard is not None]),
        "mcp": McpSummary.merged([s.mcp for s in shards if s.mcp is not None]),
        "proxy": ProxySummary.merged([s.proxy for s in shards if s.proxy is not None]),
        "peers": PeersSummary.merged([s.peers for s in shards if s.peers is not None]),
    }


def _tally(shards: list[ScanReport], unjudged: list[UnjudgedAttempt]) -> Tally:
    """The shards' counts added up: turns, attacker agents, spend, controls."""
    parts = [s.completeness for s in shards if s.completeness is not None]
    controls = [s.controls for s in shards]
    return Tally(
        completed=sum(c.turns_used for c in parts),
        cut_mid_attempt=sum(1 for u in unjudged if u.cause in CUT_SHORT),
        agents_planned=sum(c.agents_planned for c in parts),
        agents_cut_short=sum(c.agents_cut_short for c in parts),
        cost_usd=sum(s.cost_usd for s in shards),
        tokens=sum(s.tokens_total for s in shards),
        evaluation_mode=_evaluation_mode(shards),
        controls_run=sum(c.run for c in controls),
        same_without_attack=sum(c.same_without_attack for c in controls),
        controls_unjudged=sum(c.unjudged for c in controls),
        stood_without_control=sum(c.stood_without_control for c in controls),
        control_reruns=sum(c.reruns for c in controls),
        controls_failed=sum(c.failed for c in controls),
        attempts_failed=sum(c.attempts_failed for c in controls),
    )


def _meta(shards: list[ScanReport], tally: Tally, selected_all: bool) -> ScanMeta:
    """What the merged report says about the scan: one id for the set of shards, the first
    shard's settings, the longest duration, the earliest stop."""
    first = shards[0]
    planned = sum(c.turns_planned for s in shards if (c := s.completeness) is not None)
    digest = hashlib.sha256(b"merge:" + "|".join(sorted(s.scan_id for s in shards)).encode())
    return ScanMeta(
        scan_id="pg-" + digest.hexdigest()[:12],
        created_at=min(s.created_at for s in shards),
        mode=first.mode,
        seed=first.seed,
        duration_seconds=max(s.duration_seconds for s in shards),
        stopped_reason=min((s.stopped_reason for s in shards), key=STOP_ORDER.index),
        planned=planned,
        cut_short=planned - tally.completed,
        library_version=first.probe_library_version,
        target=first.target,
        engine=first.engine,
        budget=_budget(shards),
        selected_all=selected_all,
        shard=None,
        store_dir="",
        # A shard scanned without controls leaves the merged scan unchecked too.
        controls=all(s.controls.enabled for s in shards),
        judge=_judge(shards),
    )


def load_shards(paths: list[Path]) -> list[tuple[str, ScanReport]]:
    """Read shard reports through the one stored-report reader; merging checks the rest."""
    return [(str(path), load_report(path)) for path in paths]
