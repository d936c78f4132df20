"""A real scan of an agent whose every word is hostile: every place its words land stays inert.

The laced agent (tests/servers/hostile.py) falls for the attacks a weak agent falls for, and
everything it says carries :data:`~tests.servers.hostile.LACE`: closing tags, CDATA and comment
ends, Markdown links, images and table pipes, workflow commands (at a line start, after CR,
URL-encoded), ANSI and OSC 8 escapes, the C1 CSI, bidi overrides, NUL, Python and shell quoting
and ``$(touch MARKER)``, and a very long line. A probe of the user's own (``--probe-dir``)
carries it in every text field a probe file has, and its evidence is the lace itself.

The scan writes every format, prints its closing lines (as text and with ``--json``), and
writes a reproducer and a replay script per finding; the scripts are then run against the
same agent, from an empty directory, and must not run anything the lace says.
"""

from __future__ import annotations

import ast
import contextlib
import io
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from probegate.cli import main
from probegate.reports import FORMATS, html_report
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
from tests.servers.configs import known_probes, openai_config
from tests.servers.hostile import LACE, MARKER, LacedAgent, laced_probe
from tests.servers.openai_agent import OpenAIAgentServer

BIN = Path(sys.executable).parent


@dataclass
class LacedScan:
    root: Path
    server: OpenAIAgentServer
    code: int
    out: str
    err: str
    json_out: str
    probe_id: str

    @property
    def output(self) -> Path:
        return self.root / "probegate-out"

    def pov(self, suffix: str) -> list[Path]:
        return sorted(self.root.glob(f".probegate/scans/*/pov/*{suffix}"))


