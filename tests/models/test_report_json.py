"""The stored-report reader's one pass (models/report_json.py) against reading the file whole.

The one pass reads a report a piece of the file at a time and validates its findings and
results as it goes. It must return exactly what the whole read returns (the same models, the
same sets of given fields) or nothing, leaving the file to the whole read, which refuses it with
its one message or maps it (tests/models/test_stored.py: every reading command, every refusal).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from probegate.canonical import pretty_bytes
from probegate.errors import ReportError
from probegate.files import open_bounded, read_bytes
from probegate.models import report_json, stored
from probegate.models.bounds import Cut
from probegate.models.report import FindingControl, ScanReport
from probegate.models.stored import load_report, parse_report, parse_report_json
from probegate.models.transcript import GuardCheck, GuardFinding, ToolCall, Turn, TurnGuard
from probegate.reports import json_report
from tests.factories import make_finding, make_report
from tests.models.test_stored import BAD, UPSTREAM, _malformed_comparison

GOLDEN = Path(__file__).parents[1] / "data" / "golden" / "scan.json"


def _whole(raw: bytes) -> ScanReport:
    return stored.report_from_data(parse_report_json(raw, "x"), source="x")


def _one_pass(raw: bytes, *, transcripts: bool = True, evidence: bool = True) -> ScanReport | None:
    return stored._one_pass(iter_read(raw), transcripts, evidence)


def iter_read(raw: bytes) -> Any:
    view = memoryview(raw)
    at = 0

    def read(size: int) -> bytes:
        nonlocal at
        piece = bytes(view[at : at + size])
        at += len(piece)
        return piece

    return read


def _models(value: Any, path: str = "report") -> Iterator[tuple[str, BaseModel]]:
    if isinstance(value, BaseModel):
        yield path, value
        for name in type(value).model_fields:
            yield from _models(getattr(value, name), f"{path}.{name}")
    elif isinstance(value, list | tuple):
        for i, item in enumerate(value):
            yield from _models(item, f"{path}.{i}")
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _models(item, f"{path}.{key}")


def _assert_same(got: ScanReport, expected: ScanReport) -> None:
    assert got == expected
    assert got.to_dict() == expected.to_dict()
    pairs = zip(_models(got), _models(expected), strict=True)
    for (path, model), (_, other) in pairs:
        assert set(model.model_fields_set) == set(other.model_fields_set), path


def _guarded_finding() -> Any:
    """A finding whose transcript holds what a guarded, cut-short agent leaves: guard checks,
    refused calls, cut records, and text from all over Unicode."""
    finding = make_finding(3, agent_text="naïve “quotes” 😀 \u2028 \x1b[31m")
    assert finding.transcript is not None
    check = GuardCheck(
        stage="tool_call",
        decision="block",
        action="dropped",
        findings=[GuardFinding(category="exfil", score=0.5, subject="😀 x")],
        latency_ms=1.25,
    )
    refused = ToolCall(name="wire", arguments={"to": ["a", {"b": [1.5, None, True]}]})
    turn = Turn(
        role="assistant",
        content="x",
        tool_calls=[ToolCall(name="t", arguments={"k": "v" * 10}, guard=[check])],
        guard=TurnGuard(checks=[check], refused_calls=[refused]),
        cuts=[Cut(field="content", length=99, kept=1, sha256="ab")],
    )
    transcript = finding.transcript.model_copy(update={"turns": [*finding.transcript.turns, turn]})
    control = FindingControl(
        attempt_id="a-1", outcome="resisted", summary="none", transcript=transcript
    )
    return finding.model_copy(update={"transcript": transcript, "control": control})


def _reports() -> dict[str, bytes]:
    report = make_report([make_finding(1), _guarded_finding(), make_finding(2)])
    empty = make_report([])
    data = report.to_dict()
    return {
        "golden scan": GOLDEN.read_bytes(),
        "guarded": json_report.render(report),
        "no findings": json_report.render(empty),
        # What other writers make of the same report: ASCII escapes (surrogate pairs for
        # characters beyond the BMP), another layout, keys in another order.
        "ensure_ascii": json.dumps(data).encode(),
        "indented": json.dumps(data, indent=3, ensure_ascii=False).encode(),
        "reversed keys": json.dumps(dict(reversed(data.items())), ensure_ascii=False).encode(),
    }


REPORTS = _reports()


@pytest.mark.parametrize("name", list(REPORTS))
@pytest.mark.parametrize("chunk", [1, 7, 4096, report_json.CHUNK_BYTES])
def test_a_report_is_read_in_one_pass_equal_to_the_whole_read(
    monkeypatch: pytest.MonkeyPatch, name: str, chunk: int
) -> None:
    # Pieces of one byte cut every number, string, escape and UTF-8 sequence somewhere.
    monkeypatch.setattr(report_json, "CHUNK_BYTES", chunk)
    raw = REPORTS[name]
    got = _one_pass(raw)
    assert got is not None
    _assert_same(got, _whole(raw))


def test_load_report_never_reads_a_probegate_report_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def whole(*args: object, **kwargs: object) -> None:
        raise AssertionError("read whole")

    monkeypatch.setattr(stored, "parse_report_json", whole)
    for name, raw in REPORTS.items():
        path = tmp_path / f"{len(name)}.json"
        path.write_bytes(raw)
        assert load_report(path).scan_id
        assert parse_report(raw, source="x").scan_id


_TEXT = st.text(st.characters(exclude_categories=["Cs"]), max_size=40)
_JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**62), 2**62) | _TEXT,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_TEXT, inner, max_size=3),
    max_leaves=12,
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    texts=st.lists(_TEXT, min_size=1, max_size=4),
    arguments=st.dictionaries(_TEXT, _JSON, max_size=4),
    coverage=st.dictionaries(_TEXT, _JSON, max_size=3),
    ascii_only=st.booleans(),
    chunk=st.sampled_from([1, 3, 64, 1 << 20]),
)
def test_generated_reports_read_the_same_in_one_pass(
    texts: list[str],
    arguments: dict[str, Any],
    coverage: dict[str, Any],
    ascii_only: bool,
    chunk: int,
) -> None:
    findings = []
    for i, text in enumerate(texts):
        finding = make_finding(i, agent_text=text)
        assert finding.transcript is not None
        call = ToolCall(name=text or "t", arguments=arguments, result=text)
        turn = Turn(role="assistant", content=text, tool_calls=[call])
        transcript = finding.transcript.model_copy(
            update={"turns": [*finding.transcript.turns, turn]}
        )
        findings.append(finding.model_copy(update={"transcript": transcript, "summary": text}))
    report = make_report(findings).model_copy(update={"coverage": coverage})
    raw = json.dumps(report.to_dict(), ensure_ascii=ascii_only).encode()
    original = report_json.CHUNK_BYTES
    report_json.CHUNK_BYTES = chunk
    try:
        got = _one_pass(raw)
    finally:
        report_json.CHUNK_BYTES = original
    assert got is not None
    _assert_same(got, _whole(raw))


def _bad_files(tmp_path: Path) -> dict[str, bytes]:
    good = json_report.render(make_report([make_finding(1)]))
    text = good.decode()
    (tmp_path / "good.json").write_bytes(good)
    files = {name: build(tmp_path) for name, (build, _) in BAD.items()}
    data = json.loads(text)
    data["findings"][0]["transcript"]["turns"][0]["role"] = "robot"
    files["an invalid transcript"] = json.dumps(data).encode()
    data = json.loads(text)
    data["results"][0]["attempts"] = "many"
    files["an invalid result"] = json.dumps(data).encode()
    files["a malformed comparison"] = _malformed_comparison(tmp_path)
    files["text after the object"] = good + b" {}"
    files["a byte that is not UTF-8"] = good.replace(b"Synthetic", b"Synth\xfftic", 1)
    files["a BOM"] = b"\xef\xbb\xbf" + good
    files["another schema"] = text.replace("probegate-scan-v1", "probegate-scan-v9").encode()
    files["a duplicate key in a finding"] = text.replace(
        '"asi":', '"asi":"ASI01","asi":', 1
    ).encode()
    files["a duplicate list"] = text.replace('"findings":', '"results":[],"findings":', 1).encode()
    files["the upstream schema"] = UPSTREAM.read_bytes()
    files["a list"] = b"[]"
    files["nothing"] = b""
    return files


@pytest.mark.parametrize("chunk", [5, report_json.CHUNK_BYTES])
def test_the_one_pass_leaves_every_other_file_to_the_whole_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, chunk: int
) -> None:
    monkeypatch.setattr(report_json, "CHUNK_BYTES", chunk)
    for name, raw in _bad_files(tmp_path).items():
        assert _one_pass(raw) is None, name
        assert _one_pass(raw, transcripts=False) is None, name
        assert _one_pass(raw, transcripts=False, evidence=False) is None, name


def test_the_depth_limit_holds_in_the_one_pass_at_every_level() -> None:
    data = make_report([make_finding(1)]).to_dict()
    for deep, refused in ((report_json.MAX_DEPTH, False), (report_json.MAX_DEPTH + 1, True)):
        # The report (1), findings (2), the finding (3), its transcript (4), turns (5), the
        # turn (6), tool_calls (7), the call (8), arguments (9): nested lists below them.
        turn = data["findings"][0]["transcript"]["turns"][1]
        turn["tool_calls"][0]["arguments"] = {"deep": "@"}
        nested = "[" * (deep - 9) + "]" * (deep - 9)
        raw = json.dumps(data).replace('"@"', nested).encode()
        with pytest.raises(ReportError, match="nested more than") if refused else _no_error():
            parse_report(raw, source="x")
        assert (_one_pass(raw) is None) is refused


class _no_error:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


def test_without_transcripts_every_transcript_is_validated_then_let_go(tmp_path: Path) -> None:
    raw = REPORTS["guarded"]
    full = _one_pass(raw)
    light = _one_pass(raw, transcripts=False)
    assert full is not None and light is not None
    assert all(f.transcript is None for f in light.findings)
    assert all(f.control is None or f.control.transcript is None for f in light.findings)
    stripped = [
        f.model_copy(
            update={
                "transcript": None,
                "control": f.control and f.control.model_copy(update={"transcript": None}),
            }
        )
        for f in full.findings
    ]
    assert light == full.model_copy(update={"findings": stripped})
    # As strict as ever: an invalid transcript is refused, with the whole read's message.
    bad = tmp_path / "bad.json"
    bad.write_bytes(_bad_files(tmp_path)["an invalid transcript"])
    with pytest.raises(ReportError, match=r"findings\[0\]\.transcript\.turns\[0\]\.role"):
        load_report(bad, transcripts=False)
    # A file read whole (an upstream report) comes without transcripts too.
    assert load_report(UPSTREAM, transcripts=False).findings


def test_for_a_comparison_evidence_is_validated_then_let_go_too(tmp_path: Path) -> None:
    """compare and scan --baseline read two reports for their findings' fingerprints and
    counts: each finding's and control's evidence is read as strictly, then dropped."""
    raw = REPORTS["guarded"]
    full = _one_pass(raw)
    lean = _one_pass(raw, transcripts=False, evidence=False)
    assert full is not None and lean is not None
    assert any(f.evidence for f in full.findings)
    lean_parts = {
        "transcript": None,
        "evidence": [],
    }
    expected = [
        f.model_copy(
            update={**lean_parts, "control": f.control and f.control.model_copy(update=lean_parts)}
        )
        for f in full.findings
    ]
    assert lean == full.model_copy(update={"findings": expected})
    data = json.loads(raw)
    data["findings"][0]["evidence"] = [{"kind": 7}]
    bad = tmp_path / "bad.json"
    bad.write_bytes(json.dumps(data).encode())
    with pytest.raises(ReportError, match=r"findings\[0\]\.evidence"):
        load_report(bad, transcripts=False, evidence=False)
    assert not any(f.evidence for f in load_report(UPSTREAM, evidence=False).findings)


def test_a_read_reports_models_share_their_sets_of_fields_and_are_read_only() -> None:
    report = _one_pass(REPORTS["guarded"])
    assert report is not None
    first, second = report.findings[0], report.findings[2]
    assert first.model_fields_set is second.model_fields_set
    assert first.evidence[0].model_fields_set is second.evidence[0].model_fields_set
    with pytest.raises(TypeError, match="read-only"):
        first.summary = "changed"
    # model_copy, the way reports are changed, copies the set and leaves the others alone.
    changed = first.model_copy(update={"summary": "changed"})
    assert changed.summary == "changed" and "summary" in changed.model_fields_set
    assert second.summary != "changed" and second.model_fields_set == first.model_fields_set
    deep = first.model_copy(deep=True)
    deep.summary = "changed too"  # a deep copy is the caller's own
    assert first.summary != "changed too"


def test_a_file_read_a_piece_at_a_time_is_refused_as_read_bytes_refuses_it(tmp_path: Path) -> None:
    path = tmp_path / "big.json"
    path.write_bytes(b"x" * 100)
    with pytest.raises(ReportError) as whole:
        read_bytes(path, what="report file", error=ReportError, max_bytes=99)
    with (
        pytest.raises(ReportError) as pieces,
        open_bounded(path, what="report file", error=ReportError, max_bytes=99) as read,
    ):
        while read(7):
            pass
    assert pieces.value.message == whole.value.message
    assert "larger than" in pieces.value.message
    for missing in (tmp_path / "none.json", tmp_path):
        with pytest.raises(ReportError) as whole:
            read_bytes(missing, what="report file", error=ReportError, max_bytes=99)
        with (
            pytest.raises(ReportError) as pieces,
            open_bounded(missing, what="report file", error=ReportError, max_bytes=99),
        ):
            pass
        assert pieces.value.message == whole.value.message


def test_pretty_bytes_reports_read_back_byte_for_byte() -> None:
    raw = REPORTS["guarded"]
    report = _one_pass(raw)
    assert report is not None
    assert json_report.render(report) == raw
    assert pretty_bytes(report.to_dict()) == pretty_bytes(_whole(raw).to_dict())
