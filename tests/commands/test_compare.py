"""`probegate compare` through the real CLI entry point: exit codes 0, 1 and 2, and outputs."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from probegate.canonical import pretty_bytes
from probegate.cli import main
from probegate.models.report import ScanReport
from probegate.reports import json_report
from tests.factories import finding, probe_of, scan, with_counts

UPSTREAM = Path(__file__).parents[1] / "data" / "agentguardian_report.json"


def _write(tmp_path: Path, name: str, report: ScanReport) -> Path:
    path = tmp_path / name
    path.write_bytes(json_report.render(report))
    return path


# Attempts a probe in these scans: enough for a rise from none to all to be beyond chance.
TEN = 10


@pytest.fixture
def hardened(tmp_path: Path) -> Path:
    """A baseline in which the agent resisted every attempt of every probe."""
    report = scan(resisted=[probe_of(i) for i in range(4)])
    report = with_counts(report, {probe_of(i): (0, TEN) for i in range(4)})
    return _write(tmp_path, "hardened.json", report)


@pytest.fixture
def vulnerable(tmp_path: Path) -> Path:
    """The same probes, two of which now succeed in every attempt."""
    report = scan([finding(1), finding(2)], resisted=[probe_of(0), probe_of(3)])
    counts = {probe_of(i): (TEN if i in (1, 2) else 0, TEN) for i in range(4)}
    return _write(tmp_path, "demo.json", with_counts(report, counts))


def test_compare_a_scan_with_itself_exits_0(
    vulnerable: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["compare", str(vulnerable), str(vulnerable)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("Result: no regression.\n")
    assert "  new 0 · " in out


def test_hardened_baseline_against_a_vulnerable_scan_exits_1_and_lists_the_new_findings(
    hardened: Path, vulnerable: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["compare", str(hardened), str(vulnerable)]) == 1
    out = capsys.readouterr().out
    assert "\nNew findings (2)\n" in out
    assert probe_of(1) in out and probe_of(2) in out


def test_a_terminal_gets_text_and_markdown_is_asked_for(
    hardened: Path, vulnerable: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Aligned text by default: no table pipes, no escaped underscores (``tool\\_call``)."""
    assert main(["compare", str(hardened), str(vulnerable)]) == 1
    text = capsys.readouterr().out
    assert "|" not in text and "\\" not in text and "**" not in text
    assert "  AIVSS          42                42                0" in text
    assert main(["compare", str(hardened), str(vulnerable), "--output", "MD"]) == 1
    md = capsys.readouterr().out
    assert md.startswith("## probegate: comparison with the baseline\n")
    assert "| severity | ASI | probe | finding | fp |" in md and "### New findings (2)" in md


def test_fixing_findings_exits_0(
    hardened: Path, vulnerable: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["compare", str(vulnerable), str(hardened)]) == 0
    assert "\nFixed findings (2)\n" in capsys.readouterr().out


def test_tolerance_flag(tmp_path: Path) -> None:
    base = _write(tmp_path, "a.json", scan(aivss=80))
    cur = _write(tmp_path, "b.json", scan(aivss=77))
    assert main(["compare", str(base), str(cur)]) == 1
    assert main(["compare", str(base), str(cur), "--tolerance", "3"]) == 0


def test_json_output_is_canonical_and_the_exit_code_does_not_depend_on_it(
    hardened: Path, vulnerable: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["compare", str(hardened), str(vulnerable), "--output", "json"]) == 1
    out = capsys.readouterr().out
    data = json.loads(out)
    assert out.encode() == pretty_bytes(data)
    assert data["regression"] is True
    assert [f["probe_id"] for f in data["new"]] == [probe_of(1), probe_of(2)]


