"""Output formats of ``probegate run --output``. :data:`FORMATS` lists every one.

Each format is a pure function from the runs (and any regressions) to ``(file name, bytes)``
pairs; the command writes them into ``--output-dir``. JSON is one file per suite, named
``results_{run_id}.json`` (docs/scenarios.md), in probegate's shape (``json``) or in exactly
AgenticAssure's (``agenticassure``); JUnit and Markdown cover every suite in one file, named as
the scan's formats name theirs (reports.FORMATS: the Action reads both commands' files the same
way); HTML is one file per suite, named as AgenticAssure names it. ``cli`` is AgenticAssure's
name for "the terminal only": it writes no file (probegate always prints the terminal report).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from probegate.canonical import pretty_bytes
from probegate.reports import FORMATS as SCAN_FORMATS
from probegate.reports import FormatName
from probegate.reports.escape import json_bytes
from probegate.scenarios import html_report, junit, markdown
from probegate.scenarios.agenticassure_format import to_agenticassure
from probegate.scenarios.compare import Regression
from probegate.scenarios.models import RunResult

Rendered = list[tuple[str, bytes]]


@dataclass(frozen=True)
class OutputFormat:
    """One ``--output`` choice: what it writes and how the terminal names it."""

    name: str
    label: str
    render: Callable[[list[RunResult], list[Regression]], Rendered]


def results_file_name(run: RunResult) -> str:
    return f"results_{run.run_id}.json"


def _json(runs: list[RunResult], regressions: list[Regression]) -> Rendered:
    return [(results_file_name(run), json_bytes(pretty_bytes(run.to_dict()))) for run in runs]


def _agenticassure(runs: list[RunResult], regressions: list[Regression]) -> Rendered:
    return [
        (results_file_name(run), json_bytes(pretty_bytes(to_agenticassure(run)))) for run in runs
    ]


def _junit(runs: list[RunResult], regressions: list[Regression]) -> Rendered:
    return [(SCAN_FORMATS[FormatName.JUNIT].filename, junit.render(runs))]


def _markdown(runs: list[RunResult], regressions: list[Regression]) -> Rendered:
    return [(SCAN_FORMATS[FormatName.MD].filename, markdown.render(runs, regressions))]


def _html(runs: list[RunResult], regressions: list[Regression]) -> Rendered:
    return [(html_report.file_name(run), html_report.render(run)) for run in runs]


def _terminal_only(runs: list[RunResult], regressions: list[Regression]) -> Rendered:
    return []


FORMATS: dict[str, OutputFormat] = {
    "json": OutputFormat("json", "JSON report", _json),
    "agenticassure": OutputFormat("agenticassure", "AgenticAssure JSON report", _agenticassure),
    "junit": OutputFormat("junit", "JUnit report", _junit),
    "md": OutputFormat("md", "Markdown summary", _markdown),
    "html": OutputFormat("html", "HTML report", _html),
    "cli": OutputFormat("cli", "terminal report", _terminal_only),
}

# Formats that write the same file names: asking for both would overwrite one with the other.
EXCLUSIVE = frozenset({"json", "agenticassure"})
