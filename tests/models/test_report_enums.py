"""Modes and stop reasons are enums in code and the same strings in every report."""

from __future__ import annotations

import json

from probegate.engine.shards import STOP_ORDER
from probegate.models.report import Mode, StopReason
from probegate.reports import FORMATS
from tests.factories import make_report


def test_the_json_values_are_the_report_formats_words() -> None:
    # docs/report-format.md: ``mode`` and ``stopped_reason`` are these strings, unchanged.
    assert [m.value for m in Mode] == ["fast", "smart", "full"]
    assert [s.value for s in StopReason] == [
        "completed",
        "budget",
        "deadline",
        "early_stop",
        "cancelled",
    ]


def test_a_report_writes_and_reads_them_as_strings() -> None:
    report = make_report().model_copy(update={"mode": Mode.SMART})
    data = json.loads(FORMATS["json"].render(report))
    assert data["mode"] == "smart" and data["stopped_reason"] == "completed"
    read = type(report).model_validate(data)
    assert read.mode is Mode.SMART and read.stopped_reason is StopReason.COMPLETED


def test_merging_shards_orders_every_stop_reason() -> None:
    assert sorted(STOP_ORDER) == sorted(StopReason)
