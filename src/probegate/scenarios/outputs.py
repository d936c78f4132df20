"""Output formats of ``probegate run --output``. :data:`FORMATS` lists every one.

Each format is a pure function from the runs (and any regressions) to ``(file name, bytes)``
pairs; the command writes them into ``--output-dir``. JSON is one file per suite, named
``results_{run_id}.json`` as seed 002 says; JUnit and Markdown cover every suite in one file.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from probegate.canonical import pretty_bytes
from probegate.scenarios import junit, markdown
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
    return [(results_file_name(run), pretty_bytes(run.to_dict())) for run in runs]


def _junit(runs: list[RunResult], regressions: list[Regression]) -> Rendered:
    return [("junit.xml", junit.render(runs))]


def _markdown(runs: list[RunResult], regressions: list[Regression]) -> Rendered:
    return [("summary.md", markdown.render(runs, regressions))]


FORMATS: dict[str, OutputFormat] = {
    "json": OutputFormat("json", "JSON report", _json),
    "junit": OutputFormat("junit", "JUnit report", _junit),
    "md": OutputFormat("md", "Markdown summary", _markdown),
}
