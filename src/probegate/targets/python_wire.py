"""The frames between probegate and a python agent run in a process of its own.

``target.processes`` (docs/targets.md) runs a ``python`` agent in child processes: its SDK's
CPU (an openai client spends about 2 ms of it on each model call) then no longer shares one
interpreter lock with the scan's engine and the model-API proxy, and an agent that crashes
or calls ``os._exit`` ends its process, not the scan. The two sides talk over a socket pair,
one JSON object per frame, each preceded by its length in four bytes (the top bit says which
JSON writer wrote it). JSON, not pickle: what crosses is plain data (the message, the
context's fields, the agent's reply as the python target reads it), so the child is never
asked to rebuild probegate's objects, nor the parent the agent's.
"""

from __future__ import annotations

import contextlib
import json
import socket
import struct
import threading
from typing import Any

import orjson

# A frame larger than this is refused: the agent's reply is bounded later, but a runaway one
# must not take the scan's memory with it first.
FRAME_MAX = 256 * 1024 * 1024
_LENGTH = struct.Struct(">I")
# The length's top bit (never part of a length under FRAME_MAX): the frame was written by the
# standard library's json, for what orjson cannot write (a lone surrogate, an integer past 64
# bits), and is read back by it too: orjson reads such an integer as a float, and 2**70 would
# cross as 1.1805916207174113e+21.
_STDLIB = 1 << 31


class WireError(Exception):
    """The other side sent what is not a frame (or too large a one)."""


def encode(message: dict[str, Any]) -> bytes:
    """One frame: the length, then the message as JSON (any value JSON lacks, as its text)."""
    flag = 0
    try:
        data = orjson.dumps(message, default=str, option=orjson.OPT_NON_STR_KEYS)
    except (TypeError, orjson.JSONEncodeError):
        # A lone surrogate, an integer past 64 bits: the standard library writes them.
        data = json.dumps(message, default=str).encode("utf-8")
        flag = _STDLIB
    if len(data) > FRAME_MAX:
        raise WireError(f"a message of {len(data)} bytes, over the {FRAME_MAX}-byte frame cap")
    return _LENGTH.pack(len(data) | flag) + data


class Channel:
    """One end of the socket pair: frames written whole under a lock, read by one thread."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self._lock = threading.Lock()

    def send(self, message: dict[str, Any]) -> None:
        frame = encode(message)
        with self._lock:
            self.sock.sendall(frame)

    def receive(self) -> dict[str, Any] | None:
        """The next message; None when the other side closed its end."""
        head = self._exactly(_LENGTH.size)
        if head is None:
            return None
        (word,) = _LENGTH.unpack(head)
        length = word & ~_STDLIB
        if length > FRAME_MAX:
            raise WireError(f"a frame of {length} bytes, over the {FRAME_MAX}-byte cap")
        body = self._exactly(length)
        if body is None:
            return None
        try:
            message = json.loads(body) if word & _STDLIB else orjson.loads(body)
        except ValueError as exc:
            raise WireError(f"a frame that is not JSON ({exc})") from None
        if not isinstance(message, dict):
            raise WireError("a frame that is not a JSON object")
        return message

    def _exactly(self, size: int) -> bytes | None:
        chunks = bytearray()
        while len(chunks) < size:
            try:
                data = self.sock.recv(min(size - len(chunks), 1 << 20))
            except TimeoutError:
                raise  # a deadline the caller set: not the other side closing
            except OSError:
                return None
            if not data:
                return None
            chunks += data
        return bytes(chunks)

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.sock.shutdown(socket.SHUT_RDWR)
        self.sock.close()
