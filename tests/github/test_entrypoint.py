"""entrypoint.sh end to end, in a fake GitHub environment, against the real demo targets.

Each test runs the script the container runs (``bash entrypoint.sh`` with the workspace as the
working directory and the inputs as ``PG_*`` variables) and reads back the step outputs, the
job summary and the log the way the runner would.
"""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from probegate.models.report import Authority, SourceLocation
from probegate.models.taxonomy import Severity
from probegate.reports import json_report
from tests.factories import make_finding, make_report
from tests.github.helpers import (
    OUTPUT_NAMES,
    VENV_BIN,
    StartedAction,
    assert_only_intended_commands,
    block_text,
    run_action,
    start_action,
)
from tests.reports.inert import assert_markdown_inert, raw_controls
from tests.servers.base import Handler, LoopbackServer
from tests.servers.configs import KNOWN_PROBES, openai_config
from tests.servers.hostile import LacedAgent, laced_probe
from tests.servers.openai_agent import OpenAIAgentServer


def _scan_json(run) -> dict:  # type: ignore[no-untyped-def]
    return json.loads((run.workspace / run.outputs["json-path"]).read_text(encoding="utf-8"))


# --------------------------------------------------------------------------- the gate


@pytest.mark.slow
def test_hardened_full_scan_passes_fail_under_90(tmp_path):
    run = run_action(
        tmp_path,
        {"PG_TARGET": "demo-hardened", "PG_MODE": "full", "PG_FAIL_UNDER": "90"},
    )
    assert run.rc == 0, run.stdout
    assert_only_intended_commands(run.stdout)
    out = run.outputs
    assert set(out) == OUTPUT_NAMES
    assert out["exit-code"] == "0"
    assert out["json-path"] == "probegate-out/scan.json"
    report = _scan_json(run)
    assert out["score"] == str(report["aivss"]) and int(out["score"]) >= 90
    assert out["band"] == report["band"]
    assert out["authoritative"] == "true" == str(report["authority"]["authoritative"]).lower()
    assert out["findings"] == out["new-findings"] == "0"
    # The Action's default formats: json, sarif, md.
    assert out["sarif-path"] == "probegate-out/scan.sarif"
    assert (run.workspace / out["sarif-path"]).is_file()
    assert out["summary-path"] == "probegate-out/summary.md"
    md = (run.workspace / out["summary-path"]).read_text(encoding="utf-8")
    assert md.strip() in run.summary
    assert "probegate gate: passed" in run.summary
    assert run.annotations == []


def test_demo_fail_on_high_fails_with_annotations(tmp_path):
    run = run_action(tmp_path, {"PG_TARGET": "demo", "PG_FAIL_ON": "high"})
    assert run.rc == 1, run.stdout
    assert_only_intended_commands(run.stdout)
    assert run.outputs["exit-code"] == "1"
    report = _scan_json(run)
    findings = [f for f in report["findings"] if not f.get("suppressed")]
    assert run.outputs["findings"] == run.outputs["new-findings"] == str(len(findings))
    assert run.outputs["authoritative"] == "false"

    severe = [f for f in findings if f["severity"] in ("critical", "high")]
    medium = [f for f in findings if f["severity"] == "medium"]
    assert run.level_count("error") == min(10, len(severe)) > 0
    assert run.level_count("warning") == min(10, len(medium))
    # Each annotation points at the definition its finding names.
    by_id = {f["id"]: f["location"] for f in findings}
    for line in run.annotations:
        (finding_id,) = [fid for fid in by_id if f"finding {fid}." in line]
        where = by_id[finding_id]
        assert f" file={where['path']},line={where['line']},title=probegate " in line
    # The most severe findings are the ones annotated.
    critical_ids = {f["id"] for f in findings if f["severity"] == "critical"}
    shown = [line for line in run.annotations if line.startswith("::error")]
    assert sum(any(fid in line for fid in critical_ids) for line in shown) == min(
        10, len(critical_ids)
    )
    assert "probegate gate: failed" in run.summary
    assert "at most 10 per level" in run.summary  # more findings than annotations
    # The scan's own gate decision is quoted from its log.
    assert any(line.startswith("> - gate ") for line in run.summary.splitlines()), run.summary


