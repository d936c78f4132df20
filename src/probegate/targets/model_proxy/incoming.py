"""What an agent sends the proxy, read strictly: a request head, then its body within a cap.

Anything on the machine can write to the proxy's port, so nothing is taken on trust and
nothing is read unbounded. The head is at most :data:`MAX_HEAD_BYTES` in at most
:data:`MAX_HEADERS` lines, each ``name: value`` with a token name and no folding. The body is
``Content-Length`` bytes (digits only: ``-1``, ``+5`` or ``1e3`` is not a length) or chunked
(hex sizes only), at most :data:`MAX_REQUEST_BYTES`, refused at the head or at the first size
that goes over, before any of it is read. A request with both (or two lengths, or a transfer
coding other than chunked) is refused: two readers of it could disagree on where it ends.
Every refusal is a :class:`Refused`, with the status the agent is answered and the count it
goes to (the report's ``proxy.refused``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

MAX_HEAD_BYTES = 64 * 1024
MAX_HEADERS = 128
MAX_REQUEST_BYTES = 16 * 1024 * 1024
# A chunk-size line (with its extensions) and the trailer section: no client needs more.
_MAX_SIZE_LINE = 1024
_MAX_TRAILER_BYTES = 8 * 1024

_TOKEN = re.compile(rb"[!#$%&'*+.^_`|~0-9A-Za-z-]+")
_REQUEST_LINE = re.compile(rb"([A-Z]{1,16}) (\S{1,8192}) HTTP/1\.([01])")
_DIGITS = re.compile(rb"[0-9]{1,12}")
_HEX = re.compile(rb"[0-9A-Fa-f]{1,8}")
# Bytes no header value may hold: a bare CR or LF could end it early for another reader.
_CONTROL = re.compile(rb"[\r\n\0]")


class Refused(Exception):
    """A request the proxy does not forward: ``status`` for the agent, ``counted`` the field of
    ``proxy.refused`` it adds to."""

    def __init__(self, status: int, counted: str, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.counted = counted
        self.message = message


def _invalid(message: str, status: int = 400) -> Refused:
    return Refused(status, "invalid", message)


@dataclass(frozen=True)
class Head:
    """A request head: the request line, and the headers by lowercased name."""

    method: str
    target: str
    headers: dict[str, str]
    length: int  # the body's, when not chunked
    chunked: bool
    keep_alive: bool
    expects_continue: bool

    @property
    def has_body(self) -> bool:
        return self.chunked or self.length > 0


def parse_head(raw: bytes) -> Head:
    """The head ``raw`` holds (without its blank line), or :class:`Refused` (400, or 413 for
    a body over the cap, 501 for a transfer coding the proxy does not read)."""
    lines = raw.split(b"\r\n")
    line = _REQUEST_LINE.fullmatch(lines[0])
    if line is None:
        raise _invalid("not an HTTP/1.1 request line")
    if len(lines) - 1 > MAX_HEADERS:
        raise _invalid(f"more than {MAX_HEADERS} header lines", 431)
    headers: dict[str, str] = {}
    repeated: set[str] = set()
    # A CR or LF that ends no line, or a NUL, anywhere: then each value is looked at for one.
    stray = b"\0" in raw or raw.count(b"\r") + raw.count(b"\n") != 2 * (len(lines) - 1)
    for text in lines[1:]:
        name, colon, value = text.partition(b":")
        if (
            not colon
            or _TOKEN.fullmatch(name) is None
            or (stray and (b"\r" in value or b"\n" in value or b"\0" in value))
        ):
            raise _invalid("a header line that is not 'name: value'")
        key = name.decode("ascii").lower()
        decoded = value.strip(b" \t").decode("latin-1")
        if key in headers:
            repeated.add(key)
            headers[key] = f"{headers[key]}, {decoded}"
        else:
            headers[key] = decoded
    return _head(line.group(1), line.group(2), line.group(3), headers, repeated)


def _head(method: bytes, target: bytes, minor: bytes, headers: dict[str, str],
          repeated: set[str]) -> Head:  # fmt: skip
    for key in ("content-length", "transfer-encoding", "authorization", "x-api-key", "host"):
        if key in repeated:
            raise _invalid(f"the {key} header twice")
    coding = headers.get("transfer-encoding")
    chunked = coding is not None
    if coding is not None and coding.strip().lower() != "chunked":
        raise _invalid(f"transfer coding {coding[:40]!r}: only chunked is read", 501)
    declared = headers.get("content-length")
    if declared is not None and chunked:
        raise _invalid("both a Content-Length and a Transfer-Encoding")
    length = 0
    if declared is not None:
        if _DIGITS.fullmatch(declared.encode("latin-1")) is None:
            raise _invalid(f"Content-Length {declared[:40]!r} is not a length")
        length = int(declared)
        if length > MAX_REQUEST_BYTES:
            raise _invalid(f"a body of {length} bytes, over {MAX_REQUEST_BYTES}", 413)
    connection = headers.get("connection", "").lower()
    keep_alive = "close" not in connection if minor == b"1" else "keep-alive" in connection
    return Head(
        method=method.decode("ascii"),
        target=target.decode("latin-1"),
        headers=headers,
        length=length,
        chunked=chunked,
        keep_alive=keep_alive,
        expects_continue=headers.get("expect", "").lower() == "100-continue",
    )


@dataclass
class Body:
    """A request body arriving in pieces: :meth:`feed` until it returns True; then ``data``
    is the body and ``rest`` what came after it (the next request, if the client pipelines)."""

    head: Head
    data: bytes = b""
    rest: bytes = b""
    _buffer: bytearray = field(default_factory=bytearray)
    _total: int = 0
    _need: int = -1  # bytes of the current chunk still to come (-1: a size line is next)
    _trailer: bool = False

    def feed(self, data: bytes) -> bool:
        self._buffer += data
        if not self.head.chunked:
            if len(self._buffer) < self.head.length:
                return False
            self.data = bytes(self._buffer[: self.head.length])
            self.rest = bytes(self._buffer[self.head.length :])
            return True
        return self._chunks()

    def _chunks(self) -> bool:
        parts: list[bytes] = [self.data] if self.data else []
        while True:
            if self._trailer:
                done = self._trailers()
                break
            if self._need < 0:
                if not self._size_line():
                    done = False
                    break
                continue
            if len(self._buffer) < self._need + 2:
                done = False
                break
            if self._buffer[self._need : self._need + 2] != b"\r\n":
                raise _invalid("a chunk not followed by its line end")
            parts.append(bytes(self._buffer[: self._need]))
            del self._buffer[: self._need + 2]
            self._need = -1
        self.data = b"".join(parts)
        return done

    def _size_line(self) -> bool:
        end = self._buffer.find(b"\r\n")
        if end < 0:
            if len(self._buffer) > _MAX_SIZE_LINE:
                raise _invalid("a chunk size line that does not end")
            return False
        size = bytes(self._buffer[:end]).split(b";", 1)[0].strip(b" \t")
        if _HEX.fullmatch(size) is None:
            raise _invalid("a chunk size that is not hexadecimal")
        del self._buffer[: end + 2]
        self._need = int(size, 16)
        self._total += self._need
        if self._total > MAX_REQUEST_BYTES:
            raise _invalid(f"a chunked body over {MAX_REQUEST_BYTES} bytes", 413)
        if self._need == 0:
            self._trailer = True
        return True

    def _trailers(self) -> bool:
        """Trailer lines, read and dropped, to the blank line that ends the body."""
        while True:
            end = self._buffer.find(b"\r\n")
            if end < 0:
                if len(self._buffer) > _MAX_TRAILER_BYTES:
                    raise _invalid("a trailer section that does not end")
                return False
            line = bytes(self._buffer[:end])
            del self._buffer[: end + 2]
            if not line:
                self.rest = bytes(self._buffer)
                return True
