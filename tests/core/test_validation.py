"""validation.py: a ValidationError as one line, the same wording for every reader."""

from __future__ import annotations

import pytest
from pydantic import BaseModel, ConfigDict, ValidationError, field_validator

from probegate.validation import all_problems, describe, field_path, fields_at, first_problem


class Tool(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str
    timeout: float = 1.0

    @field_validator("timeout")
    @classmethod
    def _positive(cls, value: float) -> float:
        if value <= 0:
            raise ValueError("must be positive")
        return value


class Config(BaseModel):
    model_config = ConfigDict(extra="forbid")
    tools: list[Tool]


def _error(data: object) -> ValidationError:
    with pytest.raises(ValidationError) as info:
        Config.model_validate(data)
    return info.value


def test_the_path_names_list_items_and_the_reason_drops_pydantics_prefix() -> None:
    data = {"tools": [{"name": "a"}, {"name": "send", "timeout": -1}]}
    assert describe(_error(data)) == "tools[1].timeout: must be positive"
    assert describe(_error(data), data=data) == "tools[1] ('send').timeout: must be positive"


def test_more_problems_are_counted_and_unknown_fields_named() -> None:
    data = {"tools": [{"name": "a", "colour": "red"}, {"timeout": 0}]}
    problem = first_problem(_error(data))
    assert (problem.path, problem.reason, problem.kind, problem.value) == (
        "tools[0].colour",
        "unknown field",
        "extra_forbidden",
        "red",
    )
    assert problem.line() == "tools[0].colour: unknown field (and 2 more)"


def test_the_document_itself_is_named_by_the_caller() -> None:
    assert (
        describe(_error([1]), top="config")
        == "config: Input should be a valid dictionary or instance of Config"
    )


def test_hidden_parts_are_left_out() -> None:
    assert field_path(("suite", "SuiteHeader", "name"), hidden={"SuiteHeader"}) == "suite.name"
    assert field_path(()) == ""


def test_all_problems_lists_every_error_and_says_a_mistyped_key_once() -> None:
    data = {"tools": [{"nme": "a"}, {"name": "b", "timeout": -1}, {}]}
    problems = all_problems(_error(data), data=data, fields=lambda loc: fields_at(Config, loc))
    assert [p.line() for p in problems] == [
        "tools[0].nme: unknown field (did you mean 'name'?)",
        "tools[1] ('b').timeout: must be positive",
        "tools[2].name: Field required",
    ]
    assert problems[0].loc == ("tools", 0, "nme")
