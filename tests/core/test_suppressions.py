"""The suppression file: parsing at the edge, and applying it to a report as of a given day."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from probegate.errors import UsageError
from probegate.models.report import Suppression
from probegate.models.taxonomy import Severity
from probegate.suppressions import (
    DEFAULT_SUPPRESSIONS_FILE,
    SuppressionEntry,
    apply_suppressions,
    load_suppressions,
    parse_suppressions,
)
from tests.factories import finding, scan

TODAY = dt.date(2026, 6, 1)


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "supp.yml"
    path.write_text(text, encoding="utf-8")
    return path


def test_valid_file_is_parsed_with_optional_expiry(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        "suppressions:\n"
        '  - fp: "aaa"\n'
        '    reason: "accepted: refunds need manager approval downstream"\n'
        "    expires: 2027-03-31\n"
        "  - fp: bbb\n"
        "    reason: known\n"
        '    expires: "2027-04-01"\n'
        "  - fp: ccc\n"
        "    reason: forever\n",
    )
    entries = load_suppressions(path, explicit=True)
    assert [e.fp for e in entries] == ["aaa", "bbb", "ccc"]
    assert entries[0].expires == dt.date(2027, 3, 31)
    assert entries[1].expires == dt.date(2027, 4, 1)
    assert entries[2].expires is None


def test_missing_default_file_means_no_suppressions(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    assert load_suppressions(None, explicit=False) == ()


def test_default_file_is_read_from_the_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / DEFAULT_SUPPRESSIONS_FILE).write_text(
        "suppressions:\n  - {fp: x1, reason: ok}\n", encoding="utf-8"
    )
    assert [e.fp for e in load_suppressions(None, explicit=False)] == ["x1"]


def test_missing_explicit_file_is_a_usage_error(tmp_path: Path) -> None:
    missing = tmp_path / "nope.yml"
    with pytest.raises(UsageError) as info:
        load_suppressions(missing, explicit=True)
    assert str(missing) in info.value.message
    assert "not found" in info.value.message


def test_empty_file_is_no_suppressions(tmp_path: Path) -> None:
    assert load_suppressions(_write(tmp_path, ""), explicit=True) == ()
    assert load_suppressions(_write(tmp_path, "suppressions: []\n"), explicit=True) == ()


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("suppressions: [\n", "invalid YAML"),
        ("- fp: x\n  reason: y\n", "expected a mapping"),
        ("suppresions: []\n", "suppresions"),
        ("suppressions:\n  - {fp: x}\n", "suppressions[0].reason"),
        ("suppressions:\n  - {fp: x, reason: '   '}\n", "reason must not be blank"),
        ("suppressions:\n  - {reason: y}\n", "suppressions[0].fp"),
        ("suppressions:\n  - {fp: 'a b', reason: y}\n", "suppressions[0].fp"),
        ("suppressions:\n  - {fp: x, reason: y, expires: next week}\n", "YYYY-MM-DD"),
        ("suppressions:\n  - {fp: x, reason: y, expires: 2027-03-31T10:00:00}\n", "YYYY-MM-DD"),
        ("suppressions:\n  - {fp: x, reason: y, expires: 1700000000}\n", "YYYY-MM-DD"),
        ("suppressions:\n  - {fp: x, reason: y, owner: me}\n", "suppressions[0].owner"),
        (
            "suppressions:\n  - {fp: x, reason: y}\n  - {fp: x, reason: z}\n",
            "suppressions[1].fp: duplicate fp",
        ),
    ],
)
def test_bad_file_is_one_clear_line_naming_the_file(
    tmp_path: Path, text: str, expected: str
) -> None:
    path = _write(tmp_path, text)
    with pytest.raises(UsageError) as info:
        load_suppressions(path, explicit=True)
    message = info.value.message
    assert message.startswith(f"{path}: ")
    assert expected in message
    assert "\n" not in message
    assert info.value.exit_code == 2


def test_expiry_day_itself_is_still_active() -> None:
    entry = SuppressionEntry(fp="x", reason="y", expires=TODAY)
    assert entry.is_active(TODAY)
    assert not entry.is_active(TODAY + dt.timedelta(days=1))
    assert SuppressionEntry(fp="x", reason="y").is_active(dt.date(9999, 1, 1))


def test_active_suppression_marks_the_finding_and_keeps_it() -> None:
    report = scan([finding(1), finding(2)])
    entries = parse_suppressions(
        f"suppressions:\n  - {{fp: {finding(1).fp}, reason: accepted, expires: 2026-12-31}}\n",
        source="s.yml",
    )
    out = apply_suppressions(report, entries, TODAY)
    assert [f.fp for f in out.findings] == [finding(1).fp, finding(2).fp]
    assert out.findings[0].suppressed == Suppression(reason="accepted", expires="2026-12-31")
    assert out.findings[1].suppressed is None
    assert out.expired_suppressions == []
    assert out.stale_suppressions == []


def test_expired_suppression_counts_again_and_is_reported() -> None:
    report = scan([finding(1)])
    entries = (SuppressionEntry(fp=finding(1).fp, reason="old", expires=dt.date(2026, 5, 31)),)
    out = apply_suppressions(report, entries, TODAY)
    assert out.findings[0].suppressed is None
    assert out.expired_suppressions == [finding(1).fp]
    assert out.stale_suppressions == []


def test_entry_matching_nothing_is_stale_even_when_expired() -> None:
    report = scan([finding(1)])
    entries = (
        SuppressionEntry(fp="0" * 32, reason="gone"),
        SuppressionEntry(fp="1" * 32, reason="gone too", expires=dt.date(2020, 1, 1)),
    )
    out = apply_suppressions(report, entries, TODAY)
    assert out.stale_suppressions == ["0" * 32, "1" * 32]
    assert out.expired_suppressions == []
    assert out.findings[0].suppressed is None


def test_apply_is_pure_and_authoritative() -> None:
    report = scan([finding(1, Severity.CRITICAL)])
    entries = (SuppressionEntry(fp=finding(1, Severity.CRITICAL).fp, reason="ok"),)
    once = apply_suppressions(report, entries, TODAY)
    assert report.findings[0].suppressed is None  # the input is not mutated
    assert apply_suppressions(once, entries, TODAY) == once  # idempotent
    # Re-applying a file without the entry clears the stored marking: the file decides.
    cleared = apply_suppressions(once, (), TODAY)
    assert cleared.findings[0].suppressed is None
    # And an entry that has expired since the scan un-suppresses a stored report.
    expiring = (SuppressionEntry(fp=entries[0].fp, reason="ok", expires=TODAY),)
    stored = apply_suppressions(report, expiring, TODAY)
    assert stored.findings[0].suppressed is not None
    tomorrow = apply_suppressions(stored, expiring, TODAY + dt.timedelta(days=1))
    assert tomorrow.findings[0].suppressed is None
    assert tomorrow.expired_suppressions == [entries[0].fp]


def test_a_suppression_scoped_to_a_target_leaves_other_targets_alone() -> None:
    import datetime as dt

    from probegate.suppressions import apply_suppressions, parse_suppressions
    from tests.reports.samples import golden_report

    report = golden_report()
    finding = report.findings[0]
    ref = report.target.ref
    text = (
        "suppressions:\n"
        f"  - fp: '{finding.fp}'\n    reason: accepted for this agent\n"
        f"    target: '{ref[:3]}*'\n"
        f"  - fp: '{finding.fp}'\n    reason: only for another agent\n"
        "    target: 'http:https://other.example/*'\n"
    )
    entries = parse_suppressions(text, source="s.yml")
    mine = apply_suppressions(report, entries, dt.date(2026, 1, 1))
    marked = next(f for f in mine.findings if f.fp == finding.fp)
    assert marked.suppressed is not None and marked.suppressed.reason == "accepted for this agent"
    assert mine.stale_suppressions == []  # the other agent's entry is not stale here
    other = report.model_copy(
        update={"target": report.target.model_copy(update={"ref": "openai:other@http://x/v1"})}
    )
    theirs = apply_suppressions(other, entries, dt.date(2026, 1, 1))
    assert next(f for f in theirs.findings if f.fp == finding.fp).suppressed is None
    assert next(f for f in theirs.findings if f.fp == finding.fp).fp == finding.fp  # stable
