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
from tests.factories import finding, probe_of, scan, suppressed
from tests.reports.inert import assert_terminal_inert

PLAIN = Style(io.StringIO(), enabled=False)
HOSTILE = "done | x\n::error::pwned\x1b[31mred\u202eevil\r\n`tool_call` **b**"


def _comparison() -> Comparison:
    base = scan([finding(1), finding(2), finding(3)], aivss=80)
    cur = scan(
        [finding(1), finding(4, Severity.CRITICAL), suppressed(finding(5), "accepted: manual")],
        resisted=[probe_of(2)],
        aivss=71,
    )
    return compare(base, cur)


def test_text_says_what_the_markdown_says_without_markdown() -> None:
    c = _comparison()
    text = render_text(c, PLAIN)
    md = render_diff(c)
    assert text.startswith(
        "Result: regression. 1 new finding(s) not in the baseline; AIVSS dropped by 9"
    )
    assert "|" not in text and "**" not in text and "###" not in text and "\\" not in text
    for title in ("New findings (1)", "New findings, suppressed (1)", "Fixed findings (1)"):
        assert f"### {title}" in md
        assert f"\n{title}\n" in text
    assert "  new 1 · new but suppressed 1 · fixed 1 · persisting 1 (0 suppressed)" in text
    assert "    suppressed: accepted: manual" in text
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
    row = next(line for line in text.splitlines() if probe_of(1) in line)
    assert row.endswith("done | x ::error::pwnedredevil `tool_call` **b**")


def test_long_lists_stop_with_a_count() -> None:
    cur = scan([finding(i) for i in range(7)])
    text = render_text(compare(scan(), cur), PLAIN, max_rows=5)
    assert sum(1 for line in text.splitlines() if "asi01.synthetic-" in line) == 5
    assert "  … and 2 more (see --output json)" in text
