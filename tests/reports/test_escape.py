"""The escaping helpers' own contracts (in every format: tests/reports/test_hostile.py)."""

from __future__ import annotations

import json

from hypothesis import example, given
from hypothesis import strategies as st

from probegate.reports.escape import number


@given(st.one_of(st.floats(), st.integers(), st.booleans()))
@example(float("nan"))
@example(float("-inf"))
@example(-0.0)
@example(1e16)
@example(10**40)
def test_number_is_what_json_dumps_writes(value: float | int) -> None:
    assert number(value) == json.dumps(value)