def test_demo_fast_fail_under_is_undecided(tmp_path):
    run = run_action(tmp_path, {"PG_TARGET": "demo", "PG_FAIL_UNDER": "50"})
    assert run.rc == 3, run.stdout
    assert_only_intended_commands(run.stdout)
    assert run.outputs["exit-code"] == "3"
    assert run.outputs["authoritative"] == "false"
    assert "probegate gate: undecided" in run.summary


@pytest.mark.slow
def test_annotations_and_summary_can_be_turned_off(tmp_path):
    run = run_action(
        tmp_path,
        {
            "PG_TARGET": "demo",
            "PG_FAIL_ON": "high",
            "PG_ANNOTATIONS": "false",
            "PG_JOB_SUMMARY": "false",
        },
    )
    assert run.rc == 1
    assert run.annotations == []
    assert run.summary == ""
    assert run.outputs["exit-code"] == "1"


def test_summary_without_md_format_falls_back_to_scan_json(tmp_path):
    run = run_action(tmp_path, {"PG_TARGET": "demo", "PG_FORMATS": "json"})
    assert run.rc == 0
    assert run.outputs["summary-path"] == "" and run.outputs["sarif-path"] == ""
    assert "## probegate: CRITICAL" in run.summary
    assert "Top findings" in run.summary


# --------------------------------------------------------------------------- baseline


def _baseline(tmp_path, target: str, *extra: str) -> str:
    """A fast scan of ``target`` inside the workspace, as a committed or downloaded baseline."""
    ws = tmp_path / "workspace"
    ws.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        [str(VENV_BIN / "probegate"), "scan", target, "--quiet", "--output=json",
         "--output-dir=baseline", "--store=.baseline-store", *extra],
        cwd=ws, check=True, capture_output=True, timeout=60,
    )  # fmt: skip
    return "baseline/scan.json"


# Enough attempts a probe for none against all to be beyond chance (docs/gating.md).
REPEATED = "--repeat 8 --asi ASI01,ASI02"


@pytest.mark.slow
def test_new_findings_against_the_baseline_fail_with_the_diff_in_the_summary(tmp_path):
    baseline = _baseline(tmp_path, "demo-hardened", *REPEATED.split())
    inputs = {"PG_TARGET": "demo", "PG_BASELINE": baseline, "PG_ARGS": REPEATED}
    run = run_action(tmp_path, inputs)
    assert run.rc == 1, run.stdout
    assert_only_intended_commands(run.stdout)
    report = _scan_json(run)
    assert run.outputs["new-findings"] == str(len(report["findings"])) != "0"
    assert (run.workspace / "probegate-out" / "baseline-diff.md").is_file()
    diff = (run.workspace / "probegate-out" / "baseline-diff.md").read_text(encoding="utf-8")
    assert diff.strip() and diff.strip() in run.summary
    assert "regression" in run.summary.lower()


@pytest.mark.slow
def test_the_confirm_input_reruns_the_findings_a_fast_scan_cannot_decide(tmp_path):
    """One attempt a probe against the baseline's eight: a leak is within noise until the
    confirm runs reproduce it (docs/github-action.md, "Sampled models")."""
    probes = "--probes asi01.direct-system-prompt-leak.v1,asi01.markdown-image-exfil.v1"
    baseline = _baseline(tmp_path, "demo-hardened", "--repeat", "8", *probes.split())
    inputs = {"PG_TARGET": "demo", "PG_BASELINE": baseline, "PG_ARGS": probes}
    ws = tmp_path / "workspace"
    (tmp_path / "noise").mkdir()
    (tmp_path / "confirmed").mkdir()
    noise = run_action(tmp_path / "noise", inputs, workspace=ws)
    assert noise.rc == 0, noise.stdout
    assert noise.outputs["new-findings"] == "0" != noise.outputs["findings"]
    confirmed = run_action(tmp_path / "confirmed", {**inputs, "PG_CONFIRM": "3"}, workspace=ws)
    assert confirmed.rc == 1, confirmed.stdout
    assert_only_intended_commands(confirmed.stdout)
    confirmation = _scan_json(confirmed)["comparison"]["confirmation"]
    assert confirmation["runs"] == 3 and confirmation["stopped_reason"] == "completed"
    assert confirmed.outputs["new-findings"] == str(len(confirmation["probes"])) != "0"
    assert "### Confirm runs" in confirmed.summary


