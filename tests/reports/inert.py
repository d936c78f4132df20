"""What "inert" means in each place untrusted text lands, as checks a test runs on real output.

Each check reads the output the way its consumer does (an HTML parser, a CommonMark parser with
GitHub's table extension, an XML parser, a JSON parser, a log split into lines as the runner
splits it) and fails on anything agent text could have made of it: markup, a link, an image, a
broken table, a workflow command, a terminal escape or a bidi override.
"""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from collections.abc import Iterable
from html.parser import HTMLParser

from markdown_it import MarkdownIt
from markdown_it.token import Token

# Characters no output may carry raw: escape sequences start with ESC or the C1 CSI (U+009B),
# NUL/BEL/VT/DEL are controls, CR hides a line's start, U+202E and U+2066 reorder text.
RAW = ("\x1b", "\x9b", "\x00", "\x07", "\x0b", "\x7f", "\r", "\u202e", "\u2066")
# What GitHub's runner and Python's str.splitlines() split log lines on.
_LINE_BREAKS = re.compile(r"\r\n|[\r\n\v\f\x1c\x1d\x1e\x85\u2028\u2029]")
# Markup probegate's Markdown emitters write themselves; agent text writes none.
OUR_MARKDOWN_HTML = frozenset({"<br>", "<code>", "</code>", "<b>", "</b>"})
_MARKDOWN = MarkdownIt("commonmark").enable("table").enable("strikethrough")
# What GitHub's autolink extension links with no scheme at all.
_WWW = re.compile(r"(?i)\bwww\.")
# A SARIF message's embedded link (section 3.11.6): [text](id) with unescaped brackets.
_SARIF_LINK = re.compile(r"(?<!\\)\[[^\]]*(?<!\\)\]\(")


def raw_controls(text: str) -> list[str]:
    """The characters of :data:`RAW` in ``text``, and any lone surrogate."""
    found = [repr(c) for c in RAW if c in text]
    return found + [repr(c) for c in text if "\ud800" <= c <= "\udfff"][:1]


def command_lines(text: str) -> list[str]:
    """Lines a GitHub runner would read as workflow commands."""
    return [line for line in _LINE_BREAKS.split(text) if line.lstrip().startswith("::")]


def assert_terminal_inert(text: str) -> None:
    """Terminal or CI log text: no escape, control or bidi character, no workflow command."""
    assert raw_controls(text) == [], raw_controls(text)
    assert command_lines(text) == [], command_lines(text)[:3]


def _walk(tokens: Iterable[Token]) -> Iterable[Token]:
    for token in tokens:
        yield token
        yield from _walk(token.children or [])


def assert_markdown_inert(text: str) -> None:
    """GitHub-flavoured Markdown: agent text makes no link, image, HTML or table cell of its own
    and starts no line (so no heading and no workflow command when the file is printed)."""
    assert_terminal_inert(text)
    tokens = list(_walk(_MARKDOWN.parse(text)))
    kinds = {t.type for t in tokens}
    assert "link_open" not in kinds and "image" not in kinds, "a link or an image"
    html = {t.content.strip() for t in tokens if t.type in ("html_inline", "html_block")}
    assert html <= OUR_MARKDOWN_HTML, html - OUR_MARKDOWN_HTML
    assert "://" not in text, "a bare URL GitHub would link"
    assert _WWW.search(text) is None, "a www. host GitHub would link"
    for block in re.split(r"\n\s*\n", text):
        rows = [r for r in block.splitlines() if r.startswith("|")]
        cells = {len(re.findall(r"(?<!\\)\|", row)) for row in rows}
        assert len(cells) <= 1, f"a table row with a cell of its own: {block[:300]!r}"


class _Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.scripts: list[str] = []
        self.urls: list[str] = []
        self.handlers: list[str] = []
        self._in_script = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self._in_script = tag == "script"
        for name, value in attrs:
            if name in ("src", "href", "action", "formaction", "srcset") and value:
                self.urls.append(value)
            if name.startswith("on"):
                self.handlers.append(name)

    def handle_data(self, data: str) -> None:
        if self._in_script:
            self.scripts.append(data)

    def handle_endtag(self, tag: str) -> None:
        self._in_script = False


def assert_html_inert(text: str, scripts: Iterable[str] = ()) -> None:
    """HTML: no script but ``scripts`` (ours), no element that loads or links, no handler,
    and, printed to a CI log, no workflow command."""
    assert_terminal_inert(text)
    parser = _Tags()
    parser.feed(text)
    assert parser.scripts == list(scripts)
    assert parser.urls == [] and parser.handlers == []


def assert_xml_inert(data: bytes) -> ET.Element:
    """XML: well formed, no raw control, and no text or attribute that starts a command line
    (CI reporters print failure text to the log)."""
    root = ET.fromstring(data)
    text = data.decode("utf-8")
    assert raw_controls(text) == [], raw_controls(text)
    for element in root.iter():
        for value in [element.text or "", element.tail or "", *element.attrib.values()]:
            assert command_lines(value) == [], (element.tag, value[:200])
    return root


def assert_json_inert(text: str) -> object:
    """JSON for a terminal: it parses, and the characters a terminal acts on are escaped."""
    data = json.loads(text)
    assert raw_controls(text) == [], raw_controls(text)
    assert "\u2028" not in text and "\u2029" not in text
    return data


def assert_sarif_message_inert(text: str) -> None:
    """A SARIF plain-text message: no raw control and no embedded link."""
    assert raw_controls(text) == [], raw_controls(text)
    assert _SARIF_LINK.search(text) is None, text[:300]
