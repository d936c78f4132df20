"""What redaction knows by its shape alone: API keys and tokens, emails, phones, card numbers.

Besides the named secrets it is given, redaction replaces every match of :data:`PATTERNS`: API
keys and tokens (``sk-...``, ``Bearer ...``, AWS, GitHub, Google, Slack, JWT, PEM private keys),
emails, phone numbers and Luhn-valid card numbers. Emails on reserved test domains (RFC 2606 /
RFC 6761: ``example.com``, ``example.org``, ``example.net``, ``*.test``, ``*.invalid``,
``*.example``, ``*.localhost``) and the phone numbers reserved for fiction stay readable: attack
probes address their fake attackers there and a report must show where the agent sent data.

Every string of every attempt is read, most of them innocent, so each pattern has a quick
search that finds something in every text it can match in, and all of them together are one
RE2 search (:func:`nothing_to_find`) that clears most strings at C speed.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import re2

RESERVED_EMAIL_DOMAINS = ("example.com", "example.org", "example.net")
RESERVED_EMAIL_TLDS = ("test", "invalid", "example", "localhost")


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
class Pattern:
    kind: str
    regex: re.Pattern[str]
    # A much cheaper search that finds something in every text ``regex`` can match in: most
    # strings of a transcript are skipped at C speed (every attempt is redacted).
    quick: re.Pattern[str]
    group: int = 0
    valid: Callable[[str], bool] | None = None


# Priority order: when two matches overlap, the earlier pattern wins.
PATTERNS: tuple[Pattern, ...] = (
    Pattern(
        "PRIVATE_KEY",
        quick=re.compile("PRIVATE KEY-----"),
        # The body never crosses another BEGIN: a reply made of BEGIN lines alone would
        # otherwise be read to its end once per line, quadratic (0.3 s on 32 KiB, 21 s on
        # 256 KiB); this way each line is read once (bench/bench_hostile.py).
        regex=re.compile(
            r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----(?:(?!-----BEGIN )[\s\S])*?"
            r"-----END [A-Z0-9 ]*PRIVATE KEY-----"
        ),
    ),
    Pattern(
        "GITHUB_TOKEN",
        quick=re.compile("gh[pousr]_|github_pat_"),
        regex=re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{36,255}|github_pat_[A-Za-z0-9_]{22,255})\b"),
    ),
    Pattern(
        "AWS_KEY",
        quick=re.compile("AKIA|ASIA|ABIA|ACCA"),
        regex=re.compile(r"\b(?:AKIA|ASIA|ABIA|ACCA)[0-9A-Z]{16}\b"),
    ),
    Pattern(
        "AWS_SECRET",
        quick=re.compile("(?i:secret)"),
        regex=re.compile(
            r"(?i)\b(?:aws_?secret_?access_?key|aws_?secret|secret_?access_?key)"
            r"\W{0,4}[:=]\s*[\"']?([A-Za-z0-9/+=]{40})(?![A-Za-z0-9/+=])"
        ),
        group=1,
    ),
    Pattern(
        "API_KEY",
        quick=re.compile("sk-|AIza|xox"),
        regex=re.compile(
            r"\bsk-[A-Za-z0-9_-]{16,}"
            r"|\bAIza[0-9A-Za-z_-]{35}\b"
            r"|\bxox[abposr]-[A-Za-z0-9-]{10,}"
        ),
    ),
    Pattern(
        "TOKEN",
        quick=re.compile("eyJ"),
        regex=re.compile(r"\beyJ[A-Za-z0-9_-]{5,}\.eyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{10,}"),
    ),
    Pattern(
        "TOKEN",
        quick=re.compile("(?i:bearer)"),
        regex=re.compile(r"(?i)\bbearer\s+([A-Za-z0-9._~+/-]{8,}=*)"),
        group=1,
        valid=_token_ok,
    ),
    Pattern(
        "EMAIL",
        quick=re.compile("@"),
        regex=re.compile(
            r"(?<![\w.+-])[A-Za-z0-9._%+-]+@(?:[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?\.)+"
            r"[A-Za-z]{2,63}\b"
        ),
        valid=_email_ok,
    ),
    Pattern(
        "CARD",
        # The first thirteen digits of any match (a string of short numbers is skipped).
        quick=re.compile(r"\d(?:[ -]?\d){12}"),
        regex=re.compile(r"(?<![\d.])\d(?:[ -]?\d){12,18}(?![\d])"),
        valid=_card_ok,
    ),
    Pattern(
        "PHONE",
        # What every match holds: three digits, a separator, three digits, or + and eight
        # digits (a bare number, an id or a date is skipped).
        quick=re.compile(r"\d{3}[\s.-]\d{3}|\+\d{8}"),
        regex=re.compile(
            # not inside a longer run of digit groups (card numbers, ids, dates)
            r"(?<![\w+.])(?<!\d[\s.-])(?:\+\d{1,3}[\s.-]?)?(?:\(\d{2,4}\)[\s.-]?|\d{2,4}[\s.-])"
            r"\d{3,4}[\s.-]\d{3,4}(?!\w)(?![\s.-]\d)"
            r"|(?<![\w+])\+\d{8,15}(?!\d)"
        ),
        valid=_phone_ok,
    ),
)


# One search that finds something in every text any pattern can match in.
ANY_QUICK = re.compile("|".join(f"(?:{p.quick.pattern})" for p in PATTERNS))

# Python's ``\s`` in a str pattern, as an RE2 class body: str.isspace() is the control
# characters below and Unicode's separators (tests/models/test_redaction_quick.py holds the two
# sets equal). RE2's own ``\s`` and ``\d`` are ASCII only.
PY_SPACE = r"\t-\r\x1c-\x1f\x85\p{Z}"


def re2_quick(pattern: str) -> Any:
    r"""``pattern`` (a quick search: literals, classes, ``\d``, ``\s`` inside a class,
    ``(?i:...)``) as an RE2 search over UTF-8 that matches every text Python's matches.

    RE2 reads a text once whatever the number of alternatives; Python's engine tries each of
    them at every position (36 us against 4 us for a transcript's 700 characters)."""
    translated = pattern.replace(r"\d", r"\p{Nd}").replace(r"[\s", "[" + PY_SPACE)
    if re.search(r"\\[swbWSDB]", translated.replace(r"\\", "")):
        raise ValueError(f"no RE2 translation for the quick search {pattern!r}")
    return re2.compile(translated.encode("ascii"))


_ANY_QUICK_RE2 = re2_quick(ANY_QUICK.pattern)


def nothing_to_find(text: str) -> bool:
    """Whether no pattern can match in ``text`` (``ANY_QUICK`` finds nothing), read by RE2.

    Lone surrogates pass through as bytes RE2 matches nothing with; no quick search could
    match one anyway."""
    return _ANY_QUICK_RE2.search(text.encode("utf-8", "surrogatepass")) is None