@pytest.mark.slow
def test_same_findings_as_the_baseline_pass(tmp_path):
    baseline = _baseline(tmp_path, "demo")
    run = run_action(tmp_path, {"PG_TARGET": "demo", "PG_BASELINE": baseline})
    assert run.rc == 0, run.stdout
    assert run.outputs["new-findings"] == "0"
    assert run.outputs["findings"] != "0"


def test_missing_baseline_is_a_notice_and_the_run_stays_green(tmp_path):
    """The first run of a new repository: no baseline file yet."""
    path = "no/such/scan.json\n::error::x,y:z%"
    run = run_action(tmp_path, {"PG_TARGET": "demo", "PG_BASELINE": path})
    assert run.rc == 0, run.stdout
    assert_only_intended_commands(run.stdout)
    assert run.outputs["exit-code"] == "0"
    report = _scan_json(run)
    assert run.outputs["new-findings"] == str(len(report["findings"])) != "0"
    (notice,) = [a for a in run.annotations if "title=probegate baseline" in a]
    assert notice.startswith("::notice title=probegate baseline::no baseline file at ")
    assert "no/such/scan.json%0A::error::x,y:z%25 yet" in notice  # escaped: one line, inert
    assert "no baseline file at" in run.summary and "probegate gate: passed" in run.summary
    assert not (run.workspace / "probegate-out" / "baseline-diff.json").exists()
    assert (run.workspace / run.outputs["sarif-path"]).is_file()


def test_a_baseline_that_exists_but_is_not_a_scan_is_still_exit_2(tmp_path):
    ws = tmp_path / "workspace"
    ws.mkdir()
    (ws / "baseline.json").write_text("{not json", encoding="utf-8")
    run = run_action(tmp_path, {"PG_TARGET": "demo", "PG_BASELINE": "baseline.json"})
    assert run.rc == 2, run.stdout
    assert run.outputs["exit-code"] == "2"
    assert not [a for a in run.annotations if "title=probegate baseline" in a]


# --------------------------------------------------------------------------- hostile inputs

HOSTILE = {
    "PG_TARGET": "demo; touch pwned",
    "PG_CONFIG": """my "agent" 'config'.yml""",
    "PG_MODE": "-full",
    "PG_FAIL_ON": "$(touch pwned)",
    "PG_FAIL_UNDER": "`touch pwned`",
    "PG_JUDGE": "openai:x\n::error::from-input",
    "PG_OUTPUT_DIR": "out $(touch pwned) `touch pwned2` \"q\" 'q'",
    "PG_FORMATS": "json,sarif;touch pwned",
    "PG_SHARD": "1/2 && touch pwned",
    "PG_ARGS": "--probes 'asi01 *' --seed \"4 2\" --store $(touch pwned3) `id` \\$HOME ~ #x",
}


def test_inputs_reach_probegate_verbatim_and_run_nothing(tmp_path):
    run = run_action(tmp_path, HOSTILE, fake=True)
    assert run.rc == 0, run.stdout
    assert run.argv_log == [
        [
            "scan",
            """--config=my "agent" 'config'.yml""",
            "--mode=-full",
            "--fail-under=`touch pwned`",
            "--fail-on=$(touch pwned)",
            "--judge=openai:x\n::error::from-input",
            "--shard=1/2 && touch pwned",
            "--output=json,json,sarif;touch pwned",
            "--output-dir=out $(touch pwned) `touch pwned2` \"q\" 'q'",
            "--probes",
            "asi01 *",
            "--seed",
            "4 2",
            "--store",
            "$(touch",
            "pwned3)",
            "`id`",
            "$HOME",
            "~",
            "#x",
            "--",
            "demo; touch pwned",
        ]
    ]
    assert not [p for p in tmp_path.rglob("pwned*")]
    assert_only_intended_commands(run.stdout)


def test_output_dir_with_shell_syntax_is_a_literal_directory(tmp_path):
    name = 'out $(touch pwned) `touch pwned2` "q"'
    run = run_action(tmp_path, {"PG_TARGET": "demo-hardened", "PG_OUTPUT_DIR": name})
    assert run.rc == 0, run.stdout
    assert (run.workspace / name / "scan.json").is_file()
    assert run.outputs["json-path"] == f"{name}/scan.json"
    assert not [p for p in tmp_path.rglob("pwned*")]


