"""What a scan refuses before its first request: exit 2, one line, nothing spent.

Each test points a scan at a real loopback agent that counts what it is sent, so "nothing
spent" is measured, not assumed: the user's mistake (a baseline of another mode, a store that
cannot be written, a budget that cannot be counted, a config that reads outside its directory
or explodes into gigabytes) must cost neither a request nor a whole scan.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from probegate.cli import main
from tests.servers.configs import TOOLS, openai_config, scan_args, write_config
from tests.servers.openai_agent import OpenAIAgentServer

PROBE = ("--probes", "asi01.direct-system-prompt-leak.v1")


@pytest.fixture
def agent() -> Iterator[OpenAIAgentServer]:
    with OpenAIAgentServer() as server:
        yield server


def one_error_line(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    assert lines[0].startswith("error: ") and "Traceback" not in err
    return lines[0]


# --------------------------------------------------------------------------- baseline


def test_a_baseline_of_another_mode_is_refused_before_any_request(
    tmp_path: Path, agent: OpenAIAgentServer, capsys: pytest.CaptureFixture[str]
) -> None:
    config = openai_config(tmp_path, agent.endpoint)
    assert main(scan_args(config, tmp_path / "base", *PROBE)) == 0
    baseline = tmp_path / "base" / "out" / "scan.json"
    sent = agent.requests
    capsys.readouterr()

    code = main(
        scan_args(config, tmp_path / "b", *PROBE, "--mode", "smart", "--baseline", str(baseline))
    )
    assert code == 2
    assert one_error_line(capsys) == (
        "error: cannot compare: modes differ (baseline fast, current smart) (pass "
        "--allow-mismatch to compare the common probes only)"
    )
    assert agent.requests == sent, "the refused scan sent requests"
    assert not (tmp_path / "b" / "store").exists()

    # Accepted on purpose: the scan runs, writes its report and evaluates its gates.
    code = main(
        scan_args(
            config,
            tmp_path / "c",
            *PROBE,
            "--mode",
            "smart",
            "--baseline",
            str(baseline),
            "--allow-mismatch",
            "--fail-on",
            "critical",
        )
    )
    assert code in (0, 1)
    report = json.loads((tmp_path / "c" / "out" / "scan.json").read_text())
    assert report["comparison"] is not None and agent.requests > sent


# --------------------------------------------------------------------------- output locations


@pytest.mark.parametrize("flag", ["--store", "--output-dir", "--record"])
def test_an_unwritable_output_location_is_exit_2_before_any_request(
    tmp_path: Path, agent: OpenAIAgentServer, capsys: pytest.CaptureFixture[str], flag: str
) -> None:
    config = openai_config(tmp_path, agent.endpoint)
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    args = scan_args(config, tmp_path, *PROBE)
    if flag in args:
        args[args.index(flag) + 1] = str(blocker / "x")
    else:
        args += [flag, str(blocker / "x")]
    assert main(args) == 2
    line = one_error_line(capsys)
    assert line.startswith(f"error: {blocker / 'x'}: cannot be used as the ")
    assert line.endswith(f"not a directory ({blocker} is not a directory)")
    assert agent.requests == 0


# --------------------------------------------------------------------------- budget


def test_a_dollar_budget_on_an_unpriced_model_is_refused_unless_accepted(
    tmp_path: Path, agent: OpenAIAgentServer, capsys: pytest.CaptureFixture[str]
) -> None:
    config = openai_config(tmp_path, agent.endpoint)
    assert main(scan_args(config, tmp_path, *PROBE, "--budget-usd", "1")) == 2
    line = one_error_line(capsys)
    assert line.startswith(
        "error: --budget-usd 1 cannot be enforced: no price for the target's model 'fake-1' in "
        "target.prices"
    )
    assert "--allow-unpriced" in line
    assert agent.requests == 0
    assert main(scan_args(config, tmp_path, *PROBE, "--budget-usd", "1", "--allow-unpriced")) == 0
    assert agent.requests > 0

    (tmp_path / "priced").mkdir()
    priced = openai_config(
        tmp_path / "priced",
        agent.endpoint,
        prices={"fake-1": {"input_per_1k": 0.001, "output_per_1k": 0.002}},
    )
    assert main(scan_args(priced, tmp_path / "priced", *PROBE, "--budget-usd", "1")) == 0
    report = json.loads((tmp_path / "priced" / "out" / "scan.json").read_text())
    assert report["cost_usd"] > 0


def test_a_budget_on_an_agent_that_costs_nothing_is_fine(tmp_path: Path) -> None:
    args = ["scan", "demo", "--budget-usd", "1", "--store", str(tmp_path / "s")]
    assert main([*args, "--output-dir", str(tmp_path / "o"), "--quiet"]) == 0


# --------------------------------------------------------------------------- config files


def test_a_config_path_outside_its_directory_is_refused(
    tmp_path: Path, agent: OpenAIAgentServer, capsys: pytest.CaptureFixture[str]
) -> None:
    """``system_prompt: /proc/self/environ`` once sent the signing secret to the endpoint."""
    project = tmp_path / "repo"
    project.mkdir()
    target = {"kind": "openai", "endpoint": agent.endpoint, "model": "m", "tools": TOOLS}
    config = write_config(project, {**target, "system_prompt": "/proc/self/environ"})
    assert main(scan_args(config, tmp_path, *PROBE)) == 2
    line = one_error_line(capsys)
    assert line == (
        f"error: {config}: target.system_prompt: '/proc/self/environ' leads outside the config "
        f"file's directory {project.resolve()}; move it under that directory, or pass "
        "--allow-outside-config to allow it"
    )
    assert agent.requests == 0

    # A symlink committed inside the tree is followed before the check.
    (project / "prompt.txt").symlink_to(tmp_path / "secret.txt")
    (tmp_path / "secret.txt").write_text("TOP-SECRET")
    config = write_config(project, {**target, "system_prompt": "prompt.txt"})
    assert main(scan_args(config, tmp_path, *PROBE)) == 2
    assert "(through a symlink)" in one_error_line(capsys)
    # ... and so is a scan: setting that writes.
    write_config(project, target, {"output_dir": "../elsewhere"})
    assert main(["scan", str(config), "--store", str(tmp_path / "s"), "--quiet"]) == 2
    assert "scan.output_dir: '../elsewhere' leads outside" in one_error_line(capsys)
    assert agent.requests == 0

    # The flag allows it; a path given as a flag is the user's own and never confined.
    config = write_config(project, {**target, "system_prompt": "prompt.txt"})
    assert main(scan_args(config, tmp_path, *PROBE, "--allow-outside-config")) == 0
    assert any("TOP-SECRET" in json.dumps(body) for body in agent.bodies)
    flag_config = write_config(project, target)
    code = main(
        scan_args(flag_config, tmp_path, *PROBE, "--system-prompt", str(tmp_path / "secret.txt"))
    )
    assert code == 0


def test_a_config_cannot_allow_itself_outside(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = write_config(tmp_path, {"kind": "demo"}, {"allow_outside_config": True})
    assert main(["scan", str(config), "--store", str(tmp_path / "s"), "--quiet"]) == 2
    assert one_error_line(capsys).endswith("scan.allow_outside_config: unknown setting")


def test_paths_inside_the_tree_resolve_against_the_config_file(
    tmp_path: Path, agent: OpenAIAgentServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = tmp_path / "repo" / "ci"
    project.mkdir(parents=True)
    (project / "prompts").mkdir()
    (project / "prompts" / "support.txt").write_text("You are Acme support.\n")
    target = {"kind": "openai", "endpoint": agent.endpoint, "model": "m", "tools": TOOLS}
    write_config(project, {**target, "system_prompt": "prompts/support.txt"}, {"output_dir": "out"})
    monkeypatch.chdir(tmp_path)  # not the config's directory
    assert (
        main(["scan", "repo/ci/probegate.yml", *PROBE, "--store", "s", "--quiet", "--no-sign"]) == 0
    )
    assert (project / "out" / "scan.json").is_file()
    assert agent.bodies[0]["messages"][0]["content"].startswith("You are Acme support.")


# --------------------------------------------------------------------------- YAML limits


def _bomb(directory: Path, endpoint: str) -> Path:
    lines = [
        "target:",
        "  kind: openai",
        f"  endpoint: {endpoint}",
        "  model: m",
        "  params:",
        "    a0: &a0 [" + ",".join(["x"] * 10) + "]",
    ]
    for i in range(1, 12):
        lines.append(f"    a{i}: &a{i} [" + ",".join([f"*a{i - 1}"] * 10) + "]")
    path = directory / "probegate.yml"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@pytest.mark.parametrize("dry_run", [True, False])
def test_an_alias_bomb_config_is_exit_2_and_never_valid(
    tmp_path: Path, agent: OpenAIAgentServer, capsys: pytest.CaptureFixture[str], dry_run: bool
) -> None:
    config = _bomb(tmp_path, agent.endpoint)
    args = scan_args(config, tmp_path, *(["--dry-run"] if dry_run else []))
    assert main(args) == 2
    assert one_error_line(capsys) == (
        f"error: {config}: YAML expands to more than 1,000,000 values through its aliases "
        "(an alias bomb?)"
    )
    assert capsys.readouterr().out == ""  # a dry run never calls it valid
    assert agent.requests == 0


def test_a_100_mb_config_is_refused_by_the_installed_command(tmp_path: Path) -> None:
    config = tmp_path / "probegate.yml"
    with config.open("wb") as handle:
        handle.write(b"target: {kind: demo}\n# ")
        handle.truncate(100 * 1024 * 1024)
    proc = subprocess.run(
        [str(Path(sys.executable).parent / "probegate"), "scan", str(config), "--dry-run"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 2
    assert (
        proc.stderr == f"error: {config}: config file is larger than 8 MiB; refusing to read it\n"
    )


def test_yaml_in_the_config_is_still_read_normally(tmp_path: Path) -> None:
    config = tmp_path / "probegate.yml"
    config.write_text(
        yaml.safe_dump({"target": {"kind": "demo"}, "scan": {"mode": "fast"}}), encoding="utf-8"
    )
    args = [
        "scan",
        str(config),
        "--store",
        str(tmp_path / "s"),
        "--output-dir",
        str(tmp_path / "o"),
    ]
    assert main([*args, "--quiet", "--no-sign"]) == 0


@pytest.mark.parametrize(
    ("argv", "what"),
    [
        (["verify", "/dev/zero"], "report file"),
        (["report", "/dev/zero"], "report file"),
        (["compare", "/dev/zero", "/dev/zero"], "report file"),
        (["scan", "demo", "--baseline", "/dev/zero"], "report file"),
        (["scan", "demo", "--suppressions", "/dev/zero"], "suppression file"),
        (["scan", "demo", "--sign", "--signing-key", "/dev/zero"], "signing key"),
        (["scan", "--config", "/dev/zero"], "config file"),
    ],
)
def test_an_endless_input_is_refused_not_read(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str], what: str
) -> None:
    """/dev/zero never ends: reading it once took 12 GB before anything was said."""
    extra = ["--store", str(tmp_path / "s"), "--output-dir", str(tmp_path / "o")]
    assert main(argv + (extra if argv[0] == "scan" else [])) == 2
    line = one_error_line(capsys)
    assert line.endswith(f"/dev/zero: not a regular file, not a {what}") or line.endswith(
        "no scan file /dev/zero"
    ), line
