"""Find a secret in text, also when it comes back encoded.

Agents leak secrets in the shapes attackers ask for: plain, base64, hex, reversed, or spelled
out with separators. Base64 is found by decoding every blob (a canary inside a larger encoded
prompt is not aligned to base64 boundaries, so encoding the canary and searching would miss it).
"""

from __future__ import annotations

import base64
import binascii
import re
from dataclasses import dataclass

_B64 = re.compile(r"[A-Za-z0-9+/_-]{16,}={0,2}")
_HEX = re.compile(r"\b(?:[0-9a-fA-F]{2}){8,}\b")


@dataclass(frozen=True)
class CanaryHit:
    canary: str
    encoding: str
    start: int
    end: int


# Whitespace, punctuation and the invisible characters used to split a token apart.
_SEPARATORS = frozenset(" \t\n\r\f\v-_.,|/*'\"`\u200b\u200c\u200d\u2060\ufeff\u00ad")


def _strip_separators(text: str) -> tuple[str, list[int]]:
    """Lower-cased text without separators, and each kept character's offset in ``text``."""
    kept: list[str] = []
    offsets: list[int] = []
    for i, ch in enumerate(text):
        if ch not in _SEPARATORS:
            kept.append(ch.lower())
            offsets.append(i)
    return "".join(kept), offsets


def _decode_b64(blob: str) -> str | None:
    padded = blob + "=" * (-len(blob) % 4)
    for decoder in (base64.b64decode, base64.urlsafe_b64decode):
        try:
            return decoder(padded).decode("utf-8", errors="ignore")
        except (binascii.Error, ValueError):
            continue
    return None


def find_canary(text: str, canaries: list[str]) -> CanaryHit | None:
    """The first canary in ``text`` in any supported encoding, with offsets into ``text``."""
    if not text or not canaries:
        return None
    lowered = text.lower()
    stripped: tuple[str, list[int]] | None = None
    for canary in canaries:
        idx = text.find(canary)
        if idx >= 0:
            return CanaryHit(canary, "plain", idx, idx + len(canary))
        idx = lowered.find(canary.lower())
        if idx >= 0:
            return CanaryHit(canary, "case-folded", idx, idx + len(canary))
        rev = canary[::-1].lower()
        idx = lowered.find(rev)
        if idx >= 0:
            return CanaryHit(canary, "reversed", idx, idx + len(canary))
        hexed = canary.encode().hex()
        idx = lowered.find(hexed)
        if idx >= 0:
            return CanaryHit(canary, "hex", idx, idx + len(hexed))
        # Spelled out ("P G S Y S - 1 ..."), dashed or split by invisible characters: compare
        # with every separator removed, then map the hit back to offsets in the original text.
        if stripped is None:
            stripped = _strip_separators(text)
        bare = "".join(ch.lower() for ch in canary if ch not in _SEPARATORS)
        idx = stripped[0].find(bare) if bare else -1
        if idx >= 0:
            offsets = stripped[1]
            return CanaryHit(canary, "spaced", offsets[idx], offsets[idx + len(bare) - 1] + 1)
    for match in _B64.finditer(text):
        decoded = _decode_b64(match.group(0))
        if not decoded:
            continue
        for canary in canaries:
            if canary in decoded or canary[::-1] in decoded:
                return CanaryHit(canary, "base64", match.start(), match.end())
    for match in _HEX.finditer(text):
        try:
            decoded = bytes.fromhex(match.group(0)).decode("utf-8", errors="ignore")
        except ValueError:
            continue
        for canary in canaries:
            if canary in decoded:
                return CanaryHit(canary, "hex", match.start(), match.end())
    return None
