"""The regression diff for a terminal: aligned plain text, colour only when asked, agent text
inert."""

from __future__ import annotations

import io

from probegate.baseline import compare
from probegate.models.comparison import Comparison
from probegate.models.taxonomy import Severity
from probegate.reports.diff_markdown import render_diff
from probegate.reports.diff_text import render_text
from probegate.terminal import Style
from tests.factories import finding, probe_of, scan, suppressed, with_counts
from tests.reports.inert import assert_terminal_inert

PLAIN = Style(io.StringIO(), enabled=False)
HOSTILE = "done | x\n::error::pwned\x1b[31mred\u202eevil\r\n`tool_call` **b**"


def _comparison() -> Comparison:
    """Every bucket, counted in 30 attempts a probe: 1 persists, 2 is fixed, 3 is not
    re-judged, 4 is new, 5 new but suppressed, 6 and 7 flipped within noise."""
    base = scan([finding(1), finding(2), finding(3), finding(6)], resisted=[probe_of(7)], aivss=80)
    cur = scan(
        [
            finding(1),
            finding(4, Severity.CRITICAL),
            suppressed(finding(5), "accepted: manual"),
            finding(7),
        ],
        resisted=[probe_of(2), probe_of(6)],
        aivss=71,
    )
    thirty = {probe_of(i): (30, 30) for i in range(1, 6)}
    base = with_counts(base, thirty | {probe_of(6): (1, 30), probe_of(7): (0, 30)})
    cur = with_counts(cur, thirty | {probe_of(i): (i == 7, 30) for i in (2, 6, 7)})
    return compare(base, cur)


def test_text_says_what_the_markdown_says_without_markdown() -> None:
    c = _comparison()
    text = render_text(c, PLAIN)
    md = render_diff(c)
    assert text.startswith(
        f"Result: regression. 1 new finding(s) beyond noise: {probe_of(4)} (30 of 30 vs not "
        "judged in the baseline); AIVSS dropped by 9"
    )
    assert "|" not in text and "**" not in text and "###" not in text and "\\" not in text
    titles = ("New findings (1)", "New findings, suppressed (1)", "Fixed findings (1)")
    for title in (*titles, "Within noise (2)", "Not re-judged (1)"):
        assert f"### {title}" in md
        assert f"\n{title}\n" in text
    assert (
        "  new 1 · new but suppressed 1 · changed 0 (0 worse) · fixed 1 · persisting 1 "
        "(0 suppressed) · within noise 2 · not re-judged 1"
    ) in text
    assert "    suppressed: accepted: manual" in text
    assert "    1 of 30 -> 0 of 30\n" in text and "    0 of 30 -> 1 of 30\n" in text
    assert "    30 of 30 -> 0 of 30, p " in text  # the fixed one, with its p-value
    assert "level 0.01: one-sided Fisher exact test, Benjamini-Hochberg over" in text
    assert "(probegate compare BASELINE CURRENT --write-baseline BASELINE)" in text
    for ref in c.new + c.fixed:
        assert ref.probe_id in text and ref.fp[:12] in text


def test_columns_are_aligned() -> None:
    text = render_text(_comparison(), PLAIN)
    lines = text.splitlines()
    head = lines.index("                 baseline          current           change")
    table = lines[head : head + 6]
    assert [line[:17] for line in table[1:]] == [
        "  scan           ",
        "  mode           ",
        "  probe library  ",
        "  AIVSS          ",
        "  band           ",
    ]
    at = table[0].index("current")
    assert table[4][at:].startswith("71") and table[4][: at - 2].rstrip().endswith("80")
    assert table[4].rstrip().endswith("-9")
    asi = lines.index("Score by ASI category")
    column = {line.index(" ", 4) for line in lines[asi + 2 : asi + 12]}
    assert len(column) == 1  # every category row's score starts under the header's


def test_colour_only_when_the_style_allows_it() -> None:
    c = _comparison()
    assert "\x1b[" not in render_text(c, PLAIN)
    coloured = render_text(c, Style(io.StringIO(), enabled=True))
    assert "\x1b[1;31mResult: regression.\x1b[0m" in coloured
    assert "\x1b[1;31mcritical" in coloured  # the new critical finding's severity
    fine = render_text(compare(scan(), scan()), Style(io.StringIO(), enabled=True))
    assert fine.startswith("\x1b[1;32mResult: no regression.\x1b[0m\n")


def test_agent_text_is_one_inert_line() -> None:
    f = finding(1).model_copy(update={"summary": HOSTILE})
    text = render_text(compare(scan(), scan([f])), PLAIN)
    assert_terminal_inert(text)
    row = next(line for line in text.splitlines() if line.startswith("  high"))
    assert row.endswith("done | x ::error::pwnedredevil `tool_call` **b**")


def test_long_lists_stop_with_a_count() -> None:
    cur = scan([finding(i) for i in range(7)])
    text = render_text(compare(scan(), cur), PLAIN, max_rows=5)
    assert sum(1 for line in text.splitlines() if line.startswith("  high")) == 5
    assert "  … and 2 more (see --output json)" in text
