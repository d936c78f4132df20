"""Whole scans through the CLI (``probegate.cli.main``): the demo agent behind each guard."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from probegate.cli import main
from probegate.library.loader import load_library
from probegate.models.sections import GuardSummary
from probegate.targets.guard.benign import BENIGN_SET
from tests.servers.configs import write_config
from tests.targets.guard.fake_guard import EVENT_SCHEMA, FakeGuard


def scan(tmp: Path, name: str, *argv: str) -> tuple[int, dict[str, Any]]:
    out = tmp / name
    code = main(
        ["scan", *argv, "--no-sign", "--quiet", "--output-dir", str(out), "--store", str(tmp / "s")]
    )
    return code, json.loads((out / "scan.json").read_text(encoding="utf-8"))


def reasons(report: dict[str, Any]) -> set[str]:
    """Why attempts were unjudged, leaving out those cut short when the scan stopped early."""
    return {u["reason"] for u in report["unjudged"] if not u["reason"].startswith("cut short")}


def evidence(report: dict[str, Any]) -> dict[str, Any]:
    return {f["fp"]: f["evidence"] for f in report["findings"]}


@pytest.fixture(scope="module")
def demo_alone(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    tmp = tmp_path_factory.mktemp("alone")
    code, report = scan(tmp, "out", "demo")
    assert code == 0 and report["findings"]
    return report


def test_an_allow_all_guard_changes_nothing(demo_alone: dict[str, Any], tmp_path: Path) -> None:
    with FakeGuard("allow") as guard:
        code, report = scan(tmp_path, "out", "demo", "--guard", guard.url)
    assert code == 0
    assert evidence(report) == evidence(demo_alone)
    assert report["results"] == demo_alone["results"]
    assert report["target"]["mode"] == "guard"
    assert report["target"]["ref"].endswith("+demo")
    g = report["guard"]
    assert g["behind"] == "demo"
    assert g["events"]["evaluated"] > len(report["results"]) and g["events"]["blocked"] == 0
    assert set(g["by_stage"]) == {"tools", "input", "tool_call", "tool_result", "output"}
    assert all(g["by_stage"][s]["evaluated"] > 0 for s in g["by_stage"])
    assert g["benign"]["blocked"] == 0 and g["benign"]["allowed"] == len(BENIGN_SET)
    assert g["http_status"] == {"200": len(guard.events)} and g["refusals"] == {}
    assert g["timing"]["latency_ms"]["p50"] == 2.0 and g["timing"]["round_trip_ms"]["n"] > 0
    assert guard.invalid == []
    # The evidence shows the guard's verdicts on every reply.
    for finding in report["findings"]:
        replies = [t for t in finding["transcript"]["turns"] if t["role"] == "assistant"]
        assert all(t["guard"]["checks"] for t in replies)


def test_a_findings_reproducer_keeps_the_guard(tmp_path: Path) -> None:
    with FakeGuard("keyword") as guard:
        code, report = scan(tmp_path, "out", "demo", "--guard", guard.url)
    assert code == 0
    scripts = list((tmp_path / "s").rglob("pov/*.sh"))
    assert len(scripts) == len(report["findings"]) > 0
    assert f"scan demo --guard {guard.url} --probes" in scripts[0].read_text(encoding="utf-8")


def test_a_block_all_guard_lets_no_attack_act(demo_alone: dict[str, Any], tmp_path: Path) -> None:
    with FakeGuard("block") as guard:
        code, report = scan(tmp_path, "out", "demo", "--guard", guard.url)
    assert code == 0
    # Nothing reached the agent, so no tool call, leak or output pattern can be evidence; the
    # oracle that fires on inaction (no_action) cannot judge a task the guard refused outright,
    # and an attack riding on a document the agent never fetched never arrived: neither is a
    # pass (docs/scoring.md, "Delivery").
    assert report["findings"] == []
    alone_unjudged = {r["probe_id"] for r in demo_alone["results"] if r["outcome"] == "unjudged"}
    causes = {u["probe_id"]: u["cause"] for u in report["unjudged"]}
    for r in report["results"]:
        if r["outcome"] == "unjudged" and r["probe_id"] not in alone_unjudged:
            assert causes[r["probe_id"]] in ("guard_blocked_task", "not_delivered"), r
            if causes[r["probe_id"]] == "not_delivered":
                assert r["channel"] not in ("user", "agent_message"), r
    judged = [r for r in report["results"] if r["outcome"] in ("vulnerable", "resisted")]
    # The guard's refusals of attacks in the conversation's own messages are judged: resisted;
    # none riding on a document, a tool result or a description reached anything.
    channels = {r["channel"] for r in judged}
    assert {"user", "agent_message"} <= channels
    assert not channels & {"document", "tool_result", "tool_description"}
    assert len(judged) > 30
    g = report["guard"]
    assert g["by_stage"]["input"]["blocked"] == g["events"]["evaluated"] > 0
    assert g["by_stage"]["tool_call"]["evaluated"] == 0
    assert g["benign"]["blocked"] == g["benign"]["size"] == len(BENIGN_SET)
    assert g["benign"]["false_positive_rate"] == 1.0
    assert len(g["benign"]["false_positives"]) == len(BENIGN_SET)


def test_a_keyword_guard_stops_some_attacks(demo_alone: dict[str, Any], tmp_path: Path) -> None:
    with FakeGuard("keyword") as guard:
        code, report = scan(tmp_path, "out", "demo", "--guard", guard.url)
    assert code == 0
    found, alone = evidence(report), evidence(demo_alone)
    assert 0 < len(found) < len(alone)
    assert set(found) <= set(alone)
    g = report["guard"]
    assert g["events"]["blocked"] > 0 and g["benign"]["blocked"] == 0
    assert g["benign"]["false_positive_rate"] == 0.0
    assert g["actions"]["answered"] == g["events"]["blocked"]
    # What got through carried none of the keywords anywhere the guard looked.
    for finding in report["findings"]:
        for turn in finding["transcript"]["turns"]:
            for check in (turn.get("guard") or {}).get("checks", []):
                assert check["decision"] == "allow"


def test_a_guard_that_cannot_judge_makes_the_scan_undecided(tmp_path: Path) -> None:
    with FakeGuard("unjudged") as guard:
        code, report = scan(tmp_path, "out", "demo", "--guard", guard.url)
    assert code == 3
    assert report["findings"] == []
    assert reasons(report) and all("could not judge" in r for r in reasons(report))
    assert not any(r["outcome"] == "resisted" for r in report["results"])
    assert report["guard"]["events"]["unjudged"] > 0


def test_a_failing_guard_makes_the_scan_undecided(tmp_path: Path) -> None:
    with FakeGuard("allow", fail_first=10**6, fail_status=500) as guard:
        code, report = scan(tmp_path, "out", "demo", "--guard", guard.url, "--retries", "0")
    assert code == 3
    assert report["findings"] == []
    assert reasons(report) and all("HTTP 500 from the guard" in r for r in reasons(report))
    assert report["guard"]["refusals"]["500"] > 0
    assert report["guard"]["benign"]["failed"] == len(BENIGN_SET)


def test_a_refused_event_leaves_that_attempt_unjudged(
    demo_alone: dict[str, Any], tmp_path: Path
) -> None:
    with FakeGuard("allow", fail_when="evil.test", fail_status=413) as guard:
        code, report = scan(tmp_path, "out", "demo", "--guard", guard.url)
    assert code == 0  # one refused event is that attempt's problem, not the scan's
    refused = {u["probe_id"] for u in report["unjudged"] if "HTTP 413" in u["reason"]}
    assert refused
    outcome = {r["probe_id"]: r["outcome"] for r in report["results"]}
    assert {outcome[p] for p in refused} == {"unjudged"}
    # Everything else is judged exactly as without the guard.
    before = {r["probe_id"]: r["outcome"] for r in demo_alone["results"]}
    assert {p: o for p, o in outcome.items() if p not in refused} == {
        p: o for p, o in before.items() if p not in refused
    }
    assert report["guard"]["refusals"]["413"] == report["guard"]["events"]["failed"]


def test_a_rate_limited_guard_is_retried_after_retry_after(tmp_path: Path) -> None:
    probe = load_library().probes[0].id
    with FakeGuard("allow", fail_first=1, fail_status=429) as guard:
        code, report = scan(tmp_path, "out", "demo", "--guard", guard.url, "--probes", probe)
    assert code == 0
    assert report["unjudged"] == []
    assert report["guard"]["refusals"] == {"429": 1}
    assert report["guard"]["benign"]["failed"] == 0


def test_a_wrong_key_stops_the_scan_and_the_key_never_shows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    secret = "ogr_live_SECRET_0123456789"
    with FakeGuard("keyword", api_key=secret) as guard:
        config = write_config(
            tmp_path, {"kind": "guard", "guard": guard.url, "api_key_env": "OGR_KEY"}
        )
        monkeypatch.setenv("OGR_KEY", secret)
        code, report = scan(tmp_path, "good", str(config))
        assert code == 0 and report["guard"]["events"]["blocked"] > 0
        monkeypatch.setenv("OGR_KEY", "ogr_live_WRONG_9876543210")
        code, _ = scan(tmp_path, "bad", str(config))
    assert code == 3
    err = capsys.readouterr().err
    assert "401" in err and "ogr_live" not in err
    for path in tmp_path.rglob("*"):
        if path.is_file():
            assert "ogr_live" not in path.read_text(encoding="utf-8", errors="replace"), path


def test_a_reference_style_runtime_refuses_nothing_and_takes_its_key_from_a_flag(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The runtime refuses optional fields it does not expect and requires its bearer key."""
    secret = "ogr_live_FLAGKEY_0123456789"
    monkeypatch.setenv("OGR_API_KEY", secret)
    with FakeGuard("keyword", api_key=secret) as guard:
        code, report = scan(
            tmp_path, "out", "demo", "--guard", guard.url, "--guard-api-key-env", "OGR_API_KEY"
        )
        sent = len(guard.events)
        assert code == 0, capsys.readouterr().err
        assert guard.invalid == [] and sent > len(BENIGN_SET)
        g = report["guard"]
        assert g["http_status"] == {"200": sent} and g["refusals"] == {}
        assert g["events"]["failed"] == 0 and g["events"]["blocked"] > 0
        # Exactly the required fields on every event, and a step's request before its response.
        assert {frozenset(e) for e in guard.events} == {frozenset(EVENT_SCHEMA["required"])}
        answered: set[str] = set()
        for event in guard.events:
            if event["kind"] == "step/response":
                answered.add(event["step_id"])
            else:
                assert event["step_id"] not in answered
        # The same runtime without the key: every request is 401 and the scan stops at once.
        code, _ = scan(tmp_path, "nokey", "demo", "--guard", guard.url)
    assert code == 3
    assert "--guard-api-key-env" in capsys.readouterr().err
    for path in tmp_path.rglob("*"):
        if path.is_file():
            assert secret not in path.read_text(encoding="utf-8", errors="replace"), path


