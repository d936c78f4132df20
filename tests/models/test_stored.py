"""The one stored-report reader, seen through every command that reads a report.

``report``, ``verify``, ``compare`` (either side), ``scan --baseline`` and ``merge`` read the
same file the same way: a file refused by one is refused by all (exit 2, one line naming the
file, never a traceback), and an ``agentguardian-scan-v1`` report is read by all. The GitHub
Action's ``finish`` reads the scan's report through the same reader.
"""

from __future__ import annotations

import gc
import io
import json
from collections.abc import Callable
from pathlib import Path

import pytest

from probegate.cli import main
from probegate.errors import ReportError
from probegate.github.finish import FinishOptions, finish
from probegate.models.bounds import DEPTH_MAX
from probegate.models.stored import MAX_DEPTH, load_report, parse_report, parse_report_json
from probegate.models.transcript import ToolCall
from probegate.reports import json_report
from probegate.reports.signing import generate_key_pair, sign_report
from tests.factories import make_finding, make_report, scan, with_categories

UPSTREAM = Path(__file__).parents[1] / "data" / "agentguardian_report.json"
SECRET = "test-secret-0123456789abcdef"

Command = Callable[[Path, Path], list[str]]


def _good(tmp_path: Path) -> Path:
    path = tmp_path / "good.json"
    path.write_bytes(json_report.render(make_report([make_finding(1)])))
    return path


# Every way a stored report is read from the command line: (name, argv for the file under test,
# given a valid report and a scratch directory).
READERS: dict[str, Command] = {
    "report": lambda bad, good: ["report", str(bad), "--output", "md", "--output-path", "-"],
    "verify": lambda bad, good: ["verify", str(bad)],
    "compare BASELINE": lambda bad, good: ["compare", str(bad), str(good)],
    "compare CURRENT": lambda bad, good: ["compare", str(good), str(bad)],
    "scan --baseline": lambda bad, good: [
        "scan",
        "demo",
        "--quiet",
        "--no-sign",
        "--baseline",
        str(bad),
        "--store",
        str(good.parent / "store"),
        "--output-dir",
        str(good.parent / "out"),
    ],
    "merge": lambda bad, good: ["merge", str(bad), "--output-dir", str(good.parent / "merged")],
}


def _text(tmp_path: Path) -> str:
    return _good(tmp_path).read_text(encoding="utf-8")


def _duplicate_key(tmp_path: Path) -> bytes:
    # A second "aivss" before the real one: parsers disagree on which copy wins.
    text = _text(tmp_path)
    assert text.startswith("{")
    return ('{"aivss": 99,' + text[1:]).encode()


def _huge_number(tmp_path: Path) -> bytes:
    data = json.loads(_text(tmp_path))
    data["cost_usd"] = 12345.5
    text = json.dumps(data)
    assert text.count("12345.5") == 1
    return text.replace("12345.5", "1e999").encode()


def _nested(depth: int) -> Callable[[Path], bytes]:
    def build(tmp_path: Path) -> bytes:
        data = json.loads(_text(tmp_path))
        data["coverage"] = {"deep": "@"}
        text = json.dumps(data)
        return text.replace('"@"', "[" * depth + "]" * depth).encode()

    return build


def _malformed_comparison(tmp_path: Path) -> bytes:
    data = json.loads(_text(tmp_path))
    data["comparison"] = {"regression": "maybe", "new": [{"fp": 1}]}
    return json.dumps(data).encode()


def _lone_surrogate(tmp_path: Path) -> bytes:
    # Valid JSON, but half a character: every format would fail to write it (exit 4 before).
    data = json.loads(_text(tmp_path))
    data["findings"][0]["summary"] = "@"
    return json.dumps(data).replace('"@"', '"half \\ud800 a pair"').encode()


BAD: dict[str, tuple[Callable[[Path], bytes], str]] = {
    "duplicate key": (_duplicate_key, "duplicate key 'aivss'"),
    "1e999": (_huge_number, "too large"),
    "NaN": (lambda tmp: _text(tmp).replace('"cost_usd": 0.0', '"cost_usd": NaN').encode(), "NaN"),
    "nested past the limit": (_nested(MAX_DEPTH + 10), f"nested more than {MAX_DEPTH} deep"),
    "nested past the recursion limit": (_nested(100_000), f"nested more than {MAX_DEPTH} deep"),
    "lone surrogate": (_lone_surrogate, "half of a surrogate pair"),
}


