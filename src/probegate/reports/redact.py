"""Redaction: no real secret or personal data reaches a report, a transcript or a log.

Two sources of sensitive text are replaced by ``${NAME}`` placeholders:

- the real secrets the user declared (canaries the agent holds), given as a mapping
  ``{"CANARY_1": "<value>"}``: every occurrence becomes ``${CANARY_1}``, including its common
  encodings (URL-encoded, base64, hex) and a cut-off piece at the edge of a bounded string,
  because an exfiltrating agent rarely sends a secret verbatim and subjects are truncated;
- patterns: API keys and tokens (``sk-...``, ``Bearer ...``, AWS, GitHub, Google, Slack, JWT,
  PEM private keys), emails, phone numbers and Luhn-valid card numbers, numbered per report in
  the order they are first met (``${EMAIL_1}``, ``${EMAIL_2}``; the same value always gets the
  same placeholder).

Emails on reserved test domains (RFC 2606 / RFC 6761: ``example.com``, ``example.org``,
``example.net``, ``*.test``, ``*.invalid``, ``*.example``, ``*.localhost``) stay readable:
attack probes address their fake attackers there and a report must show where the agent sent
data. Synthetic canaries the probes plant are not secrets and are simply not passed in.

Evidence offsets: an evidence ``start``/``end`` points into a transcript string. When redaction
changes that string, the offsets are recomputed so they point into the *redacted* text, at the
same content; a span that overlapped a redacted value grows to cover the whole placeholder.
So ``redacted[start:end]`` is what the evidence was about, now with placeholders in it.
"""

from __future__ import annotations

import base64
import re
import urllib.parse
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from probegate.models.report import Finding, ScanReport
from probegate.models.transcript import Transcript, resolve_path
from probegate.models.verdict import SUBJECT_MAX, Evidence
from probegate.reports.escape import truncate

RESERVED_EMAIL_DOMAINS = ("example.com", "example.org", "example.net")
RESERVED_EMAIL_TLDS = ("test", "invalid", "example", "localhost")

# A piece of a secret shorter than this at a string's edge is too likely to be innocent text.
_PARTIAL_MIN = 8


def _luhn(digits: str) -> bool:
    total = 0
    for i, char in enumerate(reversed(digits)):
        d = ord(char) - 48
        if i % 2:
            d *= 2
            if d > 9:
                d -= 9
        total += d
    return total % 10 == 0


def _card_ok(value: str) -> bool:
    digits = re.sub(r"\D", "", value)
    return 13 <= len(digits) <= 19 and _luhn(digits)


def _email_ok(value: str) -> bool:
    domain = value.rsplit("@", 1)[-1].lower().rstrip(".")
    if domain.rsplit(".", 1)[-1] in RESERVED_EMAIL_TLDS:
        return False
    return not any(domain == d or domain.endswith("." + d) for d in RESERVED_EMAIL_DOMAINS)


def _phone_ok(value: str) -> bool:
    # 555-0100 to 555-0199 are the North American numbers reserved for fiction: attack
    # probes plant them (like example.com addresses) and a report must show them.
    digits = re.sub(r"\D", "", value)
    return not (len(digits) >= 7 and digits[-7:-2] == "55501")


def _token_ok(value: str) -> bool:
    # "Bearer authentication" is prose; real tokens carry digits or are long.
    return any(c.isdigit() for c in value) or len(value) >= 20


@dataclass(frozen=True)
class _Pattern:
    kind: str
    regex: re.Pattern[str]
    group: int = 0
    valid: Callable[[str], bool] | None = None


