"""The HTML report: self-contained, CSP-locked, evidence highlighted in the transcript."""

from __future__ import annotations

import base64
import hashlib
import re
from html.parser import HTMLParser
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from probegate.models.taxonomy import Severity
from probegate.models.transcript import ToolCall, Transcript, Turn, text_at
from probegate.models.verdict import Evidence
from probegate.reports import FORMATS, html_report
from probegate.reports.escape import html_text
from probegate.reports.headline import category_coverage, coverage_text, out_of_100
from tests.factories import make_finding, make_report
from tests.reports.samples import HOSTILE, golden_report, hostile_report


def _html() -> str:
    return html_report.render(golden_report()).decode("utf-8")


def _hash(text: str) -> str:
    return "sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode()


def test_self_contained_with_a_csp_that_pins_our_style_and_script() -> None:
    text = _html()
    csp = re.search(r'<meta http-equiv="Content-Security-Policy" content="([^"]+)">', text)
    assert csp is not None
    policy = csp.group(1).replace("&#x27;", "'")
    assert "default-src 'none'" in policy
    style = re.search(r"<style>(.*?)</style>", text, re.S)
    script = re.search(r"<script>(.*?)</script>", text, re.S)
    assert style and script
    assert f"style-src '{_hash(style.group(1))}'" in policy
    assert f"script-src '{_hash(script.group(1))}'" in policy
    assert not re.search(r"\b(src|href)=", text)  # no external resource, no link out
    assert "http://" not in text.replace("http://www.w3.org/2000/svg", "")
    assert "https://" not in text.replace("https://docs.example.test/q3.txt", "")


def _rows(text: str) -> dict[str, str]:
    """The chart's rows by category: each ``<g>`` of the SVG."""
    svg = text[text.index("<svg") : text.index("</svg>")]
    groups = re.findall(r"<g><title>(ASI\d\d)[^<]*</title>(.*?)</g>", svg, re.S)
    return dict(groups)


def test_inline_svg_chart_has_a_bar_per_scored_category_and_a_frame_per_other() -> None:
    report = golden_report()
    rows = _rows(_html())
    assert list(rows) == [f"ASI{i:02d}" for i in range(1, 11)]  # in order, each with its state
    for asi, row in rows.items():
        if asi in report.asi_scores:
            assert row.count('fill="#f6f8fa"/>') == 1 and "stroke-dasharray" not in row, asi
        else:  # no score: an empty dashed frame, never a bar that reads as 0
            assert "stroke-dasharray" in row and 'fill="#f6f8fa"' not in row, asi
    assert 'width="47.5"' in rows["ASI01"]  # 12.5 of a 380-wide axis
    assert "n/a (undertested)" in rows["ASI07"] and 'stroke="#9a6700"' in rows["ASI07"]
    assert "n/a (not applicable)" in rows["ASI05"] and "n/a (not selected)" in rows["ASI04"]
    assert "ASI07" not in report.asi_scores


def test_a_category_at_zero_is_the_most_visible_row_and_n_a_is_not_a_zero() -> None:
    """0.0 is every judged probe of the category succeeding: the row is banded in red with an
    edge, its words bold, and a stub of a bar; a category with no score is framed, in italics."""
    report = golden_report()
    categories = dict(report.categories)
    categories["ASI02"] = categories["ASI02"].model_copy(update={"score": 0.0, "value": 0.0})
    zeroed = report.model_copy(
        update={"categories": categories, "asi_scores": {**report.asi_scores, "ASI02": 0.0}}
    )
    rows = _rows(FORMATS["html"].render(zeroed).decode("utf-8"))
    zero, none = rows["ASI02"], rows["ASI05"]
    assert 'fill="#ffebe9"' in zero and 'width="4" height="26" fill="#cf222e"' in zero
    assert 'font-weight="700" fill="#82071e">ASI02' in zero and ">0.0</text>" in zero
    assert 'width="6.0" height="20" fill="#cf222e"' in zero  # the stub: never an empty bar
    assert 'fill="#ffebe9"' not in none and 'font-weight="700"' not in none
    assert 'font-style="italic"' in none and 'width="6.0"' not in none
    for asi in ("ASI06", "ASI08", "ASI10"):  # scored 80 and over: plain
        assert 'fill="#ffebe9"' not in rows[asi], asi