def test_a_newline_in_an_input_cannot_forge_outputs(tmp_path):
    name = "out\nexit-code=0\nscore<<EOF\n100\nEOF"
    run = run_action(
        tmp_path,
        {"PG_TARGET": "demo", "PG_FAIL_ON": "high", "PG_OUTPUT_DIR": name},
    )
    assert run.rc == 1
    assert set(run.outputs) == OUTPUT_NAMES
    assert run.outputs["exit-code"] == "1"
    assert run.outputs["score"] == str(_scan_json(run)["aivss"])
    assert run.outputs["json-path"] == f"{name}/scan.json"
    assert_only_intended_commands(run.stdout)


@pytest.mark.parametrize(
    ("inputs", "needle"),
    [
        ({"PG_ARGS": "--seed 'unterminated"}, "args input cannot be split"),
        ({"PG_ARGS": "--output-dir=elsewhere"}, "may not set --output-dir"),
        ({"PG_ARGS": "--outp sarif"}, "may not set --outp"),
        ({"PG_ANNOTATIONS": "maybe"}, "annotations input must be true or false"),
        ({"PG_ALLOW_MISMATCH": "yes please"}, "allow-mismatch input must be true or false"),
    ],
)
def test_bad_inputs_exit_2_without_scanning(tmp_path, inputs, needle):
    run = run_action(tmp_path, {"PG_TARGET": "demo", **inputs}, fake=True)
    assert run.rc == 2, run.stdout
    assert run.argv_log == []
    assert run.outputs["exit-code"] == "2"
    assert any(needle in line for line in run.annotations), run.stdout
    assert needle in run.summary
    assert_only_intended_commands(run.stdout)


# --------------------------------------------------------------------------- hostile agent text

AGENT_TEXT = (
    "Sure!\n::error::forged by the agent\n::set-output name=exit-code::0\n"
    "::add-mask::x\r::warning::after a bare CR\n  ::notice::indented\n"
    "::stop-commands::guess\n::guess::\n::endgroup::\nno newline at the end ::error::x"
)


def _hostile_report(tmp_path) -> str:
    """A scan.json whose finding text and location try to break out of an annotation."""
    finding = make_finding(1, severity=Severity.CRITICAL).model_copy(
        update={
            "id": "PG-1",
            "probe_id": "asi01.x.v1",
            "name": "name ::warning title=x::y\n::error::z",
            "summary": "agent said:\n::error::injected\r\n::set-output name=score::100 100%",
            "remediation": "fix, it: now",
            "aivss_severity": 9.0,
            "location": SourceLocation(path="agents/a,b:c.yml", line=3),
        }
    )
    report = make_report([finding]).model_copy(
        update={
            "scan_id": "pg-hostile",
            "aivss": 12,
            "band": "CRITICAL",
            "authority": Authority(authoritative=False, reasons=["::error::in a reason"]),
        }
    )
    path = tmp_path / "hostile.json"
    path.write_bytes(json_report.render(report))
    return str(path)


def test_agent_text_issues_no_workflow_command(tmp_path):
    run = run_action(
        tmp_path,
        {"PG_TARGET": "demo", "PG_FORMATS": "json"},
        fake=True,
        env={
            "FAKE_STDOUT": AGENT_TEXT,
            "FAKE_STDERR": "::error::from stderr\n",
            "FAKE_SCAN_JSON": _hostile_report(tmp_path),
            "FAKE_RC": "1",
        },
    )
    assert run.rc == 1
    assert_only_intended_commands(run.stdout)
    inside = block_text(run.stdout)
    assert "::error::forged by the agent" in inside and "::error::from stderr" in inside
    # The one annotation: its properties and message are escaped onto one line.
    (annotation,) = run.annotations
    assert annotation.startswith("::error file=agents/a%2Cb%3Ac.yml,line=3,title=probegate ")
    assert "name %3A%3Awarning title=x%3A%3Ay %3A%3Aerror%3A%3Az" in annotation
    assert "agent said:%0A::error::injected%0A::set-output name=score::100 100%25" in annotation
    assert run.outputs["exit-code"] == "1" and run.outputs["score"] == "12"
    # Markdown keeps agent text inert as well: no line of the summary starts a command.
    assert not [line for line in run.summary.splitlines() if line.lstrip().startswith("::")]


@pytest.mark.slow
def test_real_scan_log_is_inside_the_block(tmp_path):
    run = run_action(tmp_path, {"PG_TARGET": "demo"})
    inside = block_text(run.stdout)
    assert "probegate: scanning demo" in inside
    assert "score " in inside


