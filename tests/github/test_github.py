"""probegate.github: workflow-command escaping, outputs, summary fitting, args, annotations."""

from __future__ import annotations

import io
import os
import re
import shlex
import stat
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from probegate.github import workflow
from probegate.github.annotations import MESSAGE_LIMIT, annotation_file, plan_annotations
from probegate.github.cli import main
from probegate.github.finish import (
    FinishOptions,
    combine_exit_codes,
    finish,
    hand_over,
    workspace_relative,
)
from probegate.github.inputs import ActionError, check_locations, split_args
from probegate.github.summary import fit_summary
from probegate.github.workflow import (
    escape_data,
    escape_property,
    output_entry,
    stop_commands_token,
    workflow_command,
)
from probegate.models.report import Finding, ScanReport, SourceLocation, Suppression
from probegate.models.taxonomy import Severity
from probegate.reports import json_report
from probegate.reports.escape import clean_text
from tests.factories import make_finding, make_report
from tests.github.helpers import parse_github_output, unescape_data, unescape_property

# Text with every character class that matters: %, CR, LF, :, ",", and the escapes themselves.
tricky = st.lists(
    st.one_of(
        st.sampled_from(["%", "\r", "\n", ":", ",", "%25", "%0A", "%0D", "%3A", "%2C", "::", "="]),
        st.characters(codec="utf-8"),
    )
).map("".join)


def _runner_parse(line: str) -> tuple[str, dict[str, str], str]:
    """Parse ``::name k=v,k=v::message`` the way the runner's ActionCommand does."""
    assert line.startswith("::")
    end = line.index("::", 2)
    head, message = line[2:end], line[end + 2 :]
    name, _, props_text = head.partition(" ")
    props: dict[str, str] = {}
    for pair in filter(None, props_text.split(",")):
        key, _, value = pair.partition("=")
        props[key] = unescape_property(value)
    return name, props, unescape_data(message)


# --------------------------------------------------------------------------- escaping


@given(tricky)
def test_escaped_property_has_no_line_break_or_separator_and_round_trips(text):
    escaped = escape_property(text)
    assert not set(escaped) & {"\r", "\n", ":", ","}
    assert unescape_property(escaped) == text


@given(tricky)
def test_escaped_data_has_no_line_break_and_round_trips(text):
    escaped = escape_data(text)
    assert "\r" not in escaped and "\n" not in escaped
    assert unescape_data(escaped) == text


@given(tricky, tricky, st.integers(min_value=1, max_value=10**6), tricky)
def test_a_workflow_command_is_one_line_the_runner_reads_back(file, title, line, message):
    command = workflow_command("error", message, {"file": file, "line": line, "title": title})
    assert len(re.split(r"\r\n|\r|\n", command)) == 1
    assert _runner_parse(command) == (
        "error",
        {"file": clean_text(file), "line": str(line), "title": clean_text(title)},
        clean_text(message),
    )


def test_a_workflow_command_carries_no_bidi_override_or_escape():
    """U+202E from a target's error would make an annotation read backwards."""
    command = workflow_command(
        "error", "HTTP 500: \u202eexe.gnp\u202c \x1b[31mred", {"title": "t\u2066x"}
    )
    assert command == "::error title=tx::HTTP 500: exe.gnp red"


def test_escaping_matches_githubs_examples():
    assert escape_data("100%\nline two\r") == "100%25%0Aline two%0D"
    assert escape_property("a,b:c%") == "a%2Cb%3Ac%25"
    assert workflow_command("error", "m", {"file": "f", "line": None}) == "::error file=f::m"
    assert workflow_command("notice", "m") == "::notice::m"


def test_unescaping_is_one_pass():
    # "%250A" is an escaped "%0A", not an escaped newline.
    assert unescape_data("%250A") == "%0A"
    assert unescape_property("%253A") == "%3A"


def test_stop_commands_token_is_128_random_bits():
    tokens = {stop_commands_token() for _ in range(100)}
    assert len(tokens) == 100
    assert all(re.fullmatch(r"[0-9a-f]{32}", t) for t in tokens)


# --------------------------------------------------------------------------- outputs


@given(st.dictionaries(st.from_regex(r"[a-z][a-z0-9-]{0,20}", fullmatch=True), tricky))
def test_output_entries_read_back_exactly(values):
    text = "".join(output_entry(name, value) for name, value in values.items())
    # What the runner would read; a value that ends in CR is kept verbatim, so compare bytes.
    assert parse_github_output(text) == values


