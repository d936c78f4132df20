"""The Markdown regression diff: content, bounds, and hostile agent text kept inert."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from probegate.baseline import compare
from probegate.models.taxonomy import Severity
from probegate.reports.diff_markdown import escape, render_diff
from tests.factories import finding, probe_of, scan, suppressed, with_counts

HOSTILE = (
    "done | <script>alert(1)</script> <img src=https://evil.test/p.png> `rm -rf` "
    "[click](https://evil.test) ![px](https://evil.test/t.gif)\n::error::pwned\x1b[31mred"
    "\u202eevil\r\n::set-output name=x::y"
)


def _cells(row: str) -> int:
    """Cells in a table row, counting only pipes the renderer would split on."""
    return len(re.findall(r"(?<!\\)\|", row)) - 1


def test_diff_shows_every_bucket_and_the_score() -> None:
    base = scan([finding(1), finding(2), finding(3)], resisted=[probe_of(6)], aivss=80)
    cur = scan(
        [
            finding(1),
            finding(4, Severity.CRITICAL),
            suppressed(finding(5), "accepted: manual"),
            finding(6),
        ],
        resisted=[probe_of(2)],
        aivss=71,
    )
    thirty = {probe_of(i): (30, 30) for i in range(1, 6)}
    base = with_counts(base, thirty | {probe_of(6): (0, 30)})
    cur = with_counts(cur, thirty | {probe_of(2): (0, 30), probe_of(6): (1, 30)})
    md = render_diff(compare(base, cur))
    assert md.startswith("## probegate: comparison with the baseline\n")
    assert "**Result: regression.**" in md
    assert "| AIVSS | 80 | 71 | -9 |" in md
    assert (
        "New: **1** · new but suppressed: 1 · changed: 0 (0 worse) · fixed: 1 · persisting: 1"
    ) in md
    assert "within noise: 1 · not re-judged: 1" in md
    assert "### Within noise (1)" in md
    assert f"| {probe_of(6)} | " in md and "| 0 of 30 -&gt; 1 of 30 |" in md
    assert "### New findings (1)" in md
    assert f"| critical | ASI01 | {probe_of(4)} |" in md
    assert "### New findings, suppressed (1)" in md
    assert "accepted: manual" in md
    assert "### Fixed findings (1)" in md
    assert "### Not re-judged (1)" in md
    assert "| ASI01 | 50 | 50 | 0 |" in md
    assert md.endswith("\n") and not md.endswith("\n\n")


def test_diff_without_regression_says_so_and_omits_empty_sections() -> None:
    report = scan([finding(1)])
    md = render_diff(compare(report, report))
    assert "**Result: no regression.**" in md
    assert "### New findings" not in md
    assert "### Fixed" not in md


def test_mismatch_is_announced() -> None:
    base = scan([finding(1)], library="old")
    cur = scan([finding(1), finding(2)])
    md = render_diff(compare(base, cur, allow_mismatch=True))
    assert "**Scans differ:** probe library versions differ" in md
    assert "(not gated)" in md
    assert "### Not compared (1)" in md


def test_tables_are_bounded() -> None:
    cur = scan([finding(i) for i in range(120)])
    md = render_diff(compare(scan(), cur), max_rows=50)
    assert "### New findings (120)" in md
    assert md.count(f"| high | ASI01 | {probe_of(0)[:-5]}") == 50
    assert "… and 70 more" in md


def test_hostile_agent_text_stays_inert() -> None:
    hostile = finding(1).model_copy(update={"summary": HOSTILE})
    cur = scan([hostile]).model_copy(update={"scan_id": HOSTILE})
    md = render_diff(compare(scan(), cur))
    assert "pwned" in md and "evil" in md  # shown, as text
    assert "<script" not in md and "<img" not in md
    assert "\x1b" not in md and "\u202e" not in md and "\r" not in md
    assert "](" not in md.replace("\\](", "")  # no live link or image
    for line in md.splitlines():
        assert not line.lstrip().startswith("::")
        if line.startswith("| high"):
            assert _cells(line) == 6  # the pipe in the text did not add a column
    assert re.search(r"(?<!\\)`", md.split("### New findings")[1].split("\n\n", 2)[1]) is None


@settings(max_examples=200, deadline=None)
@given(st.text())
def test_escape_is_one_bounded_inert_line(text: str) -> None:
    out = escape(text, limit=80)
    assert "\n" not in out and "\r" not in out
    assert "<" not in out.replace("<br>", "") and ">" not in out.replace("<br>", "")
    assert re.search(r"(?<!\\)[|`]", out.replace("\\\\", "")) is None
    assert not out.startswith("::")
    assert "\x1b" not in out