def _one_line_exit_2(argv: list[str], path: Path, capsys: pytest.CaptureFixture[str]) -> str:
    capsys.readouterr()
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {path}"), err[:300]
    assert err.count("\n") == 1 and "Traceback" not in err and "internal error" not in err
    return err


@pytest.mark.parametrize("reader", list(READERS))
@pytest.mark.parametrize("bad", list(BAD))
def test_every_reading_command_refuses_the_same_bad_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], reader: str, bad: str
) -> None:
    good = _good(tmp_path)
    build, message = BAD[bad]
    path = tmp_path / "bad.json"
    path.write_bytes(build(tmp_path))
    err = _one_line_exit_2(READERS[reader](path, good), path, capsys)
    assert message in err
    assert not (tmp_path / "store").exists()  # --baseline is read before anything runs


@pytest.mark.parametrize("reader", ["report", "compare BASELINE", "compare CURRENT"])
def test_a_malformed_comparison_is_exit_2_not_a_bug(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], reader: str
) -> None:
    good = _good(tmp_path)
    path = tmp_path / "bad.json"
    path.write_bytes(_malformed_comparison(tmp_path))
    err = _one_line_exit_2(READERS[reader](path, good), path, capsys)
    assert "comparison." in err


@pytest.mark.parametrize("levels", [DEPTH_MAX, 240])
def test_the_limit_admits_everything_probegate_can_write(tmp_path: Path, levels: int) -> None:
    # A tool call keeps arguments DEPTH_MAX levels deep, deeper ones as JSON text (the
    # bounds on agent output), and pydantic writes at most 255 levels below the report:
    # whatever an agent sent, the report reads back.
    finding = make_finding(1)
    call = finding.transcript.turns[1].tool_calls[0]  # type: ignore[union-attr]
    args: dict[str, object] = {}
    node = args
    for _ in range(levels - 1):
        node["a"] = {}
        node = node["a"]  # type: ignore[assignment]
    deep = ToolCall.model_validate({**call.model_dump(), "arguments": args})
    assert (deep.arguments == args) is (levels <= DEPTH_MAX)
    turn = finding.transcript.turns[1].model_copy(update={"tool_calls": [deep]})  # type: ignore[union-attr]
    transcript = finding.transcript.model_copy(  # type: ignore[union-attr]
        update={"turns": [finding.transcript.turns[0], turn]}  # type: ignore[union-attr]
    )
    report = make_report([finding.model_copy(update={"transcript": transcript})])
    path = tmp_path / "deep.json"
    path.write_bytes(json_report.render(report))
    assert load_report(path).to_dict() == report.to_dict()


def _object_nested(depth: int) -> bytes:
    """A JSON object with ``depth`` containers counted from the object itself."""
    inner = depth - 1
    return b'{"a": ' + b"[" * inner + b"]" * inner + b"}"


def test_the_depth_limit_is_exact() -> None:
    assert parse_report_json(_object_nested(MAX_DEPTH)) is not None
    with pytest.raises(ReportError, match=f"nested more than {MAX_DEPTH} deep"):
        parse_report_json(_object_nested(MAX_DEPTH + 1))


# ------------------------------------------------------- upstream (agentguardian-scan-v1) reports


def test_report_re_emits_an_upstream_report(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["report", str(UPSTREAM), "--output", "md", "--output-path", "-"]) == 0
    captured = capsys.readouterr()
    assert "pi.system-leak.v1" in captured.out and "tool.refund-abuse.v1" in captured.out
    assert "note: " in captured.err and "agentguardian-scan-v1" in captured.err


