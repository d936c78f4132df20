"""Escaping shared by the emitters: agent text is hostile input, whatever format it lands in.

An agent under attack is, by construction, following someone else's instructions, so anything
it wrote (and anything an attack probe wrote) may try to break out of the document it is shown
in: an HTML ``<script>``, an XML ``]]>``, a Markdown table pipe, a GitHub workflow command
(``::error::`` at the start of a log line) or an ANSI escape that rewrites a terminal. Every
emitter runs agent text through one of these helpers; nothing here knows about a report.
"""

from __future__ import annotations

import html
import json
import math
import re
from typing import Any

import re2

# Bounded text is cut the one way evidence subjects are (re-exported for the emitters).
from probegate.models.verdict import truncate as truncate

# What untrusted text must never hold in a terminal, a log or a document, defined once
# (defuse_commands is re-exported for the emitters that print to CI logs).
from probegate.terminal import CONTROL_CHARS, JSON_UNSAFE_CHARS, json_text, strip_controls
from probegate.terminal import defuse_commands as defuse_commands

# What XML 1.0 cannot carry at all, even escaped (section 2.2 of the spec): every C0 control
# but TAB/LF/CR, surrogates, U+FFFE and U+FFFF.
_XML_ILLEGAL = re.compile(r"[^\x09\x0a\x0d\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")

_MD_SPECIAL = re.compile(r"([\\`*_\[\]|~])")
# What GitHub's Markdown turns into a link with no link syntax at all (its autolink
# extension): a scheme's "://", a "www." host, an email address; and "@name" mentions.
_MD_AUTOLINK = re.compile(r"://|(?i:\bwww)\.|@")
_MD_AUTOLINK_DEFUSED = {"://": "&#58;//", "@": "&#64;"}
_MD_LINE_START = frozenset("#>+-=")
# Anything md_text would change but strip and the line-start escape: a control character, what
# html.escape or _MD_SPECIAL escapes, a line break, "::" and what _MD_AUTOLINK matches (a
# superset: "www." anywhere). Text without any is written as it is, after those two.
_MD_DIRTY = re.compile(rf"[&<>\\`*_\[\]|~@\n{CONTROL_CHARS}]|::|://|(?i:www)\.")
# What md_code writes as an entity (after html.escape, so no entity it wrote is touched).
_MD_CODE_ENTITIES = str.maketrans({c: f"&#{ord(c)};" for c in "|`\\:[]*~@"})
# Anything md_code would change but the cut: a control character, what html.escape or
# _MD_CODE_ENTITIES writes as an entity, a line break or tab, and a "www." host.
_MD_CODE_DIRTY = re.compile(rf"[&<>\"'|`\\:\[\]*~@\n\t{CONTROL_CHARS}]|(?i:www)\.")


def clean_text(text: str) -> str:
    """Agent text fit for any document: no ANSI escapes, control characters, bidi controls or
    lone surrogates (:func:`probegate.terminal.strip_controls`, the one set every sink strips).

    TAB and LF survive; CR is dropped so a ``\\r`` cannot hide the start of a line from a
    reader while a log parser still sees it.
    """
    return strip_controls(text)


_XML_DIRTY = re.compile(rf"[{CONTROL_CHARS}\ufffe\uffff]")
_HTML_DIRTY = re.compile(rf"[&<>\"'{CONTROL_CHARS}]")
_SARIF_DIRTY = re.compile(rf"[\\\[\]{CONTROL_CHARS}]")


def xml_text(text: str) -> str:
    """Text an XML 1.0 serializer can escape: ANSI and characters XML cannot hold removed.

    The serializer (``xml.etree``) still does the ``&``/``<``/``>`` escaping, which is what
    keeps a ``]]>`` in agent text harmless.
    """
    if _XML_DIRTY.search(text) is None:  # the common case
        return text
    return _XML_ILLEGAL.sub("", clean_text(text))


