"""Property: a hostile reply, through every kind, into every format (docs/targets.md).

Hypothesis draws replies of any code point (lone surrogates, controls, bidi overrides), any
size, any depth and any number of tool calls; each is served by a real loopback agent (the
``openai`` and ``http`` kinds, ``openai`` behind a ``guard``), returned by an in-process agent
(``python``), and replayed from that agent's recording (``replay``). Every scan must end with
exit 0 to 3, every format written (json, sarif, junit, md, html, pdf), a report the strict
reader accepts, and journal lines within the bound.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from probegate.cli import main
from probegate.models.bounds import TRANSCRIPT_MAX
from probegate.models.stored import load_report
from probegate.reports import FORMATS
from tests.servers import hostile
from tests.servers.configs import TOOLS, write_config
from tests.servers.hostile import HostileReply, HostileServer
from tests.targets.guard.fake_guard import FakeGuard

KINDS = ("openai", "http", "python", "guard", "replay")
PROBE = "asi02.email-blast.v1"
JOURNAL_LINE_MAX = 4 * TRANSCRIPT_MAX + 256 * 1024

hostile_text = st.text(alphabet=st.characters(exclude_categories=()), max_size=40)
replies = st.builds(
    lambda text, repeat, calls, name, depth, argument, deep_body: HostileReply(
        text * repeat, calls, name, depth, argument, deep_body
    ),
    hostile_text,
    st.sampled_from([1, 2, 1_000, 30_000]),
    st.sampled_from([0, 1, 3, 70]),
    st.sampled_from(["send_email", "lookup_customer", "", "\ud800", "x" * 300]),
    st.sampled_from([0, 1, 40, 300]),
    hostile_text,
    st.sampled_from([0, 0, 1_001]),
)


@pytest.fixture(scope="module")
def agents() -> Iterator[tuple[HostileServer, FakeGuard]]:
    with HostileServer() as server, FakeGuard("allow", lifetime=600.0) as guard:
        yield server, guard


def _target(kind: str, server: HostileServer, guard: FakeGuard, tmp: Path) -> dict[str, object]:
    openai = {
        "kind": "openai",
        "endpoint": f"{server.url}/v1",
        "model": "fake-1",
        "max_turns": 3,
        "tools": TOOLS,
    }
    if kind == "openai":
        return openai
    if kind == "guard":
        return {**openai, "kind": "guard", "guard": guard.url, "behind": "openai"}
    if kind == "http":
        return {
            "kind": "http",
            "tools": TOOLS,
            "http": {
                "url": f"{server.url}/agent",
                "body": {"q": "{{input}}"},
                "response_text": "output",
                "response_tool_calls": "tool_calls",
            },
        }
    python = {"kind": "python", "python": "tests.servers.hostile:python_agent", "tools": TOOLS}
    if kind == "python":
        return python
    directory = tmp / "recorded"
    config = write_config(tmp, python)
    flags = [
        "--record",
        str(directory),
        "--store",
        str(tmp / "rs"),
        "--output-dir",
        str(tmp / "ro"),
    ]
    main(["scan", str(config), "--probes", PROBE, "--no-sign", "--quiet", *flags])
    return {"kind": "replay", "replay": str(directory)}


def _scan(kind: str, agents: tuple[HostileServer, FakeGuard], tmp: Path) -> None:
    server, guard = agents
    config = write_config(tmp, _target(kind, server, guard, tmp))
    out = tmp / "out"
    flags = ["--output", ",".join(FORMATS), "--store", str(tmp / "store"), "--output-dir", str(out)]
    code = main(["scan", str(config), "--probes", PROBE, "--no-sign", "--quiet", *flags])
    assert code <= 3, kind
    for fmt in FORMATS.values():
        assert (out / fmt.filename).stat().st_size > 0, (kind, fmt.name)
    report = load_report(out / "scan.json")  # the strict reader: what verify and compare read
    assert report.results or report.unjudged or report.not_applicable
    json.loads((out / "scan.sarif").read_bytes())
    for journal in (tmp / "store" / "scans").glob("*/journal.jsonl"):
        assert all(len(line) <= JOURNAL_LINE_MAX for line in journal.read_bytes().splitlines())


@pytest.mark.parametrize("kind", KINDS)
@settings(
    max_examples=4,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(reply=replies)
@example(reply=HostileReply("\ud83d", calls=1, name="\udfff", depth=1_500, argument="\ud800"))
@example(reply=HostileReply("A" * 1_000_000 + "\ud800", calls=1, deep_body=1_001))
@example(reply=HostileReply("x", calls=10_000))
def test_a_hostile_reply_through_every_kind_into_every_format(
    kind: str,
    reply: HostileReply,
    agents: tuple[HostileServer, FakeGuard],
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    agents[0].reply = reply
    hostile.CURRENT[0] = reply
    _scan(kind, agents, tmp_path_factory.mktemp(kind))