def test_output_entry_delimiter_never_occurs_in_the_value(monkeypatch):
    tokens = iter(["aa", "aa", "bb"])
    monkeypatch.setattr(workflow.secrets, "token_hex", lambda _n: next(tokens))
    entry = output_entry("x", "ghadelimiter_aa")
    assert entry == "x<<ghadelimiter_bb\nghadelimiter_aa\nghadelimiter_bb\n"


def test_output_name_is_checked():
    with pytest.raises(ValueError):
        output_entry("bad\nname", "v")


# --------------------------------------------------------------------------- summary size


@settings(max_examples=200)
@given(
    st.lists(st.text(alphabet=st.sampled_from("ab\né€😀|"), max_size=400), max_size=6),
    st.integers(min_value=0, max_value=2000),
)
def test_fit_summary_never_exceeds_the_limit(parts, limit):
    text, cut = fit_summary(parts, limit)
    size = len(text.encode("utf-8"))
    assert size <= limit
    if sum(len(p.encode("utf-8")) for p in parts) <= limit:
        assert (text, cut) == ("".join(parts), False)
    else:
        assert cut


def test_fit_summary_keeps_small_parts_whole_and_cuts_at_line_ends():
    gate = "> **probegate gate: failed**\n\n"
    big = "".join(f"| row {i} |\n" for i in range(100_000))
    text, cut = fit_summary([gate, big], 1024 * 1024)
    assert cut and text.startswith(gate)
    assert len(text.encode()) <= 1024 * 1024
    body = text[len(gate) :].split("\n\n>")[0]
    assert all(re.fullmatch(r"\| row \d+ \|", line) for line in body.splitlines())


# --------------------------------------------------------------------------- args


def test_split_args_follows_shell_quoting_without_expanding_anything():
    assert split_args("""--probes 'asi01 *' --seed "4 2" a\\ b $(x) `y` $HOME ~ #c""") == [
        "--probes",
        "asi01 *",
        "--seed",
        "4 2",
        "a b",
        "$(x)",
        "`y`",
        "$HOME",
        "~",
        "#c",
    ]
    assert split_args("") == []
    assert split_args("  \n --quiet\n") == ["--quiet"]


@given(st.lists(st.text(st.characters(codec="utf-8", exclude_characters="\0"), min_size=1)))
def test_split_args_inverts_shlex_join(words):
    words = [w for w in words if not w.startswith("--o")]
    assert split_args(shlex.join(words)) == words


@pytest.mark.parametrize(
    "text",
    ["--output sarif", "--output=md", "--output-dir x", "--output-dir=x", "--outp x", "--out x"],
)
def test_split_args_refuses_the_actions_own_flags(text):
    with pytest.raises(ActionError, match="formats and output-dir inputs"):
        split_args(text)


def test_split_args_reports_bad_quoting():
    with pytest.raises(ActionError, match="cannot be split"):
        split_args("--seed 'open")


def test_split_args_command_writes_nul_separated_words(capfdbinary):
    assert main(["split-args"], {"PG_ARGS": "a 'b c' \"d\ne\""}) == 0
    assert capfdbinary.readouterr().out == b"a\0b c\0d\ne\0"


def test_split_args_command_reports_to_a_file(tmp_path, capsys):
    err = tmp_path / "err"
    assert main(["split-args", f"--error-file={err}"], {"PG_ARGS": "'"}) == 2
    assert "cannot be split" in err.read_text()
    assert capsys.readouterr().out == ""


# --------------------------------------------------------------------------- exit codes


@pytest.mark.parametrize(
    ("scan", "compare", "expected"),
    [
        (0, None, 0),
        (1, None, 1),
        (3, None, 3),
        (0, 1, 1),  # a regression fails a scan that passed
        (3, 1, 1),  # a confirmed regression beats an undecided score
        (1, 0, 1),
        (0, 2, 2),  # the baseline could not be compared
        (2, None, 2),
        (4, 1, 4),
        (137, None, 4),  # killed, or anything else probegate never returns
    ],
)
def test_combine_exit_codes(scan, compare, expected):
    assert combine_exit_codes(scan, compare) == expected


# --------------------------------------------------------------------------- annotations


def _finding(i: int, severity: str, **extra: object) -> Finding:
    suppressed = extra.pop("suppressed", None)
    return make_finding(i, severity=Severity(severity)).model_copy(
        update={
            "id": f"PG-{i}",
            "probe_id": f"asi01.p{i:02d}.v1",
            "name": f"finding {i}",
            "summary": f"summary {i}",
            "remediation": "",
            "aivss_severity": extra.pop("aivss_severity", 5.0),
            "location": SourceLocation(path="agent/probegate.yml", line=7),
            "suppressed": Suppression(**suppressed) if isinstance(suppressed, dict) else None,
            **extra,
        }
    )


