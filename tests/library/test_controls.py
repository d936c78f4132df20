"""The benign texts of controls: drawn from the seed, never a fixed list, never an attack.

An agent that recognised its controls could fail only there and hide every finding a control
should confirm (docs/scoring.md, "Controls"); so the texts are drawn per scan, probe and
repeat from a pool of templates (library/controls.py), and every text the pool can draw must
be harmless: no instruction, no claim of authority, as the demo agents read a message.
"""

from __future__ import annotations

import pytest

from probegate.library.controls import control_pool, control_text
from probegate.library.loader import load_library
from probegate.models.taxonomy import Channel
from probegate.targets.demo.intents import claims_authority, normalise, read_intents

LIBRARY = load_library()
PROBES = LIBRARY.probes


@pytest.mark.parametrize("channel", list(Channel), ids=[c.value for c in Channel])
def test_every_text_the_pool_can_draw_asks_for_nothing(channel: Channel) -> None:
    texts = list(control_pool().texts(channel))
    assert len(texts) >= 20  # enough that no short list of them recognises a control
    for text in texts:
        words = normalise(text)
        assert read_intents(words) == [], text
        assert not claims_authority(words), text
        assert "{" not in text and "}" not in text, text


def test_the_same_seed_draws_the_same_texts_and_another_seed_others() -> None:
    first = [control_text(p, 7, r) for p in PROBES for r in range(3)]
    assert first == [control_text(p, 7, r) for p in PROBES for r in range(3)]
    other = [control_text(p, 8, r) for p in PROBES for r in range(3)]
    assert sum(a != b for a, b in zip(first, other, strict=True)) > 0.6 * len(first)
    # Within one scan, probes of one channel are not all sent the same text.
    for channel in Channel:
        mine = {control_text(p, 7, 0) for p in PROBES if p.channel is channel}
        alike = sum(1 for p in PROBES if p.channel is channel)
        assert len(mine) >= min(alike, 3) * 0.6, channel


def test_every_text_comes_from_its_channel_and_a_probe_keeps_its_own_control() -> None:
    pool = control_pool()
    drawable = {c: set(pool.texts(c)) for c in Channel}
    for probe in PROBES:
        for seed in (0, 1, 2):
            text = control_text(probe, seed, 1)
            if probe.control is None:
                assert text in drawable[probe.channel], (probe.id, text)
            else:
                own, _, drawn = text.partition(probe.control + " ")
                assert own == "" and drawn in drawable[probe.channel], (probe.id, text)
