"""The suite data shapes: Scenario, AgentResult, ScoreResult, ScenarioRunResult, RunResult.

Field names and meanings are AgenticAssure 0.4's (docs/scenarios.md), so a consumer written
against its JSON results reads ours unchanged. Two kinds of outside data enter here and
are validated once: suite files (strict: an unknown key is a typo the user should hear about)
and whatever the user's adapter returns (lenient: an agent framework's result object carries
more than we need, and values such as ``raw_response`` may be arbitrary Python objects, which
are turned into JSON-safe data so the report can always be written).
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    SerializerFunctionWrapHandler,
    Tag,
    field_validator,
    model_serializer,
    model_validator,
)
from pydantic_core import to_jsonable_python

from probegate.models.bounds import (
    NAME_MAX,
    TOOL_CALLS_MAX,
    TRANSCRIPT_MAX,
    Cut,
    bound_value,
    calls_cut,
    cut_text,
    loads_bounded,
    text_of,
)

NonEmpty = Annotated[str, Field(min_length=1)]
Unit = Annotated[float, Field(ge=0.0, le=1.0)]


def json_safe(value: Any) -> Any:
    """Any Python value as plain JSON data (dicts, lists, str, finite numbers, bools, None).

    Adapters return SDK objects, dataclasses, datetimes, sets, bytes...; ``str()`` is the
    fallback so that writing the report can never fail on what an agent returned. Non-finite
    floats become ``None`` because canonical JSON refuses NaN; bytes that are not UTF-8 become
    base64. What is deeper or larger than the bounds on agent output (models/bounds.py), or
    contains itself, is kept as its bounded JSON text.
    """
    try:
        data = to_jsonable_python(value, fallback=_text, inf_nan_mode="null")
    except UnicodeDecodeError:
        data = to_jsonable_python(value, fallback=_text, inf_nan_mode="null", bytes_mode="base64")
    except ValueError:  # deeper than pydantic serialises, or a cycle
        return text_of(value, TRANSCRIPT_MAX)
    return bound_value(data)


def _text(obj: Any) -> str:
    try:
        return str(obj)
    except Exception:  # a broken __str__ in the agent's object must not break the report
        return f"<unprintable {type(obj).__name__}>"


def _not_bool(value: Any) -> Any:
    # YAML `true` is not a number of seconds or retries, whatever Python's int(True) says.
    if isinstance(value, bool):
        raise ValueError("must be a number, not true/false")
    return value


Seconds = Annotated[float, Field(gt=0.0)]


class Scenario(BaseModel):
    """One test case as written in the suite file.

    The fields are AgenticAssure 0.4's (its suite schema, docs/scenarios.md), so its suite
    files load unchanged, plus one probegate addition: ``context``, handed to the adapter.
    ``scorers`` may be empty (such a scenario fails, as in AgenticAssure); ``metadata`` is
    always a mapping because scorers read their settings from it.
    """

    model_config = ConfigDict(extra="forbid")

    name: NonEmpty
    input: str
    description: str | None = None
    expected_output: str | None = None
    expected_tools: list[str] | None = None
    expected_tool_args: dict[str, Any] | None = None
    scorers: list[NonEmpty] = Field(default_factory=lambda: ["passfail"])
    tags: list[str] = Field(default_factory=list)
    context: dict[str, Any] | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)
    timeout_seconds: Seconds | None = None

    @field_validator("metadata", mode="before")
    @classmethod
    def _metadata(cls, value: Any) -> Any:
        return {} if value is None else value

    @field_validator("timeout_seconds", mode="before")
    @classmethod
    def _seconds(cls, value: Any) -> Any:
        return _not_bool(value)

    @field_validator("expected_tool_args", "context", "metadata", mode="after")
    @classmethod
    def _plain(cls, value: Any) -> Any:
        # YAML turns `2026-01-01` into a date; keep the model JSON-serialisable.
        return None if value is None else json_safe(value)


class SuiteConfig(BaseModel):
    """``suite.config``: run settings for every scenario of the suite.

    ``None`` means "not set in the file", so a flag given on the command line, or probegate's
    own default, can apply instead (docs/scenarios.md, "Suite config").
    """

    model_config = ConfigDict(extra="forbid")

    default_timeout: Annotated[float, Field(ge=0.0)] | None = None
    retries: Annotated[int, Field(ge=0)] | None = None
    default_scorers: list[NonEmpty] | None = None
    fail_fast: bool = False

    @field_validator("default_timeout", "retries", mode="before")
    @classmethod
    def _numbers(cls, value: Any) -> Any:
        return _not_bool(value)


class SuiteHeader(BaseModel):
    """The ``suite:`` mapping of an AgenticAssure suite file."""

    model_config = ConfigDict(extra="forbid")

    name: NonEmpty
    description: str | None = None
    config: SuiteConfig = Field(default_factory=SuiteConfig)


SUITE_MAPPING = "suite-mapping"
SUITE_NAME = "suite-name"


def _suite_form(value: Any) -> str:
    return SUITE_MAPPING if isinstance(value, dict | SuiteHeader) else SUITE_NAME


class SuiteFile(BaseModel):
    """The top level of a suite file: ``suite`` and ``scenarios``.

    ``suite`` is AgenticAssure's mapping (name, description, config) or, in probegate's earlier
    short form, just the name; the short form may also use top-level ``name`` and
    ``description``.
    """

    model_config = ConfigDict(extra="forbid")

    suite: (
        Annotated[
            Annotated[SuiteHeader, Tag(SUITE_MAPPING)] | Annotated[NonEmpty, Tag(SUITE_NAME)],
            Discriminator(_suite_form),
        ]
        | None
    ) = None
    name: NonEmpty | None = None
    description: str | None = None
    scenarios: list[Scenario] = Field(min_length=1)


class ToolCall(BaseModel):
    """One tool call the agent reports: name, arguments, and what the tool returned."""

    model_config = ConfigDict(extra="ignore")

    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    result: Any = None

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        return cut_text(value, NAME_MAX, "name")[0]

    @field_validator("arguments", mode="before")
    @classmethod
    def _arguments(cls, value: Any) -> Any:
        # OpenAI-style SDKs hand arguments over as a JSON string; accept it as the object it is.
        if value is None:
            return {}
        if isinstance(value, str | bytes):
            try:
                value = loads_bounded(value)
            except ValueError:
                return value  # fails validation below with a clear message
        safe = json_safe(value)
        # Too deep or too large to keep as data: its bounded JSON text, where oracles of
        # a scan would read it too (models/bounds.py).
        return {"_raw": safe} if isinstance(safe, str) and isinstance(value, dict) else safe

    @field_validator("result", mode="before")
    @classmethod
    def _result(cls, value: Any) -> Any:
        return json_safe(value)


class TokenUsage(BaseModel):
    """Token counts the agent reports; absent counts are zero."""

    model_config = ConfigDict(extra="ignore")

    prompt_tokens: Annotated[int, Field(ge=0)] = 0
    completion_tokens: Annotated[int, Field(ge=0)] = 0

    @field_validator("prompt_tokens", "completion_tokens", mode="before")
    @classmethod
    def _none_is_zero(cls, value: Any) -> Any:
        return 0 if value is None else value


class AgentResult(BaseModel):
    """What the adapter returned for one scenario, validated."""

    model_config = ConfigDict(extra="ignore")

    output: str = ""
    tool_calls: list[ToolCall] = Field(default_factory=list)
    reasoning_trace: list[Any] | None = None
    latency_ms: Annotated[float, Field(ge=0.0)] = 0.0
    token_usage: TokenUsage | None = None
    raw_response: Any = None
    # What was cut to keep the result bounded (models/bounds.py); omitted when nothing was.
    cuts: list[Cut] = Field(default_factory=list)

    @model_validator(mode="before")
    @classmethod
    def _bounded(cls, data: Any) -> Any:
        """The output valid Unicode and at most TRANSCRIPT_MAX long, at most TOOL_CALLS_MAX
        tool calls: a scenario's result is stored and rendered whatever the agent sent."""
        if isinstance(data, AgentResult):
            return data
        if not isinstance(data, dict):  # an agent's own result object: read its fields
            data = {k: getattr(data, k) for k in cls.model_fields if hasattr(data, k)}
        data = dict(data)
        cuts = list(data.get("cuts") or [])
        output = data.get("output")
        if isinstance(output, str):
            data["output"], cut = cut_text(output, TRANSCRIPT_MAX, "output")
            cuts += [cut] if cut else []
        calls = data.get("tool_calls")
        if isinstance(calls, list) and len(calls) > TOOL_CALLS_MAX:
            data["tool_calls"] = calls[:TOOL_CALLS_MAX]
            cuts += [calls_cut(len(calls), TOOL_CALLS_MAX)]
        data["cuts"] = cuts
        return data

    @model_serializer(mode="wrap")
    def _serialise(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data: dict[str, Any] = handler(self)
        if not data.get("cuts"):
            data.pop("cuts", None)
        return data

    @field_validator("output", mode="before")
    @classmethod
    def _output(cls, value: Any) -> Any:
        return "" if value is None else value

    @field_validator("tool_calls", mode="before")
    @classmethod
    def _tool_calls(cls, value: Any) -> Any:
        return [] if value is None else value

    @field_validator("latency_ms", mode="before")
    @classmethod
    def _latency(cls, value: Any) -> Any:
        return 0.0 if value is None else value

    @field_validator("raw_response", mode="before")
    @classmethod
    def _plain(cls, value: Any) -> Any:
        return json_safe(value)

    @field_validator("reasoning_trace", mode="before")
    @classmethod
    def _steps(cls, value: Any) -> Any:
        safe = json_safe(value)
        # A trace too deep or large to keep as data is kept as one step: its bounded text.
        return [safe] if isinstance(safe, str) and not isinstance(value, str) else safe


class ScoreResult(BaseModel):
    """One scorer's judgement of one scenario."""

    model_config = ConfigDict(extra="forbid")

    scenario_id: str
    scorer_name: str
    score: Unit
    passed: bool
    explanation: str
    details: dict[str, Any] | None = None


class ScenarioRunResult(BaseModel):
    """One scenario's run: the agent's result, the scores, and the verdict.

    ``agent_result`` is an empty AgentResult (never null) when the adapter failed, so
    AgenticAssure's consumers (``.agent_result.tool_calls[]``) keep working; ``error`` says what
    went wrong.
    """

    model_config = ConfigDict(extra="forbid")

    scenario: Scenario
    agent_result: AgentResult
    scores: list[ScoreResult]
    passed: bool
    duration_ms: Annotated[float, Field(ge=0.0)]
    error: str | None = None
    retry_count: Annotated[int, Field(ge=0)] = 0

    @property
    def score(self) -> float:
        """The scenario's score: the mean of its scorers' scores, 0 when it errored."""
        if self.error is not None or not self.scores:
            return 0.0
        return round(sum(s.score for s in self.scores) / len(self.scores), 4)


class RunResult(BaseModel):
    """One suite's run: the JSON report, ``results_{run_id}.json``."""

    model_config = ConfigDict(extra="forbid")

    run_id: str
    timestamp: str
    suite_name: str
    scenario_results: list[ScenarioRunResult]
    aggregate_score: Unit
    pass_rate: Unit
    total_duration_ms: Annotated[float, Field(ge=0.0)]
    model_info: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        return self.model_dump(mode="json")
