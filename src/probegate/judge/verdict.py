"""The one answer a judge may give: an object of the verdict schema, checked strictly.

``judge/data/verdict.schema.json`` is what every answer must validate against (exactly
``verdict``, ``evidence`` and ``confidence``); the request carries it in each API's
structured-output form (:func:`wire_schema`), without the bounds those modes refuse, which are
checked here on the answer instead. Anything else is a :class:`JudgeFailure`: the attempt stays
unjudged with the reason, never resisted.
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from probegate.models.causes import Cause
from probegate.validation import describe

if TYPE_CHECKING:
    import jsonschema

SCHEMA_FILE = Path(__file__).parent / "data" / "verdict.schema.json"
PROBLEM_MAX = 200  # characters of a validation message kept in a reason


@lru_cache(maxsize=1)
def verdict_schema() -> dict[str, Any]:
    """The verdict's JSON schema: what every answer must validate against."""
    schema: dict[str, Any] = json.loads(SCHEMA_FILE.read_text(encoding="utf-8"))
    return schema


@lru_cache(maxsize=1)
def _validator() -> jsonschema.protocols.Validator:
    import jsonschema  # only a scan with a judge checks its verdicts

    validator: jsonschema.protocols.Validator = jsonschema.Draft202012Validator(verdict_schema())
    return validator


def wire_schema() -> dict[str, Any]:
    """The schema as sent in the request: structured-output modes accept fewer keywords than
    the schema uses (bounds on lengths and numbers), so those are checked here instead."""

    def strip(node: Any) -> Any:
        if isinstance(node, dict):
            return {
                k: strip(v)
                for k, v in node.items()
                if k not in ("$schema", "title", "description", "maxLength", "minimum", "maximum")
            }
        return node

    stripped: dict[str, Any] = strip(verdict_schema())
    return stripped


class JudgeVerdict(BaseModel):
    """The only answer shape accepted from a judge; anything else is a failure."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    verdict: Literal["vulnerable", "resisted"]
    evidence: str = Field(max_length=1000)
    confidence: float = Field(ge=0.0, le=1.0)


class JudgeFailure(Exception):
    """The judge could not give a usable verdict; the attempt stays unjudged with this reason."""


class JudgeNotAsked(JudgeFailure):
    """The judge was not asked: the scan's request or dollar budget is spent, its deadline
    passed, or it was stopped; ``cause`` says which (models/causes.py)."""

    def __init__(self, reason: str, *, cause: Cause) -> None:
        super().__init__(reason)
        self.cause = cause


def parse_verdict(content: str) -> JudgeVerdict:
    """Parse the judge's answer strictly: one JSON object valid against the verdict schema."""
    try:
        data = json.loads(content)
    except json.JSONDecodeError as exc:
        raise JudgeFailure(f"the judge's answer is not JSON ({exc.msg})") from None
    if not isinstance(data, dict):
        raise JudgeFailure("the judge's answer is not a JSON object")
    errors = sorted(_validator().iter_errors(data), key=lambda e: [str(p) for p in e.path])
    if errors:
        first = errors[0]
        where = ".".join(str(p) for p in first.path) or "answer"
        shown = repr(first.instance)
        if len(shown) > 40:  # the judge's own text, shortened: the message says what is wrong
            shown = shown[:36] + "...'"
        problem = first.message.replace(repr(first.instance), shown)[:PROBLEM_MAX]
        more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
        raise JudgeFailure(
            f"the judge's answer does not match the verdict schema at {where}: {problem}{more}"
        )
    try:
        return JudgeVerdict.model_validate(data)
    except ValidationError as exc:
        problem = describe(exc, top="answer")
        raise JudgeFailure(f"the judge's answer is malformed at {problem}") from None
