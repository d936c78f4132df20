"""The one price function: dollars for tokens, from a config's ``prices`` table.

``prices`` maps a model name to ``{input_per_1k, output_per_1k}`` (docs/targets.md); the key
``"*"`` prices every model the table does not name. The dry run's estimate, every target's
``cost_usd`` and the LLM judge's spending all read the table through :func:`price_table`, so a
price that makes the scan pay also makes ``--dry-run`` say what it will cost.
"""

from __future__ import annotations

from collections.abc import Mapping

ANY_MODEL = "*"

Prices = Mapping[str, Mapping[str, float]]


def price_table(prices: Prices, model: str | None) -> Mapping[str, float] | None:
    """The model's own prices, else the ``"*"`` prices, else None (the cost is unknown)."""
    table = prices.get(model or "") or prices.get(ANY_MODEL)
    return table or None


def cost_usd(
    prices: Prices, model: str | None, prompt_tokens: float, completion_tokens: float
) -> float:
    """Dollars for one reply's tokens; 0 when the table prices neither the model nor ``"*"``."""
    table = price_table(prices, model) or {}
    return (
        table.get("input_per_1k", 0.0) * prompt_tokens / 1000.0
        + table.get("output_per_1k", 0.0) * completion_tokens / 1000.0
    )
