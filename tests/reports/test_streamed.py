"""Reports written a piece at a time are the reports written whole, byte for byte.

``json_report.write`` dumps the long lists (findings, per-probe results, unjudged attempts) one
item at a time and escapes each piece, so a 10,000-finding report is never held as JSON values
or as one text. The reference here is the whole-object writer it replaced: the layout of the
report's whole ``to_dict()``, escaped as one text. The HTML page is written as its parts are
made; its reference is all its parts joined. A signature made from the pieces is the one the
whole dict gets.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from probegate.canonical import pretty_bytes
from probegate.cli import main
from probegate.models.causes import Cause
from probegate.models.report import ScanReport, UnjudgedAttempt
from probegate.reports import FORMATS, html_report, json_report, streamer, write_outputs
from probegate.reports.escape import json_bytes
from probegate.reports.signing import (
    generate_key_pair,
    report_signatures,
    sign_report,
    verify_report,
)
from tests.factories import make_finding, make_report
from tests.reports.samples import golden_report

# What agents write: a terminal's controls, bidi and line separators, DEL and C1, astral
# characters, markup, text that reads like a small float; and plain words.
_TEXTS = (
    "Sure, sending it now.",
    "café “quoted” — ok 😀",
    "line\u2028separator\u2029and \u202eevil\u202c bidi",
    "\x1b[31mred\x1b[0m \x7f \x9b C1 ::warning::x",
    '<script>]]></script> & \\ " / \t tab',
    "1e-05 0.00001 re-run 3e-7",
    "\U0001f600" * 40 + "\u00e9" * 100,
)


def whole(report: ScanReport) -> bytes:
    """The whole-object writer: the report's whole JSON form laid out, then escaped."""
    return json_bytes(pretty_bytes(report.to_dict()))


def generated(count: int, seed: int = 20261205) -> ScanReport:
    rng = random.Random(seed)
    findings = []
    for i in range(count):
        finding = make_finding(i, agent_text=rng.choice(_TEXTS) + f" {i}")
        reliability = rng.choice([0.2065, 1e-05, 3.3e-7, 0.1, 1 / 3, 123456789.123, None])
        findings.append(finding.model_copy(update={"pov_reliability": reliability}))
    report = make_report(findings)
    unjudged = [
        UnjudgedAttempt(
            attempt_id=f"{f.probe_id}#seed#{i}",
            probe_id=f.probe_id,
            reason=rng.choice(_TEXTS),
            cause=Cause.TIMEOUT,
        )
        for i, f in enumerate(findings[::3])
    ]
    return report.model_copy(update={"unjudged": unjudged, "cost_usd": 4.2e-06})


@pytest.mark.parametrize("chunk", [1, 4096, 1 << 20])
def test_the_streamed_report_is_the_whole_one(chunk: int) -> None:
    report = generated(300)
    expected = whole(report)
    # The escape's slow path and the floats json writes otherwise than orjson are both there.
    assert b"\\u2028" in expected and b"\\u007f" in expected and b"3.3e-07" in expected
    pieces: list[bytes] = []
    json_report.write(report, pieces.append, chunk)
    assert b"".join(pieces) == expected == json_report.render(report)
    assert len(pieces) > (1 if chunk < 1 << 20 else 0)


def test_the_golden_report_streams_to_its_golden_bytes() -> None:
    golden = Path(__file__).resolve().parents[1] / "data" / "golden" / "scan.json"
    pieces: list[bytes] = []
    json_report.write(golden_report(), pieces.append, 256)
    assert b"".join(pieces) == whole(golden_report()) == golden.read_bytes()


@pytest.mark.parametrize("chunk", [1, 4096, 1 << 20])
def test_the_streamed_page_is_the_whole_one(chunk: int) -> None:
    report = generated(300)
    expected = "".join(html_report._document(report)).encode("utf-8")
    assert "\u2028".encode() in expected and "😀".encode() in expected
    pieces: list[bytes] = []
    html_report.write(report, pieces.append, chunk)
    assert b"".join(pieces) == expected == html_report.render(report)
    assert len(pieces) > (1 if chunk < 1 << 20 else 0)
    golden = Path(__file__).resolve().parents[1] / "data" / "golden" / "report.html"
    pieces = []
    html_report.write(golden_report(), pieces.append, 512)
    assert b"".join(pieces) == golden.read_bytes()


