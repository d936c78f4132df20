"""Mistakes on the command line and in probegate.yml: a did-you-mean for each, all in one run."""

from __future__ import annotations

from pathlib import Path

import pytest

from probegate.cli import main


def _error(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "Traceback" not in err, err
    return err.removeprefix("error: ").rstrip("\n")


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (
            ["scan", "demo", "--fail-ob", "high"],
            "probegate scan: unrecognized arguments: --fail-ob high (did you mean '--fail-on'?)",
        ),
        (
            ["scan", "demo", "--fail-ob=high", "--qiuet"],
            "probegate scan: unrecognized arguments: --fail-ob=high --qiuet "
            "(did you mean '--fail-on' for --fail-ob, '--quiet' for --qiuet?)",
        ),
        (
            ["compare", "--jsn", "a.json", "b.json"],
            "probegate compare: unrecognized arguments: --jsn (did you mean '--json'?)",
        ),
        (
            ["probes", "list", "--probe-dri", "x"],
            "probegate probes: unrecognized arguments: --probe-dri x (did you mean '--probe-dir'?)",
        ),
        (
            ["scna", "demo"],
            "probegate: argument COMMAND: invalid choice: 'scna' (did you mean 'scan'?) "
            "(choose from 'init', 'scan', 'report', 'verify', 'compare', 'merge', 'probes', "
            "'keys', 'run')",
        ),
        (
            ["probes", "lsit"],
            "probegate probes: argument ACTION: invalid choice: 'lsit' (did you mean 'list'?) "
            "(choose from 'list', 'show', 'lint')",
        ),
        (
            ["scan", "demo", "--mode", "fsat"],
            "probegate scan: argument --mode: invalid choice: 'fsat' (did you mean 'fast'?) "
            "(choose from 'fast', 'smart', 'full')",
        ),
        (
            ["scan", "demo-hardend"],
            "demo-hardend: no such config file, nor a bundled agent "
            "(did you mean 'demo-hardened'?)",
        ),
    ],
)
def test_a_mistyped_word_gets_the_closest_real_one(
    in_tmp: Path, capsys: pytest.CaptureFixture[str], argv: list[str], expected: str
) -> None:
    assert main(argv) == 2
    assert _error(capsys) == expected


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (
            ["scan", "demo", "--frobnicate-everything"],
            "probegate scan: unrecognized arguments: --frobnicate-everything",
        ),
        (
            ["scan", "demo", "--mode", "turbo"],
            "probegate scan: argument --mode: invalid choice: 'turbo' "
            "(choose from 'fast', 'smart', 'full')",
        ),
        (["scan", "agent.yml"], "agent.yml: config file not found"),
    ],
)
def test_nothing_close_suggests_nothing(
    in_tmp: Path, capsys: pytest.CaptureFixture[str], argv: list[str], expected: str
) -> None:
    assert main(argv) == 2
    assert _error(capsys) == expected


def _scan(directory: Path, text: str, *argv: str) -> int:
    (directory / "probegate.yml").write_text(text, encoding="utf-8")
    return main(["scan", "--dry-run", *argv])