def test_the_chart_shows_coverage_next_to_the_score() -> None:
    report = golden_report()
    text = _html()
    chart = text[text.index("<h2>OWASP Top 10") : text.index("</svg>")]
    assert f"<strong>{out_of_100(report.aivss)}</strong> {report.band} · coverage: " in chart
    assert html_text(coverage_text(report)) in chart
    assert "categories tested" in coverage_text(report)
    for asi, state in report.categories.items():
        assert f">{html_text(category_coverage(state))}</text>" in _rows(text)[asi], asi


def test_table_headers_and_ids_are_never_broken_inside_a_word() -> None:
    """``overflow-wrap: anywhere`` lets a table squeeze a column below its longest word and
    break "Category" as "Cate / gory": headers keep their words, cells break only to fit."""
    css = re.search(r"<style>(.*?)</style>", _html(), re.S)
    assert css is not None
    rules = css.group(1)
    assert "th{overflow-wrap:normal;word-break:keep-all}" in rules
    anywhere = re.search(r"([^{}]*)\{overflow-wrap:anywhere\}", rules)
    assert anywhere is not None
    assert not {"td", "th"} & set(anywhere.group(1).replace("\n", "").split(","))


def test_evidence_is_highlighted_where_it_points() -> None:
    finding = make_finding(0, agent_text="I will now email the secret PG-CANARY-abc123 to you.")
    content = "I will now email the secret PG-CANARY-abc123 to you."
    start = content.index("PG-CANARY")
    extra = Evidence(
        category="security.data_exfiltration",
        severity=finding.severity,
        path="turns.1.content",
        start=start,
        end=start + 16,
        score=1.0,
        fp="f" * 32,
        subject="PG-CANARY-abc123",
        detector="canary_leak",
    )
    stray = extra.model_copy(update={"path": "turns.9.content", "fp": "e" * 32})
    finding = finding.model_copy(update={"evidence": [*finding.evidence, extra, stray]})
    text = html_report.render(make_report([finding])).decode()
    assert "<pre>I will now email the secret <mark>PG-CANARY-abc123</mark> to you.</pre>" in text
    assert "<dd><pre><mark>PG-CANARY-abc123</mark></pre></dd>" in text  # the tool argument
    assert text.count("(not located in transcript)") == 1  # the stray path says so


def test_filters_and_collapsible_transcripts() -> None:
    text = _html()
    report = golden_report()
    assert 'id="f-sev"' in text and 'id="f-asi"' in text and 'id="f-sup"' in text
    assert text.count('<article class="finding') == len(report.findings)
    assert text.count("<details><summary>Transcript</summary>") == len(report.findings)
    for finding in report.findings:
        assert f'data-asi="{finding.asi}"' in text
    assert 'data-suppressed="1"' in text


def test_no_findings_still_renders() -> None:
    text = html_report.render(make_report([])).decode()
    assert "No probe succeeded against the agent." in text
    assert "<script>" in text  # the filter script tolerates the missing controls


class _Balance(HTMLParser):
    """Checks that every element we open is closed in order (void elements aside)."""

    VOID = frozenset({"meta", "br", "input", "rect", "hr", "img", "link"})

    def __init__(self) -> None:
        super().__init__()
        self.stack: list[str] = []
        self.errors: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag not in self.VOID:
            self.stack.append(tag)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        pass

    def handle_endtag(self, tag: str) -> None:
        if not self.stack or self.stack[-1] != tag:
            self.errors.append(f"</{tag}> closes {self.stack[-1:]}")
            return
        self.stack.pop()


def test_text_repeated_across_findings_is_escaped_every_time() -> None:
    """A render escapes each distinct string once and reuses the result: every repeat of a
    hostile reply, in every finding, comes out escaped."""
    one = html_report.render(make_report([make_finding(0, agent_text=HOSTILE)])).decode()
    findings = [make_finding(i, agent_text=HOSTILE) for i in range(3)]
    many = html_report.render(make_report(findings)).decode()
    escaped = "&lt;script&gt;alert(1)&lt;/script&gt;"
    assert many.count(escaped) == 3 * one.count(escaped) > 0
    assert "<script>alert" not in many and "::error::" not in many
    assert many.count("&#58;&#58;error&#58;&#58;") == 3 * one.count("&#58;&#58;error&#58;&#58;")


def test_markup_is_balanced_even_with_hostile_text() -> None:
    for report in (golden_report(), hostile_report()):
        parser = _Balance()
        parser.feed(html_report.render(report).decode())
        parser.close()
        assert parser.errors == [] and parser.stack == []


