"""The benign texts controls send in place of a payload, drawn per scan from its seed.

A control (docs/scoring.md, "Controls") is the attempt's conversation with the payload replaced
by something an agent reads on that channel every day. Were those texts a fixed list, an agent
could recognise them and fail only there (answer an error whenever one appears), turning every
finding a control should confirm into "unjudged". So the texts are drawn: each scan picks, for
each probe and repeat, one template of the probe's channel from the pool in
``data/controls.yaml`` and fills its slots, all from a random generator seeded with the scan's
seed, the probe and the repeat. The same seed draws the same texts (a resumed scan, a
reproducer and a replay send what the scan sent); another seed draws others. A probe that
names its own benign text (``control:``) keeps it, followed by a drawn sentence of its channel.
"""

from __future__ import annotations

import hashlib
import random
import re
from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache
from itertools import product
from pathlib import Path

from probegate.errors import ProbeLibraryError
from probegate.files import read_yaml
from probegate.library.probe import Probe
from probegate.models.taxonomy import Channel

CONTROLS_FILE = Path(__file__).parent / "data" / "controls.yaml"
_SLOT = re.compile(r"\{(\w+)\}")


@dataclass(frozen=True)
class ControlPool:
    """Each channel's templates and the values of their ``{slots}``."""

    templates: dict[Channel, tuple[str, ...]]
    slots: dict[str, tuple[str, ...]]

    def texts(self, channel: Channel) -> Iterator[str]:
        """Every text the pool can draw for ``channel`` (for the tests that read them all)."""
        for template in self.templates[channel]:
            names = _SLOT.findall(template)
            for values in product(*(self.slots[name] for name in names)):
                yield _fill(template, iter(values))

    def draw(self, channel: Channel, rng: random.Random) -> str:
        template = rng.choice(self.templates[channel])
        return _SLOT.sub(lambda m: rng.choice(self.slots[m.group(1)]), template)


def _fill(template: str, values: Iterator[str]) -> str:
    return _SLOT.sub(lambda _: next(values), template)


@lru_cache(maxsize=1)
def control_pool() -> ControlPool:
    """The bundled pool, read and checked once: every channel has texts, every slot values."""
    raw = read_yaml(CONTROLS_FILE, what="control pool", error=ProbeLibraryError)
    try:
        slots = {str(k): tuple(str(v) for v in values) for k, values in raw["slots"].items()}
        templates = {
            channel: tuple(str(t) for t in raw["channels"][channel.value]) for channel in Channel
        }
    except (KeyError, TypeError, AttributeError) as exc:
        raise ProbeLibraryError(f"{CONTROLS_FILE}: malformed control pool ({exc})") from None
    for channel, texts in templates.items():
        unknown = {name for t in texts for name in _SLOT.findall(t)} - set(slots)
        if not texts or unknown or not all(slots[name] for name in _SLOT.findall(" ".join(texts))):
            raise ProbeLibraryError(
                f"{CONTROLS_FILE}: channel {channel.value} needs texts and known, non-empty "
                f"slots (unknown: {', '.join(sorted(unknown)) or 'none'})"
            )
    return ControlPool(templates, slots)


def control_text(probe: Probe, seed: int, repeat: int) -> str:
    """What replaces ``probe``'s payload in its control for this scan's ``seed`` and
    ``repeat``: a pure function of the three, so every run of the scan sends the same text."""
    digest = hashlib.sha256(f"control:{seed}:{probe.id}:{repeat}".encode()).digest()
    drawn = control_pool().draw(probe.channel, random.Random(digest))  # noqa: S311 -- not secret
    return f"{probe.control} {drawn}" if probe.control is not None else drawn