def test_every_problem_of_a_config_in_one_run(
    in_tmp: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = (
        "target:\n  kind: openai\n  endpint: http://127.0.0.1:9/v1\n  modle: m\n"
        "scan:\n  mdoe: fast\n  concurency: 2\n"
    )
    assert _scan(in_tmp, text) == 2
    assert _error(capsys) == (
        "probegate.yml: 4 problems:\n"
        "  scan.mdoe: unknown setting (did you mean 'mode'?)\n"
        "  scan.concurency: unknown setting (did you mean 'concurrency'?)\n"
        "  target.endpint: unknown field (did you mean 'endpoint'?)\n"
        "  target.modle: unknown field (did you mean 'model'?)"
    )


def test_a_mistyped_key_is_said_once_not_also_as_the_missing_one(
    in_tmp: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = (
        "target:\n  kind: openai\n  endpoint: http://127.0.0.1:9/v1\n  model: m\n  tools:\n"
        "    - nme: lookup\n      capabilities: [pii_read]\n"
        "    - name: mail\n      capabilities: [egres]\n"
    )
    assert _scan(in_tmp, text) == 2
    lines = _error(capsys).splitlines()
    assert lines[0] == "probegate.yml: 2 problems:"
    assert lines[1] == "  target.tools[0].nme: unknown field (did you mean 'name'?)"
    assert lines[2].startswith("  target.tools[1] ('mail').capabilities[0]: Input should be")
    assert len(lines) == 3


def test_problems_of_the_file_and_of_the_flags_together(
    in_tmp: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = "target:\n  kind: demo\nscan:\n  mode: slow\n"
    assert _scan(in_tmp, text, "--retries", "-1") == 2
    assert _error(capsys) == (
        "2 problems:\n"
        "  probegate.yml: scan.mode: Input should be 'fast', 'smart' or 'full'\n"
        "  --retries: Input should be greater than or equal to 0"
    )


def test_top_level_keys_and_the_kind_get_suggestions(
    in_tmp: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _scan(in_tmp, "targt:\n  kind: demo\nscna: {}\nnotes: x\n") == 2
    assert _error(capsys) == (
        "probegate.yml: 3 problems:\n"
        "  targt: unknown top-level key (did you mean 'target'?)\n"
        "  scna: unknown top-level key (did you mean 'scan'?)\n"
        "  notes: unknown top-level key (a config file holds target: and scan:)"
    )
    assert _scan(in_tmp, "target:\n  kind: opnai\n") == 2
    assert _error(capsys).startswith(
        "probegate.yml: target.kind: unknown kind 'opnai' (did you mean 'openai'?) (one of "
    )


def test_one_problem_stays_one_line(in_tmp: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert _scan(in_tmp, "target:\n  kind: demo\nscan:\n  mdoe: fast\n") == 2
    assert _error(capsys) == "probegate.yml: scan.mdoe: unknown setting (did you mean 'mode'?)"


def test_a_mistyped_choice_in_the_file_gets_the_closest_real_one(
    in_tmp: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = (
        "target:\n  kind: openai\n  endpoint: http://127.0.0.1:9/v1\n  model: m\n"
        "  api: respones\nscan:\n  mode: fsat\n  fail_on: hihg\n"
    )
    assert _scan(in_tmp, text) == 2
    assert _error(capsys) == (
        "probegate.yml: 3 problems:\n"
        "  target.api: Input should be 'chat' or 'responses' (did you mean 'responses'?)\n"
        "  scan.mode: Input should be 'fast', 'smart' or 'full' (did you mean 'fast'?)\n"
        "  scan.fail_on: Input should be 'critical', 'high', 'medium' or 'low' "
        "(did you mean 'high'?)"
    )


@pytest.mark.parametrize(
    ("text", "hint"),
    [
        (
            "target:\n  kind: http\n  endpoint: http://127.0.0.1:9/\n"
            "  http: {method: psot, body: {m: '{{input}}'}, response_text: m}\n",
            "target.http.method: Input should be 'POST', 'PUT' or 'GET' (did you mean 'POST'?)",
        ),
        ("target:\n  kind: demo\nscan:\n  asi: ASI1\n", "'ASI1' (did you mean 'ASI01'?)"),
        ("target:\n  kind: demo\nscan:\n  output: [json, hmtl]\n", "'hmtl' (did you mean 'html'?)"),
        ("target:\n  kind: demo\nscan:\n  variant: bse64\n", "'bse64' (did you mean 'base64'?)"),
        (
            "target:\n  kind: guard\n  guard: http://127.0.0.1:9\n  behind: opnai\n",
            "not 'opnai' (did you mean 'openai'?)",
        ),
        (
            "target:\n  kind: http\n  endpoint: http://127.0.0.1:9/\n"
            "  model_proxy: {api: openai-chats, listen: '127.0.0.1:9', upstream: 'http://x'}\n",
            "(did you mean 'openai-chat'?)",
        ),
        (
            "target:\n  kind: http\n  endpoint: http://127.0.0.1:9/\n"
            "  tools: [{name: mail, capabilities: [egres]}]\n",
            "(did you mean 'egress'?)",
        ),
    ],
)
def test_every_choice_in_the_file_gets_a_did_you_mean(
    in_tmp: Path, capsys: pytest.CaptureFixture[str], text: str, hint: str
) -> None:
    """A choice anywhere in the file, not only the top ones: the same hint as a key gets."""
    assert _scan(in_tmp, text) == 2
    assert hint in _error(capsys)