# --------------------------------------------------------------------------- files and limits


def test_written_files_keep_their_modes_and_go_to_the_workspace_owner(tmp_path):
    """The container writes as root; later steps read as the workspace's owner. A folder that
    was there before keeps its files as they were: a 0600 key is not made readable."""
    ws = tmp_path / "workspace"
    out = ws / "reports"
    out.mkdir(parents=True)
    (out / "deploy.key").write_text("PRIVATE")
    (out / "deploy.key").chmod(0o600)
    (out / "notes.txt").write_text("n")
    (out / "notes.txt").chmod(0o640)
    owner = (1001, 1001) if os.geteuid() == 0 else (os.geteuid(), os.getegid())
    for path in (ws, out, out / "deploy.key", out / "notes.txt"):
        os.chown(path, os.geteuid(), os.getegid())
    os.chown(ws, *owner)
    run = run_action(
        tmp_path, {"PG_TARGET": "demo", "PG_OUTPUT_DIR": "reports"},
        umask=0o077, workspace=ws,
    )  # fmt: skip
    assert run.rc == 0, run.stdout
    assert stat.S_IMODE((out / "deploy.key").stat().st_mode) == 0o600
    assert stat.S_IMODE((out / "notes.txt").stat().st_mode) == 0o640
    assert (out / "deploy.key").stat().st_uid == os.geteuid()  # not the run's to give away
    reports = [out / "scan.json", out / "scan.sarif", out / "summary.md"]
    store = ws / ".probegate"
    for path in [*reports, store, *store.rglob("*")]:
        assert (path.lstat().st_uid, path.lstat().st_gid) == owner, path
    for path in [store, *store.rglob("*")]:
        mode = stat.S_IMODE(path.lstat().st_mode)
        expected = 0o700 if path.is_dir() or path.suffix == ".sh" else 0o600
        assert mode == expected, (path, oct(mode))


def test_a_committed_symlink_is_never_written_through_nor_published(tmp_path):
    ws = tmp_path / "workspace"
    out = ws / "probegate-out"
    out.mkdir(parents=True)
    victim = tmp_path / "victim.txt"
    victim.write_text("ORIGINAL")
    (out / "junit.xml").symlink_to(victim)
    # Stands in for /proc/self/environ: a target that looks freshly written.
    environ = tmp_path / "environ"
    environ.write_text("GITHUB_TOKEN=ghs_supersecret")
    future = time.time() + 3600
    os.utime(environ, (future, future))
    (out / "summary.md").symlink_to(environ)
    run = run_action(tmp_path, {"PG_TARGET": "demo", "PG_FORMATS": "json,junit"}, workspace=ws)
    assert run.rc == 0, run.stdout
    assert victim.read_text() == "ORIGINAL"
    assert not (out / "junit.xml").is_symlink()
    assert "ghs_supersecret" not in run.summary and run.outputs["summary-path"] == ""


@pytest.mark.parametrize("link", ["probegate-out", ".probegate"])
def test_an_output_dir_or_store_that_is_a_symlink_is_refused(tmp_path, link):
    ws = tmp_path / "workspace"
    ws.mkdir()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (ws / link).symlink_to(elsewhere)
    run = run_action(tmp_path, {"PG_TARGET": "demo"}, fake=True, workspace=ws)
    assert run.rc == 2, run.stdout
    assert run.argv_log == []
    assert any("is a symlink" in line for line in run.annotations), run.stdout
    assert list(elsewhere.iterdir()) == []
    assert_only_intended_commands(run.stdout)


class _BidiErrorHandler(Handler):
    def do_POST(self) -> None:
        self.read_json()
        text = "oops \u202eexe.gnp\u202c see https://evil.example/pwn, www.evil.example, "
        text += "a@evil.example"
        self.send_raw(500, text.encode("utf-8"), content_type="text/plain")


class _BidiErrorServer(LoopbackServer):
    handler = _BidiErrorHandler


