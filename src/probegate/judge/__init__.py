"""Judging attempts: deterministic oracles first, an optional LLM judge for the rest."""
