"""``--output html``: one self-contained ``report_{run_id}.html`` per suite.

The file name is AgenticAssure's, so ``-o html`` writes what its users expect. Pure and
offline: inline style pinned by hash in a Content-Security-Policy that allows nothing else (no
script, no network), and every piece of suite or agent text goes through
:func:`probegate.reports.escape.html_text`.
"""

from __future__ import annotations

import base64
import hashlib

from probegate.reports.escape import html_text, number, truncate
from probegate.scenarios.models import RunResult, ScenarioRunResult

TEXT_MAX = 4000

_CSS = (
    "body{font:14px/1.5 system-ui,sans-serif;max-width:1100px;margin:0 auto;padding:24px}"
    "table{border-collapse:collapse;width:100%}td,th{border:1px solid #d1d9e0;padding:4px 8px;"
    "text-align:left;vertical-align:top}pre{white-space:pre-wrap;margin:0}"
    ".PASS{color:#1a7f37}.FAIL,.ERROR{color:#cf222e}"
)
_CSP = (
    "default-src 'none'; style-src 'sha256-"
    + base64.b64encode(hashlib.sha256(_CSS.encode()).digest()).decode()
    + "'"
)


def file_name(run: RunResult) -> str:
    return f"report_{run.run_id}.html"


def render(run: RunResult) -> bytes:
    passed = sum(r.passed for r in run.scenario_results)
    rows = "".join(_row(result) for result in run.scenario_results)
    page = (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{_CSP}">'
        f"<title>probegate run: {html_text(run.suite_name)}</title>"
        f"<style>{_CSS}</style></head><body>"
        f"<h1>{html_text(run.suite_name)}</h1>"
        f"<p>run {html_text(run.run_id)} at {html_text(run.timestamp)}: "
        f"{passed}/{len(run.scenario_results)} passed, pass rate {run.pass_rate:.1%}, "
        f"aggregate score {number(run.aggregate_score)}</p>"
        "<table><tr><th>scenario</th><th>status</th><th>score</th><th>details</th>"
        f"<th>output</th></tr>{rows}</table></body></html>\n"
    )
    return page.encode("utf-8")


def _row(result: ScenarioRunResult) -> str:
    if result.error is not None:
        status, detail = "ERROR", result.error
    else:
        status = "PASS" if result.passed else "FAIL"
        detail = "\n".join(f"{s.scorer_name}: {s.explanation}" for s in result.scores)
    output = truncate(result.agent_result.output, TEXT_MAX)
    return (
        f"<tr><td>{html_text(result.scenario.name)}</td>"
        f'<td class="{status}">{status}</td><td>{result.score:.2f}</td>'
        f"<td><pre>{html_text(truncate(detail, TEXT_MAX))}</pre></td>"
        f"<td><pre>{html_text(output)}</pre></td></tr>"
    )