def log_xml_text(text: str) -> str:
    """:func:`xml_text` for XML a CI log may print (JUnit): no line starts a workflow command.

    The command check runs last, on the text as it will stand: stripping a control character
    first could bring a ``::`` to the start of a line (``"\\n\\x00::error::"``).
    """
    return defuse_commands(xml_text(text))


# The entities ``xml.etree`` writes: in character data, and also in a double-quoted attribute
# value (the quote, and TAB, LF and CR, which a parser would otherwise turn into spaces: XML 1.0
# section 3.3.3).
_CHAR_ENTITIES = (("&", "&amp;"), ("<", "&lt;"), (">", "&gt;"))
_ATTRIBUTE_ENTITIES = (('"', "&quot;"), ("\r", "&#13;"), ("\n", "&#10;"), ("\t", "&#09;"))


def _entities(text: str, table: tuple[tuple[str, str], ...]) -> str:
    for char, entity in table:
        if char in text:  # most text has none: the test is cheaper than the copy
            text = text.replace(char, entity)
    return text


def xml_chars(text: str) -> str:
    """:func:`xml_text` output as XML character data: ``&``, ``<`` and ``>`` as entities, so a
    ``]]>`` or a tag in agent text stays text. These are the entities ``xml.etree`` writes, so a
    document written by hand reads as one it serialised."""
    return _entities(text, _CHAR_ENTITIES)


def xml_attribute(text: str) -> str:
    """:func:`xml_text` output as a double-quoted XML attribute value: :func:`xml_chars`, the
    quote, and TAB, LF and CR as character references, as ``xml.etree`` writes them."""
    return _entities(_entities(text, _CHAR_ENTITIES), _ATTRIBUTE_ENTITIES)


def marked_lines(text: str) -> str:
    """Agent text on a single line with its line breaks shown as ``⏎`` (unlike
    :func:`probegate.terminal.one_line`, which flattens and cuts text for the terminal): no
    command at its start."""
    text = clean_text(text)
    if "\n" in text or "\t" in text:
        text = text.replace("\t", " ")
        text = " ⏎ ".join(part.strip() for part in text.split("\n") if part.strip())
    else:
        text = text.strip()
    return defuse_commands(text)


def html_text(text: str) -> str:
    """Agent text as inert HTML character data or attribute value (quotes escaped too).

    ``::`` is written ``&#58;&#58;``: a browser shows the same text, and a CI log that prints
    the page (``probegate report --output html --output-path -``) reads no workflow command.
    """
    if _HTML_DIRTY.search(text) is None and "::" not in text:  # the common case
        return text
    return html.escape(clean_text(text), quote=True).replace("::", "&#58;&#58;")


def md_text(text: str, *, limit: int | None = None) -> str:
    """Agent text as one inert line of GitHub-flavoured Markdown (safe in a table cell).

    HTML is entity-escaped so tags render as text; Markdown punctuation that could open code,
    emphasis, links or table cells is backslash-escaped; newlines become ``<br>`` so the text
    never starts a line of its own, and ``::`` becomes ``&#58;&#58;`` so that even a log that
    prints the summary cannot read a GitHub workflow command out of it. What GitHub would
    link on its own (a bare ``https://...``, ``www.``, an address or an ``@mention``) has one
    character written as an entity: it reads the same and is no link.
    """
    if _MD_DIRTY.search(text) is None:  # the common case: plain words
        text = (text if limit is None else truncate(text, limit)).strip()
        return "\\" + text if text[:1] in _MD_LINE_START else text
    text = clean_text(text)
    if limit is not None:
        text = truncate(text, limit)
    text = html.escape(text, quote=False)
    text = _MD_SPECIAL.sub(r"\\\1", text)
    text = text.replace("::", "&#58;&#58;").strip()
    text = _MD_AUTOLINK.sub(_defuse_autolink, text)
    if text[:1] in _MD_LINE_START:  # would open a heading, quote or list inside a list item
        text = "\\" + text
    return "<br>".join(text.split("\n"))