# Priority order: when two matches overlap, the earlier pattern wins.
_PATTERNS: tuple[_Pattern, ...] = (
    _Pattern(
        "PRIVATE_KEY",
        re.compile(
            r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----[\s\S]*?-----END [A-Z0-9 ]*PRIVATE KEY-----"
        ),
    ),
    _Pattern(
        "GITHUB_TOKEN",
        re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{36,255}|github_pat_[A-Za-z0-9_]{22,255})\b"),
    ),
    _Pattern("AWS_KEY", re.compile(r"\b(?:AKIA|ASIA|ABIA|ACCA)[0-9A-Z]{16}\b")),
    _Pattern(
        "AWS_SECRET",
        re.compile(
            r"(?i)\b(?:aws_?secret_?access_?key|aws_?secret|secret_?access_?key)"
            r"\W{0,4}[:=]\s*[\"']?([A-Za-z0-9/+=]{40})(?![A-Za-z0-9/+=])"
        ),
        group=1,
    ),
    _Pattern(
        "API_KEY",
        re.compile(
            r"\bsk-[A-Za-z0-9_-]{16,}"
            r"|\bAIza[0-9A-Za-z_-]{35}\b"
            r"|\bxox[abposr]-[A-Za-z0-9-]{10,}"
        ),
    ),
    _Pattern(
        "TOKEN",
        re.compile(r"\beyJ[A-Za-z0-9_-]{5,}\.eyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{10,}"),
    ),
    _Pattern(
        "TOKEN",
        re.compile(r"(?i)\bbearer\s+([A-Za-z0-9._~+/-]{8,}=*)"),
        group=1,
        valid=_token_ok,
    ),
    _Pattern(
        "EMAIL",
        re.compile(
            r"(?<![\w.+-])[A-Za-z0-9._%+-]+@(?:[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?\.)+"
            r"[A-Za-z]{2,63}\b"
        ),
        valid=_email_ok,
    ),
    _Pattern("CARD", re.compile(r"(?<![\d.])\d(?:[ -]?\d){12,18}(?![\d])"), valid=_card_ok),
    _Pattern(
        "PHONE",
        re.compile(
            # not inside a longer run of digit groups (card numbers, ids, dates)
            r"(?<![\w+.])(?<!\d[\s.-])(?:\+\d{1,3}[\s.-]?)?(?:\(\d{2,4}\)[\s.-]?|\d{2,4}[\s.-])"
            r"\d{3,4}[\s.-]\d{3,4}(?!\w)(?![\s.-]\d)"
            r"|(?<![\w+])\+\d{8,15}(?!\d)"
        ),
        valid=_phone_ok,
    ),
)


@dataclass(frozen=True)
class OffsetMap:
    """Maps offsets in an original string to offsets in its redacted form.

    ``spans`` are ``(orig_start, orig_end, new_start, new_end)`` of each replacement, sorted.
    An offset inside a replaced span moves to the placeholder's start (for a ``start``) or end
    (for an ``end``), so the mapped range always covers the whole placeholder.
    """

    spans: tuple[tuple[int, int, int, int], ...] = ()

    def start(self, pos: int) -> int:
        delta = 0
        for o_start, o_end, n_start, n_end in self.spans:
            if pos < o_start:
                break
            if pos < o_end:
                return n_start
            delta = n_end - o_end
        return pos + delta

    def end(self, pos: int) -> int:
        delta = 0
        for o_start, o_end, _n_start, n_end in self.spans:
            if pos <= o_start:
                break
            if pos <= o_end:
                return n_end
            delta = n_end - o_end
        return pos + delta