def test_a_targets_error_reaches_neither_terminal_nor_summary_as_it_was_written(tmp_path):
    """U+202E never reaches the log or a workflow command; bare URLs in the summary are text."""
    ws = tmp_path / "workspace"
    ws.mkdir()
    with _BidiErrorServer() as server:
        (ws / "probegate.yml").write_text(
            f"target: {{kind: openai, endpoint: '{server.url}/v1', model: m}}\n"
        )
        run = run_action(
            tmp_path,
            {"PG_TARGET": "probegate.yml", "PG_ARGS": "--retries 0 --probes asi01.*"},
            workspace=ws,
        )
    assert run.rc == 3, run.stdout
    assert "HTTP 500 from target: oops exe.gnp see" in run.stdout
    assert not any(c in run.stdout + run.summary for c in "\u202a\u202b\u202c\u202d\u202e")
    assert "oops exe.gnp see https&#58;//evil.example/pwn, www&#46;evil.example" in run.summary
    assert "https://evil.example" not in run.summary and "a&#64;evil.example" in run.summary
    assert_only_intended_commands(run.stdout)


def test_a_laced_agent_and_probe_pack_reach_the_log_summary_and_annotations_inert(tmp_path):
    """A real scan of an agent whose every word is hostile, with a probe file of the same: the
    log outside the block holds only the Action's commands, each annotation is one line whose
    text is clean, and the summary makes no link, image, HTML, table cell or command."""
    ws = tmp_path / "workspace"
    ws.mkdir()
    with OpenAIAgentServer(agent=LacedAgent()) as server:
        openai_config(ws, server.endpoint)
        probe_id = laced_probe(ws / "probes")
        run = run_action(
            tmp_path,
            {
                "PG_TARGET": "probegate.yml",
                "PG_FORMATS": "json,sarif,junit,md",
                "PG_FAIL_ON": "high",
                "PG_ARGS": f"--probe-dir probes --probes {probe_id} --probes {KNOWN_PROBES[1]}",
            },
            workspace=ws,
        )
    assert run.rc == 1, run.stdout
    assert_only_intended_commands(run.stdout)
    assert_markdown_inert(run.summary)
    assert "LACED-7Q" in run.summary and "&lt;/script&gt;" in run.summary
    laced = [a for a in run.annotations if "Laced" in a]
    assert len(laced) == 1 and raw_controls(laced[0]) == []
    assert "title=probegate critical%3A Laced link" in laced[0]
    assert raw_controls(block_text(run.stdout)) == []  # the scan's own lines, inside the block
    assert run.outputs["findings"] == "2"


def test_summary_stays_under_githubs_limit(tmp_path):
    big = tmp_path / "big.md"
    row = "| " + "x" * 200 + " |\n"
    big.write_text("## probegate\n" + row * 8000, encoding="utf-8")  # about 1.6 MB
    run = run_action(
        tmp_path,
        {"PG_TARGET": "demo", "PG_FORMATS": "json,md"},
        fake=True,
        env={"FAKE_SCAN_JSON": _hostile_report(tmp_path), "FAKE_SUMMARY_MD": str(big)},
    )
    assert run.rc == 0
    size = len(run.summary.encode("utf-8"))
    assert 900_000 < size <= 1024 * 1024
    assert "Truncated to fit" in run.summary
    assert run.summary.startswith("> **probegate gate: passed**")


def test_stale_reports_from_an_earlier_step_are_not_published(tmp_path):
    ws = tmp_path / "workspace"
    (ws / "probegate-out").mkdir(parents=True)
    (ws / "probegate-out" / "scan.json").write_text(
        json.dumps({"aivss": 99, "band": "EXCELLENT"}), encoding="utf-8"
    )
    run = run_action(tmp_path, {"PG_TARGET": "demo", "PG_FAIL_ON": "bogus"}, workspace=ws)
    assert run.rc == 2
    assert run.outputs["json-path"] == "" and run.outputs["score"] == ""
    assert run.outputs["exit-code"] == "2"


def test_probegate_exit_codes_pass_through(tmp_path):
    for code in (0, 1, 2, 3, 4):
        sub = tmp_path / str(code)
        sub.mkdir()
        run = run_action(sub, {"PG_TARGET": "demo"}, fake=True, env={"FAKE_RC": str(code)})
        assert run.rc == code
        assert run.outputs["exit-code"] == str(code)


def test_an_unexpected_exit_status_is_an_internal_error(tmp_path):
    run = run_action(tmp_path, {"PG_TARGET": "demo"}, fake=True, env={"FAKE_RC": "137"})
    assert run.rc == 4
    assert run.outputs["exit-code"] == "4"


# --------------------------------------------------------------------------- a cancelled job