def _defuse_autolink(match: re.Match[str]) -> str:
    found = match.group(0)
    return _MD_AUTOLINK_DEFUSED.get(found) or found[:-1] + "&#46;"


def md_code(text: str, *, limit: int | None = None) -> str:
    """Short agent text shown as inline code, e.g. an evidence subject.

    A code span cannot escape anything, so the text goes into ``<code>`` with HTML entities
    instead: backticks, pipes and tags stay literal and the span still cannot be closed early.
    Markdown is still read between HTML tags, so what would open a link or an image (``[``,
    ``]``), emphasis (``*``, ``~``) or a mention (``@``) is an entity too, and a ``www.`` host
    has its dot as one: GitHub would link it on its own.
    """
    if _MD_CODE_DIRTY.search(text) is None:  # the common case: an id
        return f"<code>{text if limit is None else truncate(text, limit)}</code>"
    text = clean_text(text)
    if limit is not None:
        text = truncate(text, limit)
    text = html.escape(text, quote=True).translate(_MD_CODE_ENTITIES)
    text = _MD_AUTOLINK.sub(_defuse_autolink, text)
    text = text.replace("\n", "⏎").replace("\t", " ")
    return f"<code>{text}</code>"


def sarif_text(text: str) -> str:
    """Plain text for a SARIF message: no control characters, literal brackets escaped.

    SARIF reads ``[text](id)`` in a message as an embedded link (section 3.11.6), so literal
    square brackets and backslashes are escaped with a backslash as the spec requires.
    """
    if _SARIF_DIRTY.search(text) is None:  # the common case: one scan, nothing to change
        return text
    text = clean_text(text)
    return text.replace("\\", "\\\\").replace("[", "\\[").replace("]", "\\]")


def _utf8_class(chars: str) -> Any:
    r"""A character class of Python's (``\xHH``, ``\uHHHH`` and ranges of them) as an RE2
    search over UTF-8 bytes. Surrogates cannot stand in UTF-8 (no encoder writes one), so
    their range is left out; anything else RE2 would read otherwise is refused."""
    body = chars.replace(r"\ud800-\udfff", "")
    body = re.sub(r"\\u([0-9a-f]{4})", r"\\x{\1}", body)
    if re.search(r"\\[^x-]|\\x\{d[89a-f]", body):
        raise ValueError(f"no RE2 translation for the class {chars!r}")
    return re2.compile(f"[{body}]".encode("ascii"))


# json_text's class (terminal.JSON_UNSAFE_CHARS), read by RE2 in the encoded bytes.
_JSON_UNSAFE_UTF8 = _utf8_class(JSON_UNSAFE_CHARS)


def json_bytes(data: bytes) -> bytes:
    """A JSON document as probegate writes it (scan.json, SARIF, a comparison, scenario
    results), fit to be printed: what a terminal or a log would act on inside a string (DEL,
    C1, bidi controls, U+2028/9) is its ``\\uXXXX`` escape (:func:`probegate.terminal.json_text`),
    so every parser reads the very same values and ``cat`` shows them inert.

    Searched in the bytes: a report's text is rarely all ASCII (an accent, a curly quote), and
    decoding 23 MB to search it and encoding it again took 0.13 s of a 10,000-finding report.
    """
    if (data.isascii() and b"\x7f" not in data) or _JSON_UNSAFE_UTF8.search(data) is None:
        return data  # the common case: nothing to escape
    return json_text(data.decode("utf-8")).encode("utf-8")


def number(value: float | int) -> str:
    """A number written exactly as the JSON report writes it, so every format agrees.

    ``json.dumps`` writes a finite float or a plain int as its ``repr``; that is taken
    directly, because setting up an encoder per number was a tenth of the HTML report's time.
    Anything else (a bool, NaN, infinities) goes through ``json.dumps`` itself.
    """
    kind = type(value)
    if kind is int or (kind is float and math.isfinite(value)):
        return repr(value)
    return json.dumps(value)
