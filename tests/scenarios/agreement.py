"""Run the same suites with the same agent through AgenticAssure 0.4 and probegate, side by side.

Both tools run as their installed command-line programs, in fresh processes, each writing its
JSON results; the verdict of every scenario (PASS, FAIL or ERROR) is read back from those files.
``test_agenticassure.py`` asserts on the rows; run this module to see the table:

    .venv/bin/python -m tests.scenarios.agreement [EXTRA_SUITE_PATH ...]

The suites here are written for these tests in AgenticAssure's format and cover every field it
documents; ``agenticassure init`` supplies its own template at run time.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples" / "scenarios"
BIN = Path(sys.executable).parent
AGENT = "tests.scenarios.aa_agents.BothAgent"
EXAMPLE_SHIM = "tests.scenarios.aa_agents.ExampleSupportAgent"

# Suites in AgenticAssure's format, by relative path (a subdirectory shows recursive discovery).
SUITES: dict[str, str] = {
    "support.yaml": r"""
suite:
  name: support-aa
  description: Every scenario field AgenticAssure documents, against BothAgent
  config:
    default_timeout: 20
    retries: 1
    default_scorers: [passfail]
    fail_fast: false

scenarios:
  - name: greeting
    description: passfail finds expected_output in any case
    input: "Hi, who are you?"
    expected_output: HELLO
    tags: [smoke]
  - name: greeting_wrong_word
    input: "Hi, who are you?"
    expected_output: goodbye
    scorers: [passfail]
  - name: answer_only
    description: passfail with nothing expected still needs an answer
    input: "Tell me something"
  - name: blank_answer
    input: "Please answer blank"
  - name: weather_tool
    input: "What is the weather in San Francisco?"
    expected_tools: [get_weather]
    expected_tool_args:
      get_weather: {location: San Francisco}
    scorers: [passfail]
    tags: [tools, smoke]
  - name: tool_call_without_answer
    input: "Quietly check the weather in Paris"
    expected_tools: [get_weather]
    tags: [tools]
  - name: only_first_call_counts
    input: "Search twice please"
    expected_tool_args:
      search: {q: second}
    tags: [tools]
  - name: nested_arguments_must_be_equal
    input: "Find nested hotels"
    expected_tool_args:
      search: {filters: {city: Paris}}
  - name: exact_ignores_case_and_space
    input: "Yes or no?"
    expected_output: "YES"
    scorers: [exact]
  - name: exact_not_normalized
    input: "Yes or no?"
    expected_output: "yes"
    scorers: [exact]
    metadata: {exact_normalize: false}
  - name: regex_email
    input: "How do I contact you?"
    scorers: [regex]
    metadata:
      regex_pattern: '[a-zA-Z0-9._%+-]+@[a-zA-Z0-9.-]+\.[a-zA-Z]{2,}'
  - name: regex_pattern_not_in_expected_output
    input: "How do I contact you?"
    expected_output: 'support@\w+'
    scorers: [regex]
  - name: no_scorers
    input: "Hi there"
    scorers: []
  - name: agent_raises
    input: "boom"
  - name: every_field
    description: all fields at once, with its own timeout
    input: "What is the weather in Berlin?"
    expected_output: sunny
    expected_tools: [get_weather]
    expected_tool_args:
      get_weather: {location: Berlin, units: F}
    tags: [tools, full]
    metadata: {regex_pattern: 'sunny in \w+', exact_normalize: true, owner: qa}
    scorers: [passfail, regex]
    timeout_seconds: 5
  - name: tool_args_not_a_mapping
    input: "What is the weather in Rome?"
    expected_tool_args:
      get_weather: Rome
  - name: similarity_offline
    input: "Hi, who are you?"
    expected_output: "Hello, how can I help you?"
    scorers: [similarity]
""",
    "travel/fail_fast.yaml": r"""
suite:
  name: fail-fast-aa
  config:
    fail_fast: true
scenarios:
  - name: first_passes
    input: "Find me flights from NYC to London"
    expected_tools: [search_flights]
    expected_tool_args:
      search_flights: {origin: NYC, destination: London}
  - name: second_fails
    input: "Book flight ZZ9 for Ada Lovelace"
    expected_tool_args:
      book_flight: {flight_id: ZZ9, passenger_name: Grace Hopper}
  - name: third_never_runs
    input: "Hi"
""",
    "travel/minimal.yml": r"""
scenarios:
  - name: no_suite_block
    input: "I need to fly somewhere warm"
    expected_tools: [clarify_request]
    tags: [edge-case]