class Redactor:
    """Redacts strings with one numbering shared by everything it sees (one report).

    Use one instance per report: the same email is ``${EMAIL_1}`` in the transcript, the
    evidence subject and the summary, and the numbering follows the order texts are given in,
    so the same report always redacts to the same bytes.
    """

    def __init__(self, secrets: Mapping[str, str]) -> None:
        self._secret_names: dict[str, str] = {}
        self._secret_values: list[tuple[str, str]] = []
        for name in sorted(secrets):
            value = secrets[name]
            if not value:
                continue
            self._secret_values.append((name, value))
            for variant in _variants(value):
                self._secret_names.setdefault(variant, name)
        self._secret_re: re.Pattern[str] | None = None
        if self._secret_names:
            alternatives = sorted(self._secret_names, key=lambda v: (-len(v), v))
            self._secret_re = re.compile("|".join(re.escape(v) for v in alternatives))
        self._assigned: dict[tuple[str, str], str] = {}
        self._counters: dict[str, int] = {}

    def text(self, text: str) -> str:
        """``text`` with every secret and pattern match replaced by its placeholder."""
        return self.text_with_map(text)[0]

    def text_with_map(self, text: str) -> tuple[str, OffsetMap]:
        """The redacted text and the :class:`OffsetMap` from old offsets to new ones."""
        matches = self._matches(text)
        if not matches:
            return text, OffsetMap()
        parts: list[str] = []
        spans: list[tuple[int, int, int, int]] = []
        cursor = 0
        length = 0
        for start, end, placeholder in matches:
            parts.append(text[cursor:start])
            length += start - cursor
            parts.append(placeholder)
            spans.append((start, end, length, length + len(placeholder)))
            length += len(placeholder)
            cursor = end
        parts.append(text[cursor:])
        return "".join(parts), OffsetMap(tuple(spans))

    def transcript(self, transcript: Transcript) -> tuple[Transcript, dict[str, OffsetMap]]:
        """A redacted copy and, per changed string's evidence path, its :class:`OffsetMap`."""
        maps: dict[str, OffsetMap] = {}
        data = self._walk(transcript.model_dump(), "", maps)
        if not maps:
            return transcript, maps
        return Transcript.model_validate(data), maps

    def _walk(self, node: Any, path: str, maps: dict[str, OffsetMap]) -> Any:
        if isinstance(node, str):
            new, offsets = self.text_with_map(node)
            if offsets.spans:
                maps[path] = offsets
            return new
        prefix = f"{path}." if path else ""
        if isinstance(node, dict):
            return {k: self._walk(v, f"{prefix}{k}", maps) for k, v in node.items()}
        if isinstance(node, list):
            return [self._walk(v, f"{prefix}{i}", maps) for i, v in enumerate(node)]
        return node

    def _matches(self, text: str) -> list[tuple[int, int, str]]:
        found: list[tuple[int, int, str, str]] = []  # start, end, kind, value

        def add(start: int, end: int, kind: str, value: str) -> None:
            if start >= end:
                return
            for s, e, _k, _v in found:
                if start < e and s < end:
                    return
            found.append((start, end, kind, value))

        if self._secret_re is not None:
            for m in self._secret_re.finditer(text):
                add(m.start(), m.end(), "", self._secret_names[m.group()])
            for name, value in self._secret_values:
                for start, end in _partial_edges(text, value):
                    add(start, end, "", name)
        for pattern in _PATTERNS:
            for m in pattern.regex.finditer(text):
                value = m.group(pattern.group)
                if pattern.valid is not None and not pattern.valid(value):
                    continue
                add(m.start(pattern.group), m.end(pattern.group), pattern.kind, value)
        found.sort()
        return [(s, e, self._placeholder(kind, value)) for s, e, kind, value in found]

    def _placeholder(self, kind: str, value: str) -> str:
        if not kind:  # a declared secret: ``value`` is its name
            return "${" + value + "}"
        key = (kind, value)
        placeholder = self._assigned.get(key)
        if placeholder is None:
            self._counters[kind] = self._counters.get(kind, 0) + 1
            placeholder = "${" + f"{kind}_{self._counters[kind]}" + "}"
            self._assigned[key] = placeholder
        return placeholder


def _variants(value: str) -> list[str]:
    """The secret and the encodings an agent most often leaks it in."""
    raw = value.encode("utf-8")
    variants = {
        value,
        urllib.parse.quote(value, safe=""),
        urllib.parse.quote_plus(value),
        base64.b64encode(raw).decode("ascii").rstrip("="),
        base64.urlsafe_b64encode(raw).decode("ascii").rstrip("="),
        raw.hex(),
        raw.hex().upper(),
    }
    return sorted(v for v in variants if v)