def _run(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    return code, out.getvalue(), err.getvalue()


@pytest.fixture(scope="module")
def laced(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LacedScan]:
    root = tmp_path_factory.mktemp("laced")
    with pytest.MonkeyPatch.context() as patch, OpenAIAgentServer(agent=LacedAgent()) as server:
        patch.chdir(root)
        patch.delenv("SOURCE_DATE_EPOCH", raising=False)
        patch.delenv("NO_COLOR", raising=False)
        openai_config(root, server.endpoint)
        probe_id = laced_probe(root / "probes")
        argv = ["scan", "--probe-dir", "probes", "--probes", probe_id, *known_probes()]
        argv += ["--no-sign", "--output", ",".join(FORMATS), "-v"]
        code, out, err = _run(argv)
        _, json_out, _ = _run([*argv, "--json", "--output-dir", "again", "--store", "again"])
        yield LacedScan(root, server, code, out, err, json_out, probe_id)


def _laced_finding(scan: LacedScan) -> dict[str, object]:
    report = json.loads((scan.output / "scan.json").read_text("utf-8"))
    (finding,) = [f for f in report["findings"] if f["probe_id"] == scan.probe_id]
    return dict(finding)


def test_the_lace_reaches_the_report_verbatim(laced: LacedScan) -> None:
    # The record keeps what the agent said, byte for byte: evidence is not sanitised away.
    assert laced.code == 0, laced.err
    finding = _laced_finding(laced)
    evidence = finding["evidence"]
    assert isinstance(evidence, list)
    assert evidence[0]["subject"].startswith("LACED-7Q \x1b[2J\x1b]8;;https://evil.test")
    transcript = finding["transcript"]
    assert isinstance(transcript, dict)
    assert any(LACE[:200] in (turn["content"] or "") for turn in transcript["turns"])


def test_every_format_shows_the_lace_as_text(laced: LacedScan) -> None:
    out = laced.output
    assert_markdown_inert((out / "summary.md").read_text("utf-8"))
    html = (out / "report.html").read_text("utf-8")
    assert_html_inert(html, [html_report._JS])
    assert "&lt;/script&gt;&lt;script&gt;alert(1)&lt;/script&gt;" in html
    root = assert_xml_inert((out / "junit.xml").read_bytes())
    assert any("</script><script>" in (e.text or "") for e in root.iter("failure"))
    sarif = json.loads((out / "scan.sarif").read_bytes())
    assert list(sarif_validator().iter_errors(sarif)) == []
    (run,) = sarif["runs"]
    for result in run["results"]:
        assert_sarif_message_inert(result["message"]["text"])
    for rule in run["tool"]["driver"]["rules"]:
        assert_markdown_inert(rule["help"]["markdown"])
        for text in (rule["help"]["text"], rule["fullDescription"]["text"]):
            assert_sarif_message_inert(text)


def test_the_pdf_shows_the_lace_as_text(laced: LacedScan) -> None:
    from tests.reports.pdfpages import read_pdf

    data = (laced.output / "report.pdf").read_bytes()
    text = "".join(page.text for page in read_pdf(data))
    assert "LACED-7Q" in text and "</script><script>alert(1)</script>" in text
    assert raw_controls(text.replace("\r\n", "\n")) == []
    for action in (b"/URI", b"/JavaScript", b"/Launch", b"/OpenAction", b"/EmbeddedFile"):
        assert action not in data


def test_the_closing_lines_are_inert(laced: LacedScan) -> None:
    assert_terminal_inert(laced.out)
    assert_terminal_inert(laced.err)
    (line,) = [line for line in laced.out.splitlines() if laced.probe_id in line]
    # The evidence is shown, its escapes spelled out, its line breaks gone.
    assert "replied: 'LACED-7Q \\x1b[2J\\x1b]8;;https://evil.test" in line


def test_json_on_stdout_is_inert_and_says_the_same(laced: LacedScan) -> None:
    data = assert_json_inert(laced.json_out)
    assert isinstance(data, dict)
    (shown,) = [f for f in data["findings"] if f["probe_id"] == laced.probe_id]
    # Escaped for the terminal, the value a parser reads is still the probe file's own text.
    assert shown["name"].startswith("Laced \x1b[2J\x1b]8;;https://evil.test")
    assert "\u202eevil\u202c" in shown["name"] and "\x9b31m" in shown["name"]
    assert "replied: 'LACED-7Q \\x1b[2J" in shown["evidence"]


def _isolated(tmp: Path) -> dict[str, str]:
    return {"PATH": f"{BIN}{os.pathsep}/usr/bin:/bin", "HOME": str(tmp), "NO_COLOR": "1"}


def test_replay_scripts_hold_the_lace_as_data_and_print_it_inert(
    laced: LacedScan, tmp_path: Path
) -> None:
    scripts = laced.pov(".replay.py")
    assert len(scripts) == len(json.loads((laced.output / "scan.json").read_text())["findings"])
    for script in scripts:
        source = script.read_text("utf-8")
        assert source.isascii()
        # DATA is one call of json.loads on one string constant: the lace is never code.
        (data,) = [
            node
            for node in ast.parse(source).body
            if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", "") == "DATA"
        ]
        call = data.value
        assert isinstance(call, ast.Call) and ast.unparse(call.func) == "json.loads"
        assert len(call.args) == 1 and isinstance(call.args[0], ast.Constant)
        done = subprocess.run(
            [sys.executable, "-I", str(script)],
            cwd=tmp_path,
            env=_isolated(tmp_path),
            capture_output=True,
            check=False,
            timeout=60,
        )
        assert done.returncode == 0, done.stderr
        stdout = done.stdout.decode("utf-8")
        assert_terminal_inert(stdout)
        assert "</script><script>alert(1)</script>" in stdout  # the agent's words, as text
        assert "\\x1b[2J" in stdout and "\\u202e" in stdout  # its escapes, spelled out
    assert not list(tmp_path.rglob(MARKER)) and not list(laced.root.rglob(MARKER))


def test_shell_reproducers_quote_every_word_and_reproduce(laced: LacedScan) -> None:
    scripts = laced.pov(".sh")
    assert scripts
    for script in scripts:
        text = script.read_text("utf-8")
        assert raw_controls(text) == [] and "`" not in text and "$(touch" not in text
        assert subprocess.run(["sh", "-n", str(script)], check=False).returncode == 0
    (laced_sh,) = [s for s in scripts if s.name == f"{laced.probe_id}.sh"]
    done = subprocess.run(
        [str(laced_sh)],
        cwd=laced.root.parent,
        env=_isolated(laced.root),
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    again = json.loads((laced.root / "probegate-pov" / laced.probe_id / "scan.json").read_text())
    (reproduced,) = again["findings"]
    assert reproduced["fp"] == _laced_finding(laced)["fp"]
    assert not list(laced.root.parent.rglob(MARKER))