def _scan(findings: list[Finding]) -> ScanReport:
    return make_report(findings).model_copy(update={"aivss": 10, "band": "CRITICAL"})


def test_annotations_are_capped_per_level_most_severe_first():
    findings = (
        [_finding(i, "high", aivss_severity=7.0) for i in range(8)]
        + [_finding(100 + i, "critical", aivss_severity=9.0) for i in range(5)]
        + [_finding(200 + i, "medium") for i in range(12)]
        + [_finding(300 + i, "low") for i in range(3)]
        + [_finding(400, "critical", suppressed={"reason": "accepted"})]
    )
    plan = plan_annotations(_scan(findings))
    levels = [a.level for a in plan.shown]
    assert levels.count("error") == 10 and levels.count("warning") == 10
    assert levels.count("notice") == 3
    assert plan.totals == {"error": 13, "warning": 12, "notice": 3}
    assert plan.hidden == 5
    errors = [a for a in plan.shown if a.level == "error"]
    assert [a.title for a in errors[:5]] == [
        f"probegate critical: finding {100 + i}" for i in range(5)
    ]
    assert all("PG-400" not in a.message for a in plan.shown)  # suppressed: not gated, not shown
    assert errors[0].file == "agent/probegate.yml" and errors[0].line == 7
    assert (
        errors[0]
        .command()
        .startswith(
            "::error file=agent/probegate.yml,line=7,title=probegate critical%3A finding 100::"
        )
    )


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("agent/probegate.yml", "agent/probegate.yml"),
        ("./agent/x.yml", "agent/x.yml"),
        ("/etc/passwd", None),
        ("../outside.yml", None),
        ("a/../../b", None),
        ("https://example.test/x", None),
        ("", None),
        ("dir\\win.yml", "dir/win.yml"),
    ],
)
def test_annotation_file_is_repo_relative_or_nothing(path, expected):
    assert annotation_file(SourceLocation(path=path, line=1)) == expected


def test_annotation_text_is_cleaned_and_bounded():
    plan = plan_annotations(
        _scan([_finding(1, "high", summary="\x1b[31mred\x1b[0m \u202etxt " + "x" * 5000)])
    )
    (annotation,) = plan.shown
    assert "\x1b" not in annotation.message and "\u202e" not in annotation.message
    assert len(annotation.message) <= MESSAGE_LIMIT


# --------------------------------------------------------------------------- paths and files


def test_workspace_relative(tmp_path):
    ws = tmp_path / "ws"
    assert workspace_relative(ws / "out" / "scan.json", ws) == "out/scan.json"
    assert workspace_relative(ws, ws) == "."
    assert workspace_relative(tmp_path / "elsewhere", ws) is None
    assert workspace_relative(ws / "a" / ".." / ".." / "x", ws) is None


def _chowns(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, int, int]]:
    """As root the handover really changes owners; otherwise record what it would change."""
    calls: list[tuple[str, int, int]] = []
    real = os.chown

    def chown(path, uid, gid, *, follow_symlinks=True):  # type: ignore[no-untyped-def]
        assert follow_symlinks is False
        calls.append((str(path), uid, gid))
        if os.geteuid() == 0:
            real(path, uid, gid, follow_symlinks=False)

    monkeypatch.setattr(os, "chown", chown)
    return calls


def test_hand_over_touches_only_what_the_run_wrote(tmp_path, monkeypatch):
    """Owner, never modes: a committed 0600 key stays 0600 and stays whose it was."""
    outside = tmp_path / "outside"
    outside.write_text("secret")
    outside.chmod(0o600)
    root = tmp_path / "out"
    root.mkdir()
    key = root / "deploy.key"
    key.write_text("PRIVATE")
    key.chmod(0o600)
    since = tmp_path / "since"
    since.write_text("")
    old = since.stat().st_mtime_ns - 10**9
    os.utime(key, ns=(old, old))
    os.utime(since, ns=(old + 1, old + 1))
    (root / "sub").mkdir(mode=0o700)
    (root / "sub" / "journal.jsonl").write_text("x")
    (root / "sub" / "journal.jsonl").chmod(0o600)
    (root / "link").symlink_to(outside)
    calls = _chowns(monkeypatch)
    changed = hand_over(root, since, (os.geteuid() + 1001, 1001))
    changed_paths = {Path(p).name for p, _, _ in calls}
    assert changed == len(calls) and changed_paths == {"out", "sub", "journal.jsonl"}
    assert {(uid, gid) for _, uid, gid in calls} == {(os.geteuid() + 1001, 1001)}
    assert stat.S_IMODE(key.stat().st_mode) == 0o600
    assert stat.S_IMODE((root / "sub" / "journal.jsonl").stat().st_mode) == 0o600
    assert stat.S_IMODE(outside.stat().st_mode) == 0o600
    if os.geteuid() == 0:
        assert (root / "sub" / "journal.jsonl").stat().st_uid == 1001
        assert key.stat().st_uid == 0 and outside.stat().st_uid == 0
    assert hand_over(root, since, (os.geteuid(), os.getegid())) == 0  # already theirs


