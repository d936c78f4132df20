"""The proxy's request head reader: what an SDK sends is read, a line that is not a header
line is refused (a stray CR, LF or NUL would let a value smuggle a second header)."""

from __future__ import annotations

import pytest

from probegate.targets.model_proxy.incoming import Refused, parse_head

HEAD = (
    b"POST /pg-0123456789abcdef/v1/chat/completions HTTP/1.1\r\n"
    b"Host: 127.0.0.1:8790\r\n"
    b"Content-Type: application/json\r\n"
    b"Authorization: Bearer sk-agent\r\n"
    b"X-Stainless-Lang: python\r\n"
    b"Content-Length: 42"
)


def test_an_sdks_head_is_read() -> None:
    head = parse_head(HEAD)
    assert (head.method, head.length, head.chunked) == ("POST", 42, False)
    assert head.headers["x-stainless-lang"] == "python"


@pytest.mark.parametrize("stray", [b"\r", b"\n", b"\0", b"a\rb", b"\n\n"])
@pytest.mark.parametrize("where", ["value", "last value"])
def test_a_stray_line_break_or_nul_in_a_value_is_refused(stray: bytes, where: str) -> None:
    raw = (
        HEAD.replace(b"Bearer sk-agent", b"Bearer sk" + stray + b"agent")
        if where == "value"
        else HEAD + stray + b"0"
    )
    with pytest.raises(Refused) as refused:
        parse_head(raw)
    assert refused.value.status == 400


@pytest.mark.parametrize("line", [b"No colon here", b"Bad name: x", b": empty name"])
def test_a_line_that_is_not_name_colon_value_is_refused(line: bytes) -> None:
    with pytest.raises(Refused):
        parse_head(HEAD + b"\r\n" + line)
