"""`probegate report`: regenerate formats from a stored scan, byte-identical to the scan's."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from probegate.cli import main
from probegate.reports import FORMATS
from tests.reports.samples import golden_report

ALL = ",".join(FORMATS)


@pytest.fixture(scope="module")
def scanned(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A signed demo scan with every format, run once for this module."""
    root = tmp_path_factory.mktemp("scan")
    mp = pytest.MonkeyPatch()
    mp.chdir(root)
    mp.setenv("PROBEGATE_SIGNING_SECRET", "report-cli-test-secret-0123456789")
    try:
        assert main(["scan", "demo", "--quiet", "--output", ALL]) == 0
    finally:
        mp.undo()
    return root


def test_report_by_scan_id_is_byte_identical_to_the_scan(
    scanned: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(scanned)
    scan_json = scanned / "probegate-out" / "scan.json"
    data = json.loads(scan_json.read_bytes())
    assert "signatures" in data  # carried, never recomputed
    scan_id = data["scan_id"]
    assert (scanned / ".probegate" / "scans" / scan_id / "scan.json").is_file()
    assert main(["report", scan_id, "--output", ALL, "--output-dir", "again"]) == 0
    for fmt in FORMATS.values():
        assert (scanned / "again" / fmt.filename).read_bytes() == (
            scanned / "probegate-out" / fmt.filename
        ).read_bytes(), fmt.name
    printed = capsys.readouterr().out.split()
    assert len(printed) == len(FORMATS)


def test_report_by_path_to_one_file_and_to_stdout(
    scanned: Path, tmp_path: Path, capfdbinary: pytest.CaptureFixture[bytes]
) -> None:
    scan_json = scanned / "probegate-out" / "scan.json"
    out = tmp_path / "deep" / "x.sarif"
    assert main(["report", str(scan_json), "--output", "sarif", "--output-path", str(out)]) == 0
    assert out.read_bytes() == (scanned / "probegate-out" / "scan.sarif").read_bytes()
    capfdbinary.readouterr()
    assert main(["report", str(scan_json), "--output", "md", "--output-path", "-"]) == 0
    assert capfdbinary.readouterr().out == (scanned / "probegate-out" / "summary.md").read_bytes()


def test_report_of_a_synthetic_file_matches_the_emitters(tmp_path: Path) -> None:
    report = golden_report()
    path = tmp_path / "scan.json"
    path.write_bytes(FORMATS["json"].render(report))
    assert main(["report", str(path), "--output", "junit,html", "--output-dir", str(tmp_path)]) == 0
    assert (tmp_path / "junit.xml").read_bytes() == FORMATS["junit"].render(report)
    assert (tmp_path / "report.html").read_bytes() == FORMATS["html"].render(report)


@pytest.mark.parametrize(
    "args",
    [
        ["report", "nope-no-such-scan"],
        ["report", "../../etc/passwd"],
        ["report", "{bad}", "--output", "pdf"],
        ["report", "BAD_FILE"],
        ["report", "NOT_A_REPORT"],
        ["report", "GOOD", "--output", "json,md", "--output-path", "x"],
    ],
)
def test_bad_input_is_exit_2_with_one_line(
    args: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "bad.json").write_text("{truncated", encoding="utf-8")
    (tmp_path / "other.json").write_text('{"hello": "world"}', encoding="utf-8")
    (tmp_path / "good.json").write_bytes(FORMATS["json"].render(golden_report()))
    names = {
        "BAD_FILE": tmp_path / "bad.json",
        "NOT_A_REPORT": tmp_path / "other.json",
        "GOOD": tmp_path / "good.json",
    }
    argv = [str(names.get(a, a)) for a in args]
    assert main([*argv, "--store", str(tmp_path / "store")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and len(err.strip().splitlines()) == 1, err