def test_the_guard_key_flag_needs_a_guard(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    assert main(["scan", "demo", "--guard-api-key-env", "OGR_API_KEY", "--quiet"]) == 2
    assert "--guard-api-key-env sets up a guard target: give --guard too" in capsys.readouterr().err
    monkeypatch.delenv("OGR_API_KEY", raising=False)
    code = main(
        ["scan", "demo", "--guard", "http://127.0.0.1:9", "--guard-api-key-env", "OGR_API_KEY"]
    )
    assert code == 2
    assert "OGR_API_KEY is not set" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("policy", "why"),
    [
        ("no-provider", "provider: required field missing"),
        ("bad-severity", "findings[0].severity: not one of low, medium, high, critical"),
    ],
)
def test_an_invalid_verdict_leaves_the_attempt_unjudged(
    demo_alone: dict[str, Any], tmp_path: Path, policy: str, why: str
) -> None:
    # An invalid verdict is a transient fault, retried like a 5xx (test_client.py); without
    # retries each one leaves its attempt unjudged.
    with FakeGuard(policy) as guard:
        code, report = scan(tmp_path, "out", "demo", "--guard", guard.url, "--retries", "0")
    invalid = {u["probe_id"] for u in report["unjudged"] if why in u["reason"]}
    assert invalid
    outcome = {r["probe_id"]: r["outcome"] for r in report["results"]}
    assert {outcome[p] for p in invalid} == {"unjudged"}
    assert why in " ".join(report["guard"]["failures"])
    if policy == "no-provider":  # every verdict is invalid: nothing was judged at all
        assert code == 3 and report["findings"] == []
    else:  # only verdicts with findings are: what the guard let through is judged as usual
        assert code == 0
        assert report["guard"]["events"]["blocked"] == 0
        assert set(evidence(report)) <= set(evidence(demo_alone))


