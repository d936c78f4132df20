"""The JSON Schema of a tool probegate's MCP server serves (targets/mcp_server.py), and what
is wrong with a call's arguments by it: one validator per declared schema, checked once."""

from __future__ import annotations

import json
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from probegate.models.tools import ToolSpec

if TYPE_CHECKING:
    import jsonschema


def tool_schema(spec: ToolSpec) -> dict[str, Any]:
    schema = dict(spec.parameters) if spec.parameters else {}
    schema.setdefault("type", "object")
    schema.setdefault("properties", {})
    return schema


def schema_problem(spec: ToolSpec, arguments: dict[str, Any]) -> str | None:
    """What is wrong with the arguments by the tool's declared schema, in one line."""
    validator = validator_for(json.dumps(tool_schema(spec), sort_keys=True))
    if validator is None:
        return None  # the user's schema is broken, not the agent's call
    import jsonschema  # only a scan that serves tools checks their arguments

    error = jsonschema.exceptions.best_match(validator.iter_errors(arguments))
    return None if error is None else error.message[:200]


@lru_cache(maxsize=256)
def validator_for(schema_text: str) -> jsonschema.protocols.Validator | None:
    """One validator per declared schema, its schema checked once: ``jsonschema.validate``
    re-checks the schema on every call (milliseconds, on the server's event loop)."""
    import jsonschema

    schema = json.loads(schema_text)
    cls = jsonschema.validators.validator_for(schema)
    try:
        cls.check_schema(schema)
    except jsonschema.SchemaError:
        return None
    return cls(schema)