def test_output_and_store_locations_through_a_symlink_are_refused(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "elsewhere").mkdir()
    check_locations(Path("probegate-out"), Path(".probegate"))  # nothing there yet: fine
    Path("probegate-out").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(ActionError, match="the output-dir probegate-out is a symlink"):
        check_locations(Path("probegate-out"), Path(".probegate"))
    with pytest.raises(
        ActionError, match=r"output-dir probegate-out/r is a symlink \(probegate-out"
    ):
        check_locations(Path("probegate-out/r"), Path(".probegate"))
    Path(".probegate").mkdir()
    Path(".probegate/scans").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(ActionError, match=r"the store \.probegate/scans is a symlink"):
        check_locations(Path("out"), Path(".probegate"))


# --------------------------------------------------------------------------- finish


def _write_scan(directory: Path, findings: list[Finding]) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    report = make_report(findings).model_copy(update={"aivss": 42, "band": "POOR"})
    report = report.model_copy(update={"authority": report.authority.model_copy(
        update={"authoritative": True})})  # fmt: skip
    (directory / "scan.json").write_bytes(json_report.render(report))


def test_finish_writes_outputs_summary_and_annotations(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    _write_scan(tmp_path / "out", [_finding(1, "critical")])
    outputs, summary = tmp_path / "o", tmp_path / "s"
    out = io.StringIO()
    code = finish(
        FinishOptions(scan_rc=1, compare_rc=None, output_dir=Path("out")),
        {"GITHUB_OUTPUT": str(outputs), "GITHUB_STEP_SUMMARY": str(summary),
         "GITHUB_WORKSPACE": str(tmp_path)},
        out,
    )  # fmt: skip
    assert code == 1
    values = parse_github_output(outputs.read_text())
    assert values["json-path"] == "out/scan.json" and values["score"] == "42"
    assert values["authoritative"] == "true" and values["new-findings"] == "1"
    assert out.getvalue().startswith("::error file=agent/probegate.yml,line=7,")
    assert "probegate gate: failed" in summary.read_text()


def test_finish_turns_an_unreadable_report_into_an_internal_error(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "scan.json").write_text("{not json")
    out = io.StringIO()
    code = finish(
        FinishOptions(scan_rc=0, compare_rc=None, output_dir=Path("out")),
        {"GITHUB_OUTPUT": str(tmp_path / "o"), "GITHUB_STEP_SUMMARY": str(tmp_path / "s"),
         "GITHUB_WORKSPACE": str(tmp_path)},
        out,
    )  # fmt: skip
    assert code == 4
    assert parse_github_output((tmp_path / "o").read_text())["exit-code"] == "4"
    assert out.getvalue().startswith("::error title=probegate action::")
    assert (tmp_path / "s").read_text().startswith("> **probegate gate: error** (exit code 4")


def test_finish_warns_when_the_reports_are_outside_the_workspace(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    _write_scan(tmp_path / "elsewhere", [])
    out = io.StringIO()
    code = finish(
        FinishOptions(scan_rc=0, compare_rc=None, output_dir=tmp_path / "elsewhere"),
        {"GITHUB_OUTPUT": str(tmp_path / "o"), "GITHUB_WORKSPACE": str(tmp_path / "ws")},
        out,
    )
    assert code == 0
    assert parse_github_output((tmp_path / "o").read_text())["json-path"] == str(
        tmp_path / "elsewhere" / "scan.json"
    )
    assert "::warning title=probegate action::output-dir " in out.getvalue()


def test_main_reports_its_own_bugs_as_exit_4_with_an_escaped_message(capsys):
    assert main(["finish", "--scan-rc=not-a-number\n::error::x"], {}) == 4
    err = capsys.readouterr().err
    assert err.startswith("::error title=probegate action::") and err.count("\n") == 1


def test_token_command(capsys):
    assert main(["token"], {}) == 0
    assert re.fullmatch(r"[0-9a-f]{32}\n", capsys.readouterr().out)


def test_module_runs_as_a_script():
    import subprocess
    import sys

    proc = subprocess.run(
        [sys.executable, "-m", "probegate.github", "token"],
        capture_output=True, text=True, check=True, env={**os.environ},
    )  # fmt: skip
    assert re.fullmatch(r"[0-9a-f]{32}\n", proc.stdout)