# GitHub cancels a container action by sending SIGINT to the container's PID 1 (the
# entrypoint), then SIGTERM 7.5 s later.
SIGTERM_AFTER = 7.5


def _cancel(started: StartedAction, ready: Callable[[], bool]) -> tuple[float, bool]:
    """Once ``ready()``, SIGINT to the entrypoint, SIGTERM 7.5 s later if it still runs; how
    long it took to end after SIGINT, and whether SIGTERM was sent."""
    deadline = time.monotonic() + 60
    while not ready():
        assert started.proc.poll() is None, "the run ended before it could be cancelled"
        assert time.monotonic() < deadline, "the run never got going"
        time.sleep(0.05)
    sent = time.monotonic()
    started.proc.send_signal(signal.SIGINT)
    try:
        started.proc.wait(timeout=SIGTERM_AFTER)
        return time.monotonic() - sent, False
    except subprocess.TimeoutExpired:
        started.proc.send_signal(signal.SIGTERM)
    started.proc.wait(timeout=60)
    return time.monotonic() - sent, True


def test_a_cancelled_job_publishes_the_partial_report_outputs_and_summary(tmp_path):
    """A real scan of a slow agent, cancelled as GitHub cancels a job: the scan stops on the
    forwarded signal and writes its partial report; the outputs, the job summary and the
    workspace files are published, the files handed to the workspace's owner."""
    ws = tmp_path / "workspace"
    ws.mkdir()
    owner = (1001, 1001) if os.geteuid() == 0 else (os.geteuid(), os.getegid())
    os.chown(ws, *owner)
    with OpenAIAgentServer(latency=0.3) as agent:
        config = openai_config(ws, agent.endpoint)
        started = start_action(
            tmp_path,
            {"PG_CONFIG": config.name, "PG_FORMATS": "json,sarif,md,html", "PG_FAIL_ON": "high"},
            workspace=ws,
        )
        journal = ws / ".probegate" / "scans"
        ready = lambda: sum(1 for p in journal.glob("*/journal.jsonl") for _ in p.open()) > 3  # noqa: E731
        took, _termed = _cancel(started, ready)
        run = started.finish(timeout=60)
    assert run.rc == 143, run.stdout[-3000:]
    assert took < SIGTERM_AFTER + 5
    report = _scan_json(run)
    assert report["stopped_reason"] == "cancelled"
    assert 0 < report["coverage"]["attempts_completed"] < report["coverage"]["attempts_planned"]
    assert run.outputs.keys() == OUTPUT_NAMES
    assert run.outputs["exit-code"] == "143" and run.outputs["json-path"]
    assert run.outputs["sarif-path"] and run.outputs["summary-path"]
    assert "probegate gate: cancelled** (exit code 143: the scan was stopped" in run.summary
    assert "interrupted by SIGTERM" in block_text(run.stdout)
    assert_only_intended_commands(run.stdout)
    written = [*(ws / "probegate-out").iterdir(), *(ws / ".probegate").rglob("*")]
    assert any(p.name == "report.html" for p in written)
    for path in written:
        assert (path.lstat().st_uid, path.lstat().st_gid) == owner, path


# GitHub's last word: SIGKILL, 10 s after the SIGINT.
SIGKILL_AFTER = 10.0