def test_output_path_writes_the_file(
    tmp_path: Path, hardened: Path, vulnerable: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "out" / "diff.md"
    argv = ["compare", str(hardened), str(vulnerable), "--output-path", str(target)]
    assert main([*argv, "--output", "md"]) == 1
    assert "### New findings (2)" in target.read_text(encoding="utf-8")
    assert capsys.readouterr().out == f"probegate compare: regression; wrote {target}\n"
    assert main(argv) == 1  # text, and never coloured in a file
    written = target.read_text(encoding="utf-8")
    assert "\nNew findings (2)\n" in written and "\x1b" not in written


def test_write_baseline_copies_current_and_still_reports_the_regression(
    tmp_path: Path, hardened: Path, vulnerable: Path
) -> None:
    new_baseline = tmp_path / "baseline.json"
    argv = ["compare", str(hardened), str(vulnerable), "--write-baseline", str(new_baseline)]
    assert main(argv) == 1
    assert new_baseline.read_bytes() == vulnerable.read_bytes()
    assert main(["compare", str(new_baseline), str(vulnerable)]) == 0


def test_suppression_file_turns_the_regression_into_a_pass(
    tmp_path: Path, hardened: Path, vulnerable: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    supp = tmp_path / "supp.yml"
    supp.write_text(
        "suppressions:\n"
        + "".join(f'  - {{fp: "{finding(i).fp}", reason: "accepted {i}"}}\n' for i in (1, 2))
        + '  - {fp: "deadbeef", reason: "gone"}\n',
        encoding="utf-8",
    )
    assert main(["compare", str(hardened), str(vulnerable), "--suppressions", str(supp)]) == 0
    out = capsys.readouterr().out
    assert "\nNew findings, suppressed (2)\n" in out
    assert "1 stale suppression(s) match no finding: deadbeef" in out


def test_agentguardian_report_is_accepted_as_a_baseline(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cur = _write(
        tmp_path,
        "cur.json",
        scan(resisted=["pi.system-leak.v1", "tool.refund-abuse.v1"], aivss=90),
    )
    assert main(["compare", str(UPSTREAM), str(cur)]) == 2  # different library and mode
    err = capsys.readouterr().err
    assert "probe library versions differ" in err and "--allow-mismatch" in err
    assert main(["compare", str(UPSTREAM), str(cur), "--allow-mismatch"]) == 0
    out = capsys.readouterr().out
    # The seed format counts each finding as one attempt: one resisted attempt now is noise.
    assert "\nWithin noise (2)\n" in out and "too few attempts to tell" in out
    assert "agentguardian-scan-v1 report, mapped onto probegate-scan-v1" in out


@pytest.mark.parametrize(
    ("argv_tail", "message"),
    [
        (["--tolerance", "abc"], "invalid float value"),
        (["--tolerance", "-1"], "--tolerance must be a number >= 0"),
        (["--output", "html"], "invalid choice"),
        (["--suppressions", "missing.yml"], "suppression file not found"),
    ],
)
def test_bad_flags_exit_2_with_one_line(
    hardened: Path,
    argv_tail: list[str],
    message: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["compare", str(hardened), str(hardened), *argv_tail]) == 2
    err = capsys.readouterr().err
    assert message in err
    assert err.count("\n") == 1


@pytest.mark.parametrize(
    ("content", "message"),
    [(b"{broken", "invalid JSON"), (b'{"schema": "x"}', "unsupported report schema")],
)
def test_bad_report_exits_2_with_one_line(
    tmp_path: Path,
    hardened: Path,
    content: bytes,
    message: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    bad = tmp_path / "bad.json"
    bad.write_bytes(content)
    assert main(["compare", str(hardened), str(bad)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {bad}: ")
    assert message in err
    assert err.count("\n") == 1


def test_missing_report_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["compare", str(tmp_path / "a.json"), str(tmp_path / "b.json")]) == 2
    assert "report file not found" in capsys.readouterr().err


def test_missing_argument_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["compare", "only-one.json"]) == 2
    assert "CURRENT" in capsys.readouterr().err


def test_every_category_is_compared_with_its_state_on_each_side(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """All ten ASI categories, in the terminal text and in Markdown: a score with its unjudged
    attempts beside it, or why a side has none (docs/scoring.md, "Categories")."""
    from tests.reports.samples import golden_report

    base = _write(tmp_path, "base.json", golden_report())
    current = golden_report().model_copy(update={"scan_id": "pg-synthetic0002"})
    cur = _write(tmp_path, "cur.json", current)
    assert main(["compare", str(base), str(cur)]) == 0
    rows = {
        line.split()[0]: line
        for line in capsys.readouterr().out.splitlines()
        if line.startswith("  ASI") and not line.startswith("  ASI ")
    }
    assert list(rows) == [f"ASI{n:02d}" for n in range(1, 11)]
    assert re.split(r"\s{2,}", rows["ASI03"].strip()) == [
        "ASI03",
        "50 (1 unjudged)",
        "50 (1 unjudged)",
        "0",
    ]
    assert "n/a (not applicable)" in rows["ASI05"] and "n/a (undertested)" in rows["ASI07"]
    assert "n/a (not selected)" in rows["ASI10"]
    assert main(["compare", str(base), str(cur), "--output", "md"]) == 0
    md = capsys.readouterr().out
    assert "| ASI05 | n/a (not applicable) | n/a (not applicable) |  |" in md
    assert "| ASI03 | 50 (1 unjudged) | 50 (1 unjudged) | 0 |" in md