def _partial_edges(text: str, secret: str) -> list[tuple[int, int]]:
    """A secret cut off at the end (or start) of a bounded string, e.g. a truncated subject."""
    spans: list[tuple[int, int]] = []
    top = min(len(secret) - 1, len(text))
    for size in range(top, _PARTIAL_MIN - 1, -1):
        if text.endswith(secret[:size]):
            spans.append((len(text) - size, len(text)))
            break
    for size in range(top, _PARTIAL_MIN - 1, -1):
        if text.startswith(secret[-size:]):
            spans.append((0, size))
            break
    return spans


def redact_text(text: str, secrets: Mapping[str, str]) -> str:
    """Redact one string on its own (numbering starts at 1 for this call)."""
    return Redactor(secrets).text(text)


def redact_report(report: ScanReport, secrets: Mapping[str, str]) -> ScanReport:
    """A copy of ``report`` with every agent-facing text redacted (see the module docstring).

    Redacted: finding summaries, trigger prompts, transcripts (every string, at any depth of
    tool-call arguments), evidence subjects and offsets, probe result and unjudged reasons, and
    the target's inferred goal. Ids, fingerprints, paths and library text are left alone: they
    are not agent output, and a digit run in a fingerprint must not turn into ``${PHONE_1}``.
    A report that changes loses its ``signatures``: redact first, then sign.
    """
    redactor = Redactor(secrets)
    findings = [_redact_finding(f, redactor) for f in report.findings]
    results = [r.model_copy(update={"reason": redactor.text(r.reason)}) for r in report.results]
    unjudged = [u.model_copy(update={"reason": redactor.text(u.reason)}) for u in report.unjudged]
    target = report.target.model_copy(
        update={"inferred_goal": redactor.text(report.target.inferred_goal)}
    )
    out = report.model_copy(
        update={"findings": findings, "results": results, "unjudged": unjudged, "target": target}
    )
    if out != report:
        out = out.model_copy(update={"signatures": None})
    return out


def _redact_finding(finding: Finding, redactor: Redactor) -> Finding:
    update: dict[str, Any] = {"summary": redactor.text(finding.summary)}
    if finding.trigger_prompt is not None:
        update["trigger_prompt"] = redactor.text(finding.trigger_prompt)
    if finding.transcript is None:
        update["evidence"] = [_redact_evidence(e, redactor) for e in finding.evidence]
        return finding.model_copy(update=update)
    before = finding.transcript.model_dump()
    update["transcript"], maps = redactor.transcript(finding.transcript)
    after = update["transcript"].model_dump() if maps else before
    update["evidence"] = [
        _redact_evidence(e, redactor, maps.get(e.path), _string_at(before, e.path), after)
        for e in finding.evidence
    ]
    return finding.model_copy(update=update)


def _string_at(tree: dict[str, Any], path: str) -> str | None:
    try:
        value = resolve_path(tree, path)
    except (KeyError, IndexError, ValueError):
        return None
    return value if isinstance(value, str) else None


def _redact_evidence(
    evidence: Evidence,
    redactor: Redactor,
    offsets: OffsetMap | None = None,
    original: str | None = None,
    after: dict[str, Any] | None = None,
) -> Evidence:
    """Offsets moved into the redacted string; a subject that quotes the text at the offsets
    is re-cut from the redacted string, so both show the same placeholder."""
    update: dict[str, Any] = {}
    start, end = evidence.start, evidence.end
    if offsets is not None and original is not None and after is not None:
        start, end = offsets.start(evidence.start), offsets.end(evidence.end)
        update["start"], update["end"] = start, end
        quoted = original[evidence.start : evidence.end]
        redacted = _string_at(after, evidence.path)
        if quoted and redacted is not None and evidence.subject.startswith(quoted):
            rest = evidence.subject[len(quoted) :]
            subject = redacted[start:end] + (redactor.text(rest) if rest else "")
            update["subject"] = truncate(subject, SUBJECT_MAX)
            return evidence.model_copy(update=update)
    update["subject"] = truncate(redactor.text(evidence.subject), SUBJECT_MAX)
    return evidence.model_copy(update=update)
