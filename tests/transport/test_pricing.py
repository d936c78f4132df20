"""The one price function: a model's own row wins, ``"*"`` prices the rest, else cost unknown."""

from __future__ import annotations

import pytest

from probegate.transport.pricing import cost_usd, price_table

PRICES = {
    "gpt-x": {"input_per_1k": 1.0, "output_per_1k": 2.0},
    "*": {"input_per_1k": 0.5, "output_per_1k": 1.5},
}


def test_the_models_own_row_wins_over_the_wildcard() -> None:
    assert price_table(PRICES, "gpt-x") == PRICES["gpt-x"]
    assert cost_usd(PRICES, "gpt-x", 1000, 500) == pytest.approx(1.0 + 1.0)


@pytest.mark.parametrize("model", ["other-model", None])
def test_the_wildcard_prices_every_other_model(model: str | None) -> None:
    assert price_table(PRICES, model) == PRICES["*"]
    assert cost_usd(PRICES, model, 1000, 300) == pytest.approx(0.5 + 0.45)


def test_without_a_row_the_cost_is_unknown_and_counted_as_zero() -> None:
    only = {"gpt-x": PRICES["gpt-x"]}
    assert price_table(only, "other-model") is None
    assert price_table({"m": {}}, "m") is None  # an empty row prices nothing
    assert cost_usd(only, "other-model", 1000, 1000) == 0.0