def test_report_command_writes_the_whole_writers_bytes(
    tmp_path: Path, capsysbinary: pytest.CaptureFixture[bytes]
) -> None:
    """Each way ``probegate report`` writes JSON: the output directory, a path, stdout, --json."""
    report = generated(1200)  # over a megabyte: several pieces at the default size
    expected = whole(report)
    assert len(expected) > 2 << 20
    stored = tmp_path / "stored.json"
    stored.write_bytes(expected)
    assert main(["report", str(stored), "--output-dir", str(tmp_path / "out"), "-q"]) == 0
    assert (tmp_path / "out" / "scan.json").read_bytes() == expected
    path = tmp_path / "one.json"
    assert main(["report", str(stored), "--output", "json", "--output-path", str(path)]) == 0
    assert path.read_bytes() == expected
    capsysbinary.readouterr()
    assert main(["report", str(stored), "--output", "json", "--output-path", "-"]) == 0
    assert capsysbinary.readouterr().out == expected
    assert main(["report", str(stored), "--json"]) == 0
    assert capsysbinary.readouterr().out == expected
    assert sorted(p.name for p in tmp_path.iterdir()) == ["one.json", "out", "stored.json"]
    page = "".join(html_report._document(report)).encode("utf-8")
    assert main(["report", str(stored), "--output", "html", "--output-path", "-"]) == 0
    assert capsysbinary.readouterr().out == page
    both = tmp_path / "both"
    assert main(["report", str(stored), "--output", "html,json", "--output-dir", str(both)]) == 0
    assert (both / "report.html").read_bytes() == page
    assert (both / "scan.json").read_bytes() == expected


def test_a_format_that_fails_leaves_every_file_as_it_was(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Streamed files appear at their end only, and all together: a writer that fails half-way
    leaves no part of its file, and the formats made before it are not written either."""

    def broken(report: ScanReport, sink: object, chunk: int = 0) -> None:
        assert callable(sink)
        sink(b'{\n  "aivss": ')
        raise RuntimeError("broken")

    (tmp_path / "report.html").write_bytes(b"an older page")
    monkeypatch.setattr(json_report, "write", broken)
    with pytest.raises(RuntimeError, match="broken"):
        write_outputs(generated(2), ["md", "html", "json"], tmp_path)
    assert [p.name for p in tmp_path.iterdir()] == ["report.html"]
    assert (tmp_path / "report.html").read_bytes() == b"an older page"
    assert FORMATS["json"].streams and FORMATS["html"].streams


def test_a_format_streams_exactly_when_it_has_a_streaming_writer() -> None:
    assert {n for n, f in FORMATS.items() if f.streams} == {
        n for n in FORMATS if streamer(n) is not None
    }


_SECRET = b"s" * 32


@pytest.mark.parametrize("material", ["hmac", "ed25519", "both"])
def test_signatures_from_the_fields_are_those_of_the_whole_report(material: str) -> None:
    """What a scan and a merge sign, written a piece at a time, is what the whole dict signs;
    the report written with them verifies."""
    private_pem, public_pem = generate_key_pair()
    secret = None if material == "ed25519" else _SECRET
    key = None if material == "hmac" else private_pem
    report = generated(200)
    signatures = report_signatures(report.to_fields(), secret=secret, private_key_pem=key)
    whole_signed = sign_report(report.to_dict(), secret=secret, private_key_pem=key)
    assert signatures == whole_signed["signatures"]
    signed = report.model_copy(update={"signatures": signatures})
    assert json_report.render(signed) == whole(signed)
    checked = verify_report(
        json.loads(json_report.render(signed)),
        secret=secret,
        pinned_public_keys=[] if key is None else [public_pem],
    )
    assert checked.ok, checked.lines()