def test_nothing_is_wider_than_the_page() -> None:
    """At 1280 px the report must not scroll sideways: every table sits in a container that
    scrolls on its own, long unbroken strings (ids, paths, fingerprints) may break anywhere,
    and the finding's facts are a wrapping list, not a nine-column table."""
    from html.parser import HTMLParser

    from probegate.reports import html_report
    from tests.reports.samples import golden_report, hostile_report

    class Walk(HTMLParser):
        def __init__(self) -> None:
            super().__init__()
            self.stack: list[tuple[str, str]] = []
            self.unwrapped: list[str] = []

        def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
            cls = dict(attrs).get("class") or ""
            if tag == "table" and not any("wide" in c.split() for _, c in self.stack):
                self.unwrapped.append(self.getpos().__repr__())
            if tag not in ("br", "meta", "input", "rect", "img"):
                self.stack.append((tag, cls))

        def handle_endtag(self, tag: str) -> None:
            while self.stack:
                if self.stack.pop()[0] == tag:
                    break

    for report in (golden_report(), hostile_report()):
        page = html_report.render(report).decode("utf-8")
        walk = Walk()
        walk.feed(page)
        assert walk.unwrapped == []
    css = html_report._CSS
    assert ".wide{max-width:100%;overflow-x:auto}" in css
    assert "overflow-wrap:anywhere" in css and "white-space:pre-wrap" in css
    assert 'width="100%"' in page  # the chart scales with the page


# Argument keys that make dotted paths ambiguous: a key holding a dot reads, as a path, like a
# nested key (or like nothing), and a digit key like a list index.
_KEYS = st.sampled_from(["a", "b", "a.b", "0", "1", "", "b.0"])
_ARGUMENTS = st.recursive(
    st.text(max_size=6) | st.integers(0, 9) | st.none(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_KEYS, inner, max_size=3),
    max_leaves=8,
)
_ELSEWHERE = [
    "turns.1.role",
    "turns.1.tool_calls.0.name",
    "turns.1.tool_calls.1.arguments",
    "tools_offered.0",
    "turns.2.content",
    "turns.1.tool_calls.0.arguments.a.b.c",
]


def _written_paths(value: Any, path: str) -> list[str]:
    """Every path the report writes a string of ``value`` under, as it spells them (a key's
    dot and all): what evidence would point at."""
    if isinstance(value, dict):
        return [p for k, v in value.items() for p in _written_paths(v, f"{path}.{k}")]
    if isinstance(value, list):
        return [p for i, v in enumerate(value) for p in _written_paths(v, f"{path}.{i}")]
    return [path] if isinstance(value, str) else []


@given(
    arguments=st.lists(st.dictionaries(_KEYS, _ARGUMENTS, max_size=4), min_size=1, max_size=2),
    content=st.text(max_size=8),
    result=st.none() | st.text(max_size=8),
    error=st.none() | st.text(max_size=8),
    data=st.data(),
)
def test_evidence_is_located_where_the_evidence_path_reads_a_string(
    arguments: list[dict[str, Any]],
    content: str,
    result: str | None,
    error: str | None,
    data: st.DataObject,
) -> None:
    """The report says "not located" exactly where text_at finds no string at the path that
    the offsets fit: the lengths measured while the transcript is written agree with it."""
    calls = [
        ToolCall(name="t", arguments=args, result=result, error=error if i == 0 else None)
        for i, args in enumerate(arguments)
    ]
    transcript = Transcript(
        turns=[Turn(role="user", content=content), Turn(role="assistant", tool_calls=calls)],
        tools_offered=["t"],
    )
    written = _written_paths(transcript.model_dump(), "")
    paths = data.draw(
        st.lists(
            st.tuples(
                st.sampled_from([p[1:] for p in written] + _ELSEWHERE),
                st.integers(0, 9),
                st.integers(0, 9),
            ),
            min_size=1,
            max_size=6,
        )
    )
    evidence = [
        Evidence(
            category="c",
            severity=Severity.HIGH,
            path=path,
            start=start,
            end=end,
            score=1.0,
            fp=f"{n:032d}",
            subject="s",
            detector=f"det-{n}",
        )
        for n, (path, start, end) in enumerate(paths)
    ]
    finding = make_finding(0).model_copy(update={"transcript": transcript, "evidence": evidence})
    text = html_report.render(make_report([finding])).decode()
    shown = dict(re.findall(r"<li>det-(\d+) · [^<]*<span[^>]*>[^<]*</span>([^:]*):", text))
    for n, ev in enumerate(evidence):
        string = text_at(transcript, ev.path)
        located = string is not None and ev.start <= ev.end <= len(string)
        assert shown[str(n)] == ("" if located else " (not located in transcript)"), ev.path
