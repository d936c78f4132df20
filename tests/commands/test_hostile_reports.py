"""A stored report is input like any other: ``report``, ``compare``, ``merge`` and ``verify`` on a
report whose every free-text field is laced (tests/servers/hostile.py) print and write nothing a
terminal, a CI log, a Markdown or HTML viewer or a test reporter would act on, and exit as
documented (never 4, a bug).

The report is laced field by field: each string of a real report gets the lace appended and keeps
it when the one stored-report reader still accepts the file, so every field the reader lets
through is exercised, whatever the emitters do with it.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from probegate.cli import main
from probegate.errors import ReportError
from probegate.models.stored import parse_report
from probegate.reports import html_report, json_report
from probegate.reports.sarif.schema import sarif_validator
from tests.reports.inert import (
    assert_html_inert,
    assert_json_inert,
    assert_markdown_inert,
    assert_sarif_message_inert,
    assert_terminal_inert,
    assert_xml_inert,
    raw_controls,
)
from tests.reports.pdfpages import read_pdf
from tests.reports.samples import hostile_report
from tests.servers.hostile import LACE

PIECE = " " + LACE[:300]  # every trick of the lace, without the long tail


def _strings(node: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    if isinstance(node, dict):
        for key, value in node.items():
            yield from _strings(value, (*path, key))
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from _strings(value, (*path, i))
    elif isinstance(node, str):
        yield path


def _at(data: Any, path: tuple[Any, ...]) -> tuple[Any, Any]:
    for part in path[:-1]:
        data = data[part]
    return data, path[-1]


def laced_report() -> tuple[dict[str, Any], list[str]]:
    """The hostile sample report with the lace appended to every string the reader accepts."""
    data = json.loads(json_report.render(hostile_report()))
    data.pop("signatures", None)
    data["shard"] = "1/1"  # a complete set of one shard, so merge gets past its checks
    laced = []
    for path in list(_strings(data)):
        if path == ("shard",):
            continue  # laced, it is refused by merge (exit 2): test_a_laced_shard_is_refused
        parent, key = _at(data, path)
        before = parent[key]
        parent[key] = before + PIECE
        try:
            parse_report(json.dumps(data).encode(), source="laced")
        except ReportError:  # the reader refuses this field laced: leave it be
            parent[key] = before
        else:
            laced.append(".".join(map(str, path)))
    return data, laced


@pytest.fixture(scope="module")
def laced(tmp_path_factory: pytest.TempPathFactory) -> Path:
    data, fields = laced_report()
    # The reader lets free text through in many places; a sample that laced few would prove
    # little (the count is what the sample report has today, give or take).
    assert len(fields) > 60, fields
    assert {"findings.0.name", "findings.0.summary", "unjudged.0.reason", "scan_id"} <= set(fields)
    path = tmp_path_factory.mktemp("laced") / "scan.json"
    path.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    return path


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    assert code in (0, 1, 2, 3), (argv, code, captured.err[-500:])
    assert_terminal_inert(captured.out + captured.err)
    return code, captured.out


FILES = "json,md,html,sarif,junit,pdf"


def test_report_writes_every_format_inert(
    laced: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _ = _run(capsys, "report", str(laced), "--output", FILES, "--output-dir", str(tmp_path))
    assert code == 0
    assert_markdown_inert((tmp_path / "summary.md").read_text("utf-8"))
    html = (tmp_path / "report.html").read_text("utf-8")
    assert_html_inert(html, [html_report._JS])
    assert "&lt;/script&gt;&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert_xml_inert((tmp_path / "junit.xml").read_bytes())
    sarif = (tmp_path / "scan.sarif").read_text("utf-8")
    assert raw_controls(sarif) == []
    doc = json.loads(sarif)
    assert list(sarif_validator().iter_errors(doc)) == []
    (run,) = doc["runs"]
    for result in run["results"]:
        assert_sarif_message_inert(result["message"]["text"])
    for rule in run["tool"]["driver"]["rules"]:
        assert_markdown_inert(rule["help"]["markdown"])
    pdf = (tmp_path / "report.pdf").read_bytes()
    text = "".join(page.text for page in read_pdf(pdf))
    assert "</script><script>alert(1)</script>" in text
    assert raw_controls(text.replace("\r\n", "\n")) == []
    for action in (b"/URI", b"/JavaScript", b"/Launch", b"/OpenAction", b"/EmbeddedFile"):
        assert action not in pdf
    # scan.json keeps every value as it was read, its escapes written as \u escapes.
    again = assert_json_inert((tmp_path / "scan.json").read_text("utf-8"))
    read = parse_report(laced.read_bytes(), source="laced")
    assert again == assert_json_inert(json_report.render(read).decode("utf-8"))
    assert isinstance(again, dict) and again["findings"][0]["name"].endswith(PIECE)


@pytest.mark.parametrize("fmt", ["json", "md", "html", "sarif", "junit"])
def test_report_to_stdout_is_inert(
    laced: Path, fmt: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out = _run(capsys, "report", str(laced), "--output", fmt, "--output-path", "-")
    assert code == 0 and out
    if fmt in ("json", "sarif"):
        assert_json_inert(out)


def test_report_json_is_inert_and_the_same_values(
    laced: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, out = _run(capsys, "report", str(laced), "--json")
    data = assert_json_inert(out)
    assert isinstance(data, dict) and data["findings"][0]["summary"].endswith(PIECE)


def test_compare_prints_inert(
    laced: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out = _run(capsys, "compare", str(laced), str(laced))
    assert code == 0
    # Every laced finding listed as new, with its counts: against a baseline whose attempts
    # of the same probes were all resisted, thirty of thirty each time.
    data = json.loads(laced.read_text("utf-8"))
    found = {f["probe_id"] for f in data["findings"]}
    clean = json.loads(laced.read_text("utf-8"))
    clean["findings"] = []
    for side, vulnerable in ((clean, 0), (data, 30)):
        for r in side["results"]:
            if r["probe_id"] in found:
                r.update(outcome="resisted" if not vulnerable else "vulnerable")
                r.update(vulnerable=vulnerable, resisted=30 - vulnerable)
                r.update(attempts=30 + r["unjudged"])
    base, moved = tmp_path / "clean.json", tmp_path / "moved.json"
    base.write_text(json.dumps(clean, ensure_ascii=False), encoding="utf-8")
    moved.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    code, out = _run(capsys, "compare", str(base), str(moved))
    assert code == 1 and "New findings (1)" in out and "0 of 30 -> 30 of 30" in out
    assert "New findings, suppressed (1)" in out  # the sample's other finding is accepted
    code, out = _run(capsys, "compare", str(base), str(moved), "--output", "md")
    assert code == 1 and "### New findings (1)" in out
    assert_markdown_inert(out)
    # Seen the other way: fixed, each with both counts.
    code, out = _run(capsys, "compare", str(moved), str(base))
    assert code == 0 and f"Fixed findings ({len(found)})" in out
    for flags in (["--output", "json"], ["--json"]):
        _, out = _run(capsys, "compare", str(laced), str(laced), *flags)
        assert_json_inert(out)


def test_merge_prints_and_writes_inert(
    laced: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out_dir = tmp_path / "merged"
    argv = ["merge", str(laced), "--no-sign", "--output-dir", str(out_dir), "--fail-on", "low"]
    code, _ = _run(capsys, *argv, "--output", FILES)
    assert code == 1  # the laced findings are still findings
    assert_markdown_inert((out_dir / "summary.md").read_text("utf-8"))
    assert_html_inert((out_dir / "report.html").read_text("utf-8"), [html_report._JS])
    assert_xml_inert((out_dir / "junit.xml").read_bytes())
    assert raw_controls((out_dir / "scan.sarif").read_text("utf-8")) == []
    _, out = _run(capsys, *argv, "--json")
    assert_json_inert(out)


def test_a_laced_shard_is_refused(
    laced: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = json.loads(laced.read_text("utf-8"))
    data["shard"] += PIECE
    shard = tmp_path / "shard.json"
    shard.write_text(json.dumps(data), encoding="utf-8")
    code, _ = _run(capsys, "merge", str(shard), "--no-sign", "--output-dir", str(tmp_path))
    assert code == 2


def test_verify_prints_inert(laced: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _ = _run(capsys, "verify", str(laced))
    assert code == 1  # unsigned: nothing anchors it
    _, out = _run(capsys, "verify", str(laced), "--json")
    assert_json_inert(out)