""",
}


@dataclass(frozen=True)
class Row:
    """One scenario as both tools judged it."""

    shape: str
    suite: str
    scenario: str
    agenticassure: str
    probegate: str
    note: str = ""

    @property
    def agrees(self) -> bool:
        return self.agenticassure == self.probegate


def write_suites(directory: Path) -> Path:
    for relative, text in SUITES.items():
        path = directory / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text.lstrip(), "utf-8")
    return directory


def verdict(result: dict[str, Any]) -> str:
    if result.get("error") is not None:
        return "ERROR"
    return "PASS" if result["passed"] else "FAIL"


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "SOURCE_DATE_EPOCH"}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), str(EXAMPLES)])
    env["COLUMNS"] = "200"
    return env


def run_tool(argv: list[str], workdir: Path) -> tuple[int, list[dict[str, Any]], str]:
    """Run one tool's command in ``workdir``; its exit code, results files and output."""
    workdir.mkdir(parents=True, exist_ok=True)
    before = set(workdir.rglob("results_*.json"))  # probegate: probegate-out/
    done = subprocess.run(
        argv, cwd=workdir, env=_env(), capture_output=True, text=True, timeout=300, check=False
    )
    files = sorted(set(workdir.rglob("results_*.json")) - before)
    results = [json.loads(path.read_text("utf-8")) for path in files]
    return done.returncode, results, done.stdout + done.stderr


def agenticassure_run(path: Path, adapter: str, workdir: Path) -> tuple[int, list[Any], str]:
    return run_tool(
        [str(BIN / "agenticassure"), "run", str(path), "-a", adapter, "-o", "json"], workdir
    )


def probegate_run(
    path: Path, adapter: str, workdir: Path, *extra: str
) -> tuple[int, list[Any], str]:
    argv = [str(BIN / "probegate"), "run", str(path), "-a", adapter, "-o", "agenticassure"]
    return run_tool([*argv, "--retry-delay", "0", *extra], workdir)


def verdicts(results: list[dict[str, Any]]) -> dict[tuple[str, str], dict[str, Any]]:
    return {
        (run["suite_name"], sr["scenario"]["name"]): sr
        for run in results
        for sr in run["scenario_results"]
    }


def compare(shape: str, path: Path, adapter: str, workdir: Path) -> list[Row]:
    """Run both tools on ``path`` and pair their verdicts scenario by scenario."""
    _, aa_results, _ = agenticassure_run(path, adapter, workdir / "agenticassure")
    _, pg_results, _ = probegate_run(path, adapter, workdir / "probegate")
    aa, pg = verdicts(aa_results), verdicts(pg_results)
    rows: list[Row] = []
    for key in sorted(set(aa) | set(pg), key=lambda k: (k[0], _order(k, aa, pg))):
        left = verdict(aa[key]) if key in aa else "not run"
        right = verdict(pg[key]) if key in pg else "not run"
        rows.append(Row(shape, key[0], key[1], left, right, _note(aa.get(key), pg.get(key))))
    return rows


def _order(key: tuple[str, str], *maps: dict[tuple[str, str], Any]) -> int:
    for found in maps:
        if key in found:
            return list(found).index(key)
    return 0


def _note(aa: dict[str, Any] | None, pg: dict[str, Any] | None) -> str:
    if aa is None or "similarity" not in aa["scenario"]["scorers"] or not aa.get("error"):
        return ""
    fallback = pg is not None and any(
        (s.get("details") or {}).get("method") == "token_overlap" for s in pg["scores"]
    )
    used = "its token-overlap fallback" if fallback else "no fallback"
    return (
        f"not comparable offline: AgenticAssure's embedding scorer errored ({aa['error']}); "
        f"probegate used {used}"
    )


def init_template(directory: Path) -> Path:
    """``agenticassure init``'s own scenarios, generated by AgenticAssure itself."""
    subprocess.run(
        [str(BIN / "agenticassure"), "init", str(directory)],
        env=_env(),
        capture_output=True,
        check=True,
        timeout=120,
    )
    return directory / "scenarios"


def all_rows(workdir: Path, extra: Sequence[Path] = ()) -> list[Row]:
    rows = compare(
        "written for these tests", write_suites(workdir / "suites"), AGENT, workdir / "own"
    )
    rows += compare(
        "agenticassure init", init_template(workdir / "init"), AGENT, workdir / "init-run"
    )
    rows += compare(
        "probegate example", EXAMPLES / "support-agent.yml", EXAMPLE_SHIM, workdir / "ex"
    )
    for index, path in enumerate(extra):
        rows += compare(str(path), path, AGENT, workdir / f"extra-{index}")
    return rows


def markdown(rows: list[Row]) -> str:
    lines = [
        "| suite shape | suite | scenario | AgenticAssure 0.4 | probegate | note |",
        "|---|---|---|---|---|---|",
    ]
    lines += [
        f"| {r.shape} | {r.suite} | {r.scenario} | {r.agenticassure} | {r.probegate} | {r.note} |"
        for r in rows
    ]
    comparable = [r for r in rows if not r.note]
    same = sum(r.agrees for r in comparable)
    lines.append("")
    lines.append(
        f"{same} of {len(comparable)} comparable verdicts agree; "
        f"{len(rows) - len(comparable)} not comparable offline (similarity)"
    )
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    with tempfile.TemporaryDirectory() as tmp:
        rows = all_rows(Path(tmp), [Path(p).resolve() for p in argv])
    print(markdown(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
