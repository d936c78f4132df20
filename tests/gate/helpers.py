"""Report builders for the gate tests: scans with resisted probes, authority and suppressions.

``tests.factories`` builds the findings; these add what a comparison needs to tell "fixed" from
"not re-judged" (resisted results) and what ``--fail-under`` reads (authority).
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import cache

from probegate.models.report import Authority, Finding, ProbeResult, ScanReport, Suppression
from probegate.models.taxonomy import ASI_IDS, Severity
from tests.factories import make_finding, make_report

SEVERITIES = (Severity.LOW, Severity.MEDIUM, Severity.HIGH, Severity.CRITICAL)


@cache
def finding(index: int, severity: Severity = Severity.HIGH, asi: str = "ASI01") -> Finding:
    """One synthetic finding per (index, severity, asi); cached because hypothesis asks often.

    Findings are never mutated by the code under test (it copies), so sharing them is safe,
    and a test that mutated one would be caught by the purity tests.
    """
    return make_finding(index, severity=severity, asi=asi)


def probe_of(index: int, asi: str = "ASI01") -> str:
    return f"{asi.lower()}.synthetic-{index}.v1"


def suppressed(f: Finding, reason: str = "accepted") -> Finding:
    return f.model_copy(update={"suppressed": Suppression(reason=reason)})


def scan(
    findings: Iterable[Finding] = (),
    *,
    resisted: Iterable[str] = (),
    unjudged: Iterable[str] = (),
    mode: str = "fast",
    aivss: int = 42,
    library: str = "2026.11.1",
    band: str = "POOR",
    asi_scores: dict[str, float] | None = None,
) -> ScanReport:
    """A report whose results list the findings' probes as vulnerable plus the given probes as
    resisted or unjudged, like a real scan that ran all of them."""

    found = list(findings)
    report = make_report(found, mode=mode)
    extra = [
        ProbeResult(
            probe_id=pid,
            name=pid,
            asi="ASI01",
            severity=Severity.HIGH,
            channel="user",
            outcome="resisted",
            attempts=1,
            resisted=1,
        )
        for pid in resisted
    ] + [
        ProbeResult(
            probe_id=pid,
            name=pid,
            asi="ASI01",
            severity=Severity.HIGH,
            channel="user",
            outcome="unjudged",
            attempts=1,
            unjudged=1,
            reason="timeout",
        )
        for pid in unjudged
    ]
    return report.model_copy(
        update={
            "results": report.results + extra,
            "aivss": aivss,
            "probe_library_version": library,
            "band": band,
            "asi_scores": asi_scores if asi_scores is not None else dict.fromkeys(ASI_IDS, 50.0),
        }
    )


def authoritative(report: ScanReport) -> ScanReport:
    """The same report as a full, authoritative scan."""
    return report.model_copy(
        update={
            "mode": "full",
            "mode_authoritative": True,
            "scoring_valid": True,
            "evaluation_mode": "real",
            "authority": Authority(authoritative=True),
        }
    )