@pytest.mark.slow
def test_a_cancelled_scan_of_an_agent_that_takes_20_s_a_reply_publishes_before_the_sigkill(
    tmp_path,
):
    """Every reply takes 20 s, so every attempt is in flight when GitHub cancels: SIGINT, SIGTERM
    7.5 s later, SIGKILL 2.5 s after that. The scan abandons its requests in flight (it once
    waited for them at exit, and SIGKILL left the outputs empty and the files root's): the
    partial report, the outputs and the summary are published, and the step ends, well before
    the SIGKILL."""
    ws = tmp_path / "workspace"
    ws.mkdir()
    owner = (1001, 1001) if os.geteuid() == 0 else (os.geteuid(), os.getegid())
    os.chown(ws, *owner)
    with OpenAIAgentServer(latency=20) as agent:
        config = openai_config(ws, agent.endpoint)
        started = start_action(
            tmp_path,
            {"PG_CONFIG": config.name, "PG_FORMATS": "json,sarif,md", "PG_FAIL_ON": "high"},
            workspace=ws,
        )
        deadline = time.monotonic() + 60
        while len(agent.bodies) < 2:  # the scan is waiting on the agent
            assert started.proc.poll() is None and time.monotonic() < deadline
            time.sleep(0.05)
        sent = time.monotonic()
        started.proc.send_signal(signal.SIGINT)
        killed = False
        try:
            started.proc.wait(timeout=SIGTERM_AFTER)
        except subprocess.TimeoutExpired:
            started.proc.send_signal(signal.SIGTERM)
            try:
                started.proc.wait(timeout=SIGKILL_AFTER - SIGTERM_AFTER)
            except subprocess.TimeoutExpired:
                started.proc.kill()
                killed = True
        took = time.monotonic() - sent
        run = started.finish(timeout=30)
    print(f"\n20 s-per-reply agent: the step ended {took:.2f} s after SIGINT")
    assert not killed and took < 3.0, took
    assert run.rc == 143, run.stdout[-3000:]
    report = _scan_json(run)
    assert report["stopped_reason"] == "cancelled"
    assert run.outputs.keys() == OUTPUT_NAMES and run.outputs["exit-code"] == "143"
    assert run.outputs["json-path"] and run.outputs["sarif-path"] and run.outputs["summary-path"]
    assert "probegate gate: cancelled" in run.summary
    for path in [*(ws / "probegate-out").iterdir(), *(ws / ".probegate").rglob("*")]:
        assert (path.lstat().st_uid, path.lstat().st_gid) == owner, path


@pytest.mark.slow
def test_the_first_signal_reaches_the_scan_once_and_the_next_waits_for_it(tmp_path):
    """SIGINT reaches the scan as SIGTERM (a background process may ignore SIGINT); the SIGTERM
    7.5 s later finds the scan still writing its report and is not passed on, so the scan ends
    on its own and the run is published."""
    ws = tmp_path / "workspace"
    signals = tmp_path / "signals"
    reports = tmp_path / "report.json"
    reports.write_text(json_report.render(make_report([make_finding(1)])).decode())
    env = {
        "FAKE_SLEEP": "60",
        "FAKE_STOPPING": str(SIGTERM_AFTER + 2),
        "FAKE_SIGNAL_LOG": str(signals),
        "FAKE_SCAN_JSON": str(reports),
    }
    started = start_action(tmp_path, {"PG_TARGET": "demo"}, fake=True, env=env, workspace=ws)
    took, termed = _cancel(started, lambda: started.argv_log.exists())
    run = started.finish(timeout=30)
    assert termed and took > SIGTERM_AFTER + 2  # it waited for the scan past the SIGTERM
    assert signals.read_text().splitlines() == ["SIGTERM"]  # one signal, passed on once
    assert run.rc == 143 and run.outputs["exit-code"] == "143"
    assert run.outputs["json-path"] == "probegate-out/scan.json"
    assert "probegate gate: cancelled" in run.summary
    assert_only_intended_commands(run.stdout)


class _SlowIndex(Handler):
    """A package index that takes 3 s to find nothing: pip is busy while the job is cancelled."""

    def do_GET(self) -> None:
        time.sleep(3)
        self.send_raw(404, b"not here", content_type="text/plain")


def test_a_job_cancelled_before_the_scan_starts_runs_no_scan_and_says_so(tmp_path):
    ws = tmp_path / "workspace"
    ws.mkdir()
    env = {"FAKE_SLEEP": "60", "FAKE_SIGNAL_LOG": str(tmp_path / "signals")}
    with LoopbackServer() as index:
        index.httpd.RequestHandlerClass = _SlowIndex
        (ws / "requirements.txt").write_text(
            f"--index-url {index.url}/simple\nnothing-here==1.0 --hash=sha256:{'0' * 64}\n"
        )
        started = start_action(
            tmp_path, {"PG_TARGET": "demo", "PG_REQUIREMENTS": "requirements.txt"}, fake=True,
            env=env, workspace=ws,
        )  # fmt: skip
        _cancel(started, lambda: "::group::" in _text(started.stdout_path))
        run = started.finish(timeout=60)
    assert run.rc == 143 and run.outputs["exit-code"] == "143"
    assert [call[0] for call in run.argv_log] == []  # no scan began
    assert "probegate gate: cancelled" in run.summary
    assert_only_intended_commands(run.stdout)


def _text(path: Path) -> str:
    return path.read_text(encoding="utf-8", errors="replace") if path.exists() else ""