def test_report_json_of_an_upstream_report_reads_back_and_drops_its_signatures(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "again.json"
    assert main(["report", str(UPSTREAM), "--output", "json", "--output-path", str(out)]) == 0
    again = json.loads(out.read_text())
    assert "signatures" not in again  # they signed the original file, not this mapping
    assert load_report(out).findings == load_report(UPSTREAM).findings


def test_verify_checks_a_signed_upstream_report(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    private, public = generate_key_pair()
    data = json.loads(UPSTREAM.read_text())
    signed = sign_report(data, secret=SECRET.encode(), private_key_pem=private)
    path, pub = tmp_path / "upstream.json", tmp_path / "signer.pub"
    path.write_text(json.dumps(signed, indent=2))
    pub.write_bytes(public)
    assert main(["verify", str(path), "--pubkey-file", str(pub), "--secret", SECRET]) == 0
    assert capsys.readouterr().out.splitlines() == [
        "schema: OK (an agentguardian-scan-v1 report, read as probegate-scan-v1)",
        "HMAC-SHA256: OK",
        "Ed25519: OK",
        "trust anchor: PINNED",
    ]


def test_compare_reads_an_upstream_report_on_either_side(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["compare", str(UPSTREAM), str(UPSTREAM)]) == 0
    out = capsys.readouterr().out
    assert "new 0 · new but suppressed 0 · changed 0 (0 worse) · fixed 0 · persisting 2" in out
    assert main(["compare", str(UPSTREAM), str(UPSTREAM), "--output", "md"]) == 0
    assert (
        "New: **0** · new but suppressed: 0 · changed: 0 (0 worse) · fixed: 0 · persisting: 2"
        in capsys.readouterr().out
    )


def test_scan_takes_an_upstream_report_as_its_baseline(
    in_tmp: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["scan", "demo", "--quiet", "--no-sign", "--baseline", str(UPSTREAM)]
    assert main([*argv, "--allow-mismatch"]) == 0
    report = json.loads((in_tmp / "probegate-out" / "scan.json").read_text())
    assert report["comparison"]["baseline"]["schema"] == "agentguardian-scan-v1"
    assert report["comparison"]["common_probes_only"] is True


def test_merge_reads_an_upstream_report_and_refuses_it_as_any_unsharded_report(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    good = _good(tmp_path)  # a probegate report scanned without --shard
    upstream_err = _one_line_exit_2(READERS["merge"](UPSTREAM, good), UPSTREAM, capsys)
    native_err = _one_line_exit_2(READERS["merge"](good, good), good, capsys)
    assert "is not a shard report (it was scanned without --shard)" in upstream_err
    assert upstream_err.replace(str(UPSTREAM), "F") == native_err.replace(str(good), "F")


def test_merge_refuses_a_shard_with_a_duplicate_key(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    shard = make_report([make_finding(1)]).model_copy(update={"shard": "1/1"})
    ok = tmp_path / "s1.json"
    ok.write_bytes(json_report.render(shard))
    assert main(["merge", str(ok), "--quiet", "--output-dir", str(tmp_path / "m")]) == 0
    bad = tmp_path / "s1-dup.json"
    bad.write_text('{"shard": "1/1",' + ok.read_text()[1:])
    assert "duplicate key 'shard'" in _one_line_exit_2(
        ["merge", str(bad), "--output-dir", str(tmp_path / "m2")], bad, capsys
    )


# --------------------------------------------------------------------------- the Action


def test_the_action_reads_scan_json_through_the_same_reader(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "scan.json").write_bytes(_duplicate_key(tmp_path))
    out = io.StringIO()
    env = {"GITHUB_OUTPUT": str(tmp_path / "o"), "GITHUB_WORKSPACE": str(tmp_path)}
    code = finish(FinishOptions(scan_rc=0, compare_rc=None, output_dir=Path("out")), env, out)
    assert code == 4  # a run the Action cannot read is never green
    assert "duplicate key 'aivss'" in out.getvalue()


# --------------------------------------------------------------------------- the reader itself


def test_a_surrogate_pair_escape_is_one_character_and_reads_back(tmp_path: Path) -> None:
    data = json.loads(_text(tmp_path))
    data["findings"][0]["summary"] = "@"
    raw = json.dumps(data).replace('"@"', '"a smile \\ud83d\\ude00"').encode()
    assert parse_report(raw, source="x").findings[0].summary == "a smile \U0001f600"


def test_a_report_reads_back_equal_and_its_json_is_the_signed_object(tmp_path: Path) -> None:
    report = make_report([make_finding(1), make_finding(2)])
    raw = json_report.render(report)
    assert parse_report(raw, source="x") == report
    assert parse_report_json(raw) == report.to_dict()


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        (b"\xff", "not a UTF-8 JSON report"),
        (b"[]", "expected a JSON object, got list"),
        (b'{"a": 1', "invalid JSON at line 1"),
        (b'{"a": Infinity}', "Infinity is not allowed"),
        (b'{"a": -1e400}', "too large"),
        (b'{"a": ' + b"9" * 5000 + b"}", "invalid JSON"),
        (b'{"schema": "other"}', "unsupported report schema 'other'"),
        (b'{"schema": "probegate-scan-v1"}', "invalid report: aivss: Field required (and "),
    ],
)
def test_refusals_name_the_source_and_the_problem(raw: bytes, message: str) -> None:
    with pytest.raises(ReportError) as info:
        parse_report(raw, source="s.json")
    assert info.value.message.startswith("s.json: ") and message in info.value.message


def test_an_mcp_section_from_before_unauthenticated_traffic_was_counted_reads_as_zeros() -> None:
    from probegate.models.sections import McpRejections, McpSummary, McpUnauthenticated

    section = McpSummary(
        conversations=2, calls=3, rejected=McpRejections(), unauthenticated=McpUnauthenticated()
    )
    data = json.loads(json_report.render(make_report().model_copy(update={"mcp": section})))
    del data["mcp"]["unauthenticated"]
    report = parse_report(json.dumps(data).encode(), source="older.json")
    assert report.mcp == section


@pytest.mark.parametrize(
    ("dropped", "named"),
    [
        (("controls",), "controls"),
        (("target", "declared_secrets"), "target.declared_secrets"),
        (("target", "uses_sandbox"), "target.uses_sandbox"),
    ],
)
def test_a_report_older_than_a_field_the_reader_cannot_work_out_is_refused_in_one_line(
    dropped: tuple[str, ...], named: str
) -> None:
    """Its controls and surface are what the scan saw: neither is guessed from the rest of the
    report. Every reading command gives the same line (exit 2)."""
    data = json.loads(json_report.render(make_report()))
    holder = data
    for key in dropped[:-1]:
        holder = holder[key]
    del holder[dropped[-1]]
    with pytest.raises(ReportError) as info:
        parse_report(json.dumps(data).encode(), source="older.json")
    assert info.value.message == (
        f"older.json: a report of an earlier probegate ('0.1.0') without {named}, which this "
        "version cannot work out from it; scan again to read the result with this version"
    )


def test_a_report_from_before_categories_reads_equal_to_one_with_them() -> None:
    """An earlier probegate wrote no ``categories``: the reader works them out from the
    report's scores, undertested list, results and findings, as the scoring gives them, so the
    old report reads equal to the new one (every state, findings and missing evidence)."""
    report = scan(
        [make_finding(1, asi="ASI02")],
        resisted=["asi01.r.v1"],
        unjudged=["asi01.u.v1"],
        asi_scores={"ASI02": 20.0},
    )
    report = with_categories(report.model_copy(update={"undertested": ["ASI01"]}))
    new = json.loads(json_report.render(report))
    assert {s["state"] for s in new["categories"].values()} == {
        "tested",
        "undertested",
        "not_selected",
    }
    assert (new["categories"]["ASI01"]["unjudged"], new["categories"]["ASI02"]["findings"]) == (
        1,
        1,
    )
    old = {key: value for key, value in new.items() if key != "categories"}
    read_old = parse_report(json.dumps(old).encode(), source="older.json")
    assert read_old == parse_report(json.dumps(new).encode(), source="new.json")


def test_a_report_without_a_category_is_invalid_whatever_its_age() -> None:
    data = json.loads(json_report.render(make_report()))
    del data["categories"]["ASI04"]
    with pytest.raises(ReportError, match="every ASI category has its state; missing ASI04"):
        parse_report(json.dumps(data).encode(), source="s.json")


def test_an_upstream_report_gets_all_ten_categories_from_its_own_fields() -> None:
    """agentguardian-scan-v1 has no categories: the reader says them from its scores, its
    undertested list and its findings (it counts no unjudged attempt), and notes it."""
    data = json.loads(UPSTREAM.read_text())
    data["undertested"] = ["ASI07"]
    report = parse_report(json.dumps(data).encode(), source="upstream.json")
    states = {asi: state.state for asi, state in report.categories.items()}
    assert len(states) == 10 and states["ASI07"] == "undertested"
    for asi, score in report.asi_scores.items():
        assert report.categories[asi].score == score and states[asi] == "tested"
    found = {f.asi for f in report.findings}
    assert all(report.categories[asi].findings for asi in found)
    assert all(state.unjudged == 0 for state in report.categories.values())
    assert report.controls.enabled is False
    notes = " ".join(report.import_notes)
    assert "categories were derived" in notes and "surface is not in" in notes


def test_reading_a_report_makes_no_reference_cycle(tmp_path: Path) -> None:
    # load_report sends what it built to the oldest generation unexamined (perf.gc_paused's
    # keeps), where a cycle would wait for a full collection: right only while reading makes
    # none, which this holds it to.
    path = tmp_path / "five.json"
    path.write_bytes(json_report.render(make_report([make_finding(i) for i in range(5)])))
    gc.collect()
    flags = gc.get_debug()
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        report = load_report(path)
        assert len(report.findings) == 5
        del report
        gc.collect()
        cycles = list(gc.garbage)
    finally:
        gc.set_debug(flags)
        gc.garbage.clear()
    assert cycles == []
