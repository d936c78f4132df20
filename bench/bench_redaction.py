"""Redaction with real secrets: the cost of hiding every fragment of every spelling.

A scan redacts every string of every attempt twice (the stored form for the journal and
recordings, the report form for the report), so the figures to watch are per string and per
megabyte. Six secrets of the sizes a real scan holds (an API key, a header secret, two declared
canaries, the signing secret, a judge key), and:

- a transcript's strings as the engine sees them: short, mostly innocent, each new (the
  memo is bypassed), strings per second;
- 256 KiB of innocent prose, and of hex and base64 blobs (the texts a fragment search could
  stumble on): milliseconds, the best of three and the first;
- 256 KiB made of nothing but 8-character fragments of every spelling of every secret,
  interleaved with separators (the worst an agent can send): milliseconds, and whether any
  fragment survived;
- building a redactor (compiling what it searches for): milliseconds.

Target: linear time; the hostile 256 KiB under 1 s, innocent 256 KiB under 50 ms.

Run: ``.venv/bin/python bench/bench_redaction.py`` (or ``make bench``).
"""

from __future__ import annotations

import base64
import codecs
import random
import time

from probegate.models.placeholders import stored_key
from probegate.models.redaction import Redactor

SECRETS = {
    "API_KEY": "pgtest-key-Q7w8E9r0T1y2U3i4O5p6",
    "HEADER_X_GATEWAY_KEY": "gw-7c1d2e3f4a5b6c7d8e9f",
    "CANARY_1": "ZX-Vq93-Lm2Kw8Rt-4488",
    "CANARY_2": "envsecret-Z9Y8X7W6V5",
    "SIGNING_SECRET": "signing-secret-5d41402abc4b2a76b9719d911017c592",
    "JUDGE_API_KEY": "judgekey-0f9e8d7c6b5a4f3e2d1c",
}
SIZE = 256 * 1024


def spellings(value: str) -> list[str]:
    raw = value.encode()
    spelled = [
        value,
        value.lower(),
        value.upper(),
        value[::-1],
        codecs.encode(value, "rot13"),
        base64.b64encode(raw).decode(),
        base64.b64encode(b"x" + raw).decode()[2:],
        base64.b32encode(raw).decode(),
        raw.hex(),
    ]
    return [s.rstrip("=") for s in spelled]


def hostile_text(rng: random.Random) -> str:
    parts: list[str] = []
    size = 0
    seps = [" ", "\u200b", "-", " \u200c", ""]
    while size < SIZE:
        spelled = rng.choice(spellings(rng.choice(list(SECRETS.values()))))
        at = rng.randrange(max(1, len(spelled) - 8))
        piece = rng.choice(seps).join(spelled[at : at + 8]) + " | "
        parts.append(piece)
        size += len(piece)
    return "".join(parts)[:SIZE]


def survivors(text: str) -> int:
    """8-character windows of any spelling still in ``text`` (separators removed)."""
    bare = "".join(c for c in text if c not in " \u200b\u200c-")
    count = 0
    for value in SECRETS.values():
        for spelled in spellings(value):
            plain = "".join(c for c in spelled if c != "-")
            count += sum(plain[i : i + 8] in bare for i in range(len(plain) - 7))
    return count


def timed(fn: object, *args: object) -> tuple[float, object]:
    start = time.perf_counter()
    out = fn(*args)  # type: ignore[operator]
    return time.perf_counter() - start, out


def main() -> None:
    rng = random.Random(7)
    build, _ = timed(lambda: Redactor(SECRETS, key=stored_key("salt", SECRETS)).text("warm up"))
    print(f"build a redactor with {len(SECRETS)} secrets and search once: {build * 1000:.1f} ms")
    stored = Redactor(SECRETS, key=stored_key("salt", SECRETS))
    words = [
        "the",
        "agent",
        "said",
        "it",
        "would",
        "refund",
        "order",
        "4411",
        "to",
        "the",
        "customer",
        "after",
        "checking",
    ]
    strings = [
        " ".join(rng.choice(words) for _ in range(rng.randrange(2, 40))) + f" #{i}"
        for i in range(20_000)
    ]
    elapsed, _ = timed(lambda: [stored.text(s) for s in strings])
    print(f"transcript strings (each new): {len(strings) / elapsed:,.0f} strings/s")
    prose = (" ".join(rng.choice(words) for _ in range(SIZE // 4)))[:SIZE]
    hexed = "".join(rng.choice("0123456789abcdef") for _ in range(SIZE))
    b64 = base64.b64encode(rng.randbytes(SIZE * 3 // 4)).decode()
    for name, text in (("prose", prose), ("hex", hexed), ("base64", b64)):
        runs = [timed(Redactor(SECRETS).text, text)[0] * 1000 for _ in range(3)]
        print(
            f"innocent {name}, {SIZE // 1024} KiB: {min(runs):.1f} ms "
            f"(first {runs[0]:.1f} ms: the search's automaton is built as texts need it)"
        )
    hostile = hostile_text(rng)
    before = survivors(hostile)
    elapsed, out = timed(Redactor(SECRETS).text, hostile)
    left = survivors(str(out))
    verdict = "OK" if elapsed < 1.0 else "ABOVE TARGET"
    print(
        f"hostile {SIZE // 1024} KiB of fragments: {elapsed * 1000:.0f} ms (target < 1 s) "
        f"{verdict}; fragment windows before {before}, after {left}"
    )


if __name__ == "__main__":
    main()