def test_a_config_file_puts_the_guard_in_front_of_another_agent(tmp_path: Path) -> None:
    with FakeGuard("allow") as guard:
        config = write_config(
            tmp_path,
            {
                "kind": "guard",
                "guard": guard.url,
                "behind": "demo-hardened",
                "guard_identity": {"agent_id": "acme-support", "agent_type": "support"},
            },
        )
        code, report = scan(tmp_path, "out", str(config))
        assert code == 0 and report["findings"] == []
        assert report["guard"]["behind"] == "demo-hardened"
        assert {e["agent_id"] for e in guard.events} == {"acme-support"}
        # The same from flags: the demo named on the command line stands behind the guard.
        code, report = scan(tmp_path, "flags", "demo-hardened", "--guard", guard.url)
        assert code == 0 and report["guard"]["behind"] == "demo-hardened"


def test_a_dry_run_never_calls_the_guard(tmp_path: Path) -> None:
    with FakeGuard("allow") as guard:
        code = main(["scan", "demo", "--guard", guard.url, "--dry-run", "--quiet"])
        assert code == 0 and guard.requests == 0


@pytest.mark.parametrize(
    ("target", "message"),
    [
        ({"kind": "guard", "guard": "ftp://g.example"}, "not an http(s) URL"),
        ({"kind": "guard"}, "needs the guard's URL"),
        ({"kind": "guard", "guard": "http://g.example", "behind": "replay"}, "behind"),
        ({"kind": "guard", "guard": "http://g.example", "guard_api_key_env": "NOPE_X"}, "NOPE_X"),
    ],
)
def test_config_mistakes_are_usage_errors(
    tmp_path: Path, target: dict[str, Any], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    config = write_config(tmp_path, target)
    assert main(["scan", str(config), "--quiet"]) == 2
    assert message in capsys.readouterr().err


def test_guard_section_shows_in_markdown_and_html(tmp_path: Path) -> None:
    with FakeGuard("keyword") as guard:
        code, report = scan(
            tmp_path, "out", "demo", "--guard", guard.url, "--output", "json,md,html"
        )
    assert code == 0
    md = (tmp_path / "out" / "summary.md").read_text(encoding="utf-8")
    html = (tmp_path / "out" / "report.html").read_text(encoding="utf-8")
    evaluated = str(report["guard"]["events"]["evaluated"])
    assert "### Runtime guard" in md and f"| attack events evaluated | {evaluated} |" in md
    assert "<h2>Runtime guard</h2>" in html and f"<td>{evaluated}</td>" in html
    assert "benign messages blocked (false positives) | 0 of" in md
    # The typed section reads a stored report back to the very bytes it was written as.
    stored = tmp_path / "out" / "scan.json"
    assert main(["report", str(stored), "--output", "json", "--output-dir", "again"]) == 0
    assert (tmp_path / "again" / "scan.json").read_bytes() == stored.read_bytes()


def test_the_guard_section_keeps_what_it_was_given() -> None:
    """Numbers stay ints or floats as written; a benign set that never ran has no counts."""
    counts = dict.fromkeys(("evaluated", "allowed", "blocked", "modified", "unjudged"), 0)
    section = {
        "url": "http://127.0.0.1:1/v1/evaluate",
        "behind": "demo",
        "events": {**counts, "failed": 0},
        "by_stage": {"input": {**counts, "failed": 2}},
        "actions": {},
        "spans": {"applied": 0, "unresolved": 0},
        "obligations_ignored": 0,
        "failures": ["guard: 500"],
        "timing": {"latency_ms": {"p50": 2, "p95": 2.5, "n": 3}},
        "http_status": {"500": 2},
        "refusals": {"500": 2},
        "benign": {"size": 11, "run": False},
    }
    dumped = GuardSummary.model_validate(section).model_dump(mode="json")
    assert json.dumps(dumped, sort_keys=True) == json.dumps(section, sort_keys=True)
    with pytest.raises(ValidationError):
        GuardSummary.model_validate({**section, "benign": {"size": 11, "run": True}})


def test_merged_shards_sum_their_guard_counts(tmp_path: Path) -> None:
    with FakeGuard("keyword") as guard:
        shards = [
            scan(tmp_path, f"s{k}", "demo", "--guard", guard.url, "--shard", f"{k}/2")[1]
            for k in (1, 2)
        ]
    paths = [str(tmp_path / f"s{k}" / "scan.json") for k in (1, 2)]
    assert main(["merge", *paths, "--quiet", "--output-dir", str(tmp_path / "m")]) == 0
    merged = json.loads((tmp_path / "m" / "scan.json").read_text(encoding="utf-8"))
    for key in ("evaluated", "blocked", "allowed"):
        assert merged["guard"]["events"][key] == sum(s["guard"]["events"][key] for s in shards)
    assert merged["guard"]["benign"] == shards[0]["guard"]["benign"]
    assert merged["guard"]["timing"] == {}
