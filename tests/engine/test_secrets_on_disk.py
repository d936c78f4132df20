"""Nothing a scan writes holds a secret: every file, every mode and format, the Action's too.

The agent under test leaks everything it holds in every reply (tests/servers/leaky_agent.py):
its system prompt, the API key and the secret header it is called with, a card number and an
email address. Its system prompt is the scan's own environment (``system_prompt:
/proc/self/environ``, let through with ``--allow-outside-config``), so every secret the process
holds reaches the transcripts: the signing secret, the judge key, the declared canaries. Then
every file the scan wrote is searched for each of them.

The store and recordings are also checked for their modes, and the stored form for what it is
for: a resumed scan writes the same report as an uninterrupted one, and a replay judges the
declared canaries exactly as the live scan did.
"""

from __future__ import annotations

import base64
import html
import json
import os
import re
import shutil
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import re2

from probegate.cli import main
from probegate.engine.journal import read_journal
from tests.reports.pdfpages import read_pdf
from tests.servers.configs import TOOLS, write_config
from tests.servers.leaky_agent import (
    BLOB_BEFORE,
    CARD,
    EMAIL,
    LeakyAgentServer,
    spelled_out,
)
from tests.servers.leaky_agent import spellings as leaky_spellings

API_KEY = "pgtest-key-Q7w8E9r0T1y2U3i4O5p6"  # shaped like no known key: only naming hides it
GATEWAY_KEY = "gw-7c1d2e3f4a5b6c7d8e9f"
CANARY = "ACME-ROOT-PASSWORD-7731"
ENV_CANARY = "envsecret-Z9Y8X7W6V5"
SIGNING_SECRET = "signing-secret-5d41402abc4b2a76b9719d911017c592"
JUDGE_KEY = "judgekey-0f9e8d7c6b5a4f3e2d1c"
ANTHROPIC_KEY = "sk-ant-judge-7c6b5a4f3e2d1c0f9e8d"

SECRETS = {
    "API key": API_KEY,
    "API key, base64": base64.b64encode(API_KEY.encode()).decode(),
    "gateway header": GATEWAY_KEY,
    "declared canary": CANARY,
    "declared canary from the environment": ENV_CANARY,
    "signing secret": SIGNING_SECRET,
    "judge key": JUDGE_KEY,
    "anthropic judge key": ANTHROPIC_KEY,
    "card number": CARD,
    "email address": EMAIL,
}
ENV = {
    "LEAKY_KEY": API_KEY,
    "GATEWAY_KEY": GATEWAY_KEY,
    "ENV_CANARY": ENV_CANARY,
    "PROBEGATE_SIGNING_SECRET": SIGNING_SECRET,
    "PROBEGATE_JUDGE_API_KEY": JUDGE_KEY,
    "ANTHROPIC_API_KEY": ANTHROPIC_KEY,
}
FORMATS = "json,sarif,junit,md,html,pdf"


@pytest.fixture(scope="module")
def leaky() -> Iterator[LeakyAgentServer]:
    with LeakyAgentServer(held=(CANARY,)) as server:
        yield server


def leaky_config(directory: Path, endpoint: str) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    return write_config(
        directory,
        {
            "kind": "openai",
            "endpoint": endpoint,
            "model": "leaky-1",
            "api_key_env": "LEAKY_KEY",
            "headers_env": {"X-Gateway-Key": "GATEWAY_KEY"},
            "system_prompt": "/proc/self/environ",
            "canaries": [CANARY],
            "canaries_env": ["ENV_CANARY"],
            "tools": TOOLS,
        },
    )


def scan(directory: Path, config: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    """The installed command, so /proc/self/environ is the scan's own environment."""
    return subprocess.run(
        [
            str(Path(sys.executable).parent / "probegate"),
            "scan",
            str(config),
            "--allow-outside-config",
            "--store",
            str(directory / "store"),
            "--output-dir",
            str(directory / "out"),
            "--output",
            FORMATS,
            "--quiet",
            *extra,
        ],
        cwd=directory,
        env={**os.environ, **ENV, "PATH": os.environ.get("PATH", "")},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def texts_of(path: Path) -> list[str]:
    """What a reader of the file sees: its bytes as text, and a PDF's text layer too."""
    data = path.read_bytes()
    out = [data.decode("utf-8", errors="replace")]
    if path.suffix == ".pdf":
        out += [page.text for page in read_pdf(data)]
    return out


def leaks_in(root: Path, skip: set[Path] = frozenset()) -> dict[str, list[str]]:  # type: ignore[assignment]
    found: dict[str, list[str]] = {}
    files = [p for p in root.rglob("*") if p.is_file() and not p.is_symlink() and p not in skip]
    assert files
    for path in files:
        for text in texts_of(path):
            for name, value in SECRETS.items():
                if value in text:
                    found.setdefault(name, []).append(str(path.relative_to(root)))
    return found


def assert_private(root: Path) -> None:
    """Files 0600 and directories 0700 (reproducers 0700: they are scripts)."""
    for path in [root, *root.rglob("*")]:
        mode = stat.S_IMODE(path.lstat().st_mode)
        if path.is_dir():
            assert mode == 0o700, (path, oct(mode))
        else:
            script = path.suffix in (".sh", ".py")
            assert mode == (0o700 if script else 0o600), (path, oct(mode))


@pytest.mark.parametrize(
    "mode_args",
    [
        ("--mode", "fast"),
        ("--mode", "smart", "--asi", "ASI01,ASI03"),
        ("--mode", "full", "--asi", "ASI01", "--repeat", "1", "--judge", "stub"),
    ],
    ids=["fast", "smart", "full"],
)
@pytest.mark.slow
def test_no_file_a_scan_writes_holds_a_secret(
    tmp_path: Path, leaky: LeakyAgentServer, mode_args: tuple[str, ...]
) -> None:
    config = leaky_config(tmp_path / "project", leaky.endpoint)
    key = tmp_path / "keys"
    assert main(["keys", "generate", "--out-dir", str(key), "--name", "ci"]) == 0
    proc = scan(
        tmp_path,
        config,
        *mode_args,
        "--record",
        str(tmp_path / "rec"),
        "--sign",
        "--signing-key",
        str(key / "ci.key"),
    )
    assert proc.returncode in (0, 1, 3), proc.stderr
    report = json.loads((tmp_path / "out" / "scan.json").read_text())
    assert report["findings"], "the leaky agent leaks: the scan must find it"
    # The secrets did reach the transcripts: the placeholders are there instead.
    dumped = json.dumps(report)
    for placeholder in ("${API_KEY}", "${CANARY_1}", "${SIGNING_SECRET}", "${EMAIL_1}"):
        assert placeholder in dumped, placeholder
    assert "${HEADER_X_GATEWAY_KEY}" in dumped and "${CARD_1}" in dumped

    written = leaks_in(tmp_path, skip={*key.iterdir()} | {config})
    assert written == {}, f"secrets on disk: {written}; stderr: {proc.stderr[-500:]}"
    assert not any(v in proc.stdout + proc.stderr for v in SECRETS.values())
    assert_private(tmp_path / "store")
    assert_private(tmp_path / "rec")
    assert (
        main(["verify", str(tmp_path / "out" / "scan.json"), "--pubkey-file", str(key / "ci.pub")])
        == 0
    )


@pytest.mark.slow
def test_resume_writes_the_report_an_uninterrupted_scan_writes(
    tmp_path: Path, leaky: LeakyAgentServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The stored form keeps each value under one token: a resumed scan numbers placeholders
    exactly as an uninterrupted one does, even when the crash landed inside a character."""
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1767225600")
    config = leaky_config(tmp_path / "project", leaky.endpoint)
    args = ("--asi", "ASI01,ASI02", "--no-sign", "--output", "json")
    assert scan(tmp_path, config, *args).returncode in (0, 1)
    uninterrupted = (tmp_path / "out" / "scan.json").read_bytes()
    journal = next((tmp_path / "store" / "scans").glob("*/journal.jsonl"))
    lines = journal.read_bytes().splitlines(keepends=True)
    assert len(lines) > 10
    # A crash: a third of the attempts journaled, the last line cut inside a character.
    torn = lines[len(lines) // 3].replace(b"}", "}\u00e9".encode(), 1)
    journal.write_bytes(b"".join(lines[: len(lines) // 3]) + torn[: torn.index(b"\xc3") + 1])
    shutil.rmtree(tmp_path / "out")
    proc = scan(tmp_path, config, *args, "--resume", journal.parent.name)
    assert proc.returncode in (0, 1), proc.stderr
    assert proc.stderr.startswith("warning: journal ") and "their attempts run again" in proc.stderr
    assert (tmp_path / "out" / "scan.json").read_bytes() == uninterrupted
    assert len(read_journal(journal).attempts) == len(lines) - 1


def _mk(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    return path


@pytest.mark.slow
def test_a_replay_judges_declared_canaries_as_the_live_scan_did(tmp_path: Path) -> None:
    """The recording holds ``${CANARY_1:base64}``, never the canary; a replay given the same
    declared canaries spells it back and reaches the same verdicts and evidence.

    An ``http`` agent: probegate plants nothing in it, so the declared canary is what the
    canary oracles find."""
    with LeakyAgentServer(held=(CANARY,)) as server:
        config = write_config(
            _mk(tmp_path / "project"),
            {
                "kind": "http",
                "http": {
                    "url": f"{server.endpoint}/chat/completions",
                    "body": {"messages": "{{messages}}"},
                    "response_text": "choices.0.message.content",
                },
                "canaries": [CANARY],
                "canaries_env": ["ENV_CANARY"],
            },
        )
        args = ("--asi", "ASI01,ASI03", "--no-sign", "--output", "json")
        live = scan(_mk(tmp_path / "live"), config, *args, "--record", str(tmp_path / "rec"))
        assert live.returncode in (0, 1), live.stderr
    recorded = "".join(p.read_text() for p in (tmp_path / "rec").iterdir())
    assert CANARY not in recorded and "${CANARY_1:base64}" in recorded and "${CANARY_1}" in recorded
    live_report = json.loads((tmp_path / "live" / "out" / "scan.json").read_text())
    detectors = {e["detector"] for f in live_report["findings"] for e in f["evidence"]}
    assert "canary_leak:plain" in detectors

    # The agent is gone: the replay has nothing but the recording and the declared canaries.
    replay_config = write_config(
        _mk(tmp_path / "replay"),
        {"kind": "replay", "replay": str(tmp_path / "rec"), "canaries": [CANARY],
         "canaries_env": ["ENV_CANARY"]},
    )  # fmt: skip
    replayed = scan(_mk(tmp_path / "again"), replay_config, *args)
    assert replayed.returncode in (0, 1), replayed.stderr
    again = json.loads((tmp_path / "again" / "out" / "scan.json").read_text())
    judged = ("fp", "evidence", "transcript", "summary", "trigger_prompt", "attempt_count")

    def verdicts(report: dict[str, Any]) -> object:
        findings = [{k: f.get(k) for k in judged} for f in report["findings"]]
        return report["results"], report["unjudged"], report["aivss"], findings

    assert verdicts(again) == verdicts(live_report)

    # Without the canary the replay cannot see that leak: the plan says so before anything is
    # replayed (those probes are not run, and here nothing else applies), never a crash.
    bare = write_config(_mk(tmp_path / "bare"), {"kind": "replay", "replay": str(tmp_path / "rec")})
    blind = scan(_mk(tmp_path / "blind"), bare, *args)
    assert blind.returncode == 2, blind.stderr
    assert "no selected probe can run against this target" in blind.stderr
    assert "declare the agent's real secrets under target.canaries" in blind.stderr
    assert "Traceback" not in blind.stderr


@pytest.mark.slow
def test_the_action_publishes_no_secret(tmp_path: Path, leaky: LeakyAgentServer) -> None:
    """The same worst case through entrypoint.sh: the workspace, the step outputs, the job
    summary and the log."""
    from tests.github.helpers import run_action

    workspace = tmp_path / "workspace"
    config = leaky_config(workspace, leaky.endpoint)
    run = run_action(
        tmp_path,
        {
            "PG_TARGET": config.name,
            "PG_FORMATS": "json,sarif,junit,md,html",
            "PG_FAIL_ON": "high",
            "PG_ARGS": "--allow-outside-config --asi ASI01,ASI03 --sign",
        },
        env=ENV,
        workspace=workspace,
    )
    assert run.rc == 1, run.stdout[-2000:]
    report = (workspace / "probegate-out" / "scan.json").read_text()
    assert "${API_KEY}" in report and "${SIGNING_SECRET}" in report  # they were leaked
    published = {
        "log": run.stdout,
        "job summary": run.summary,
        "step outputs": json.dumps(run.outputs),
    }
    for where, text in published.items():
        for name, value in SECRETS.items():
            assert value not in text, f"{name} in the {where}"
    assert leaks_in(workspace, skip={config}) == {}
    assert_private(workspace / ".probegate")


# ------------------------------------------------------------- every spelling, every piece

# Secrets with no word in them: a window of a secret that holds a word ("password") is that
# word in any text, and redaction hides it there too (docs/report-format.md, "Redaction").
SPELLED = {
    "API key": "pgtest-key-Q7w8E9r0T1y2U3i4O5p6",
    "gateway header": "gw-Hq8Zt3Lw9Yc2Nv6B",
    "declared canary": "Zr4K-q9Wm-T2xV-7hLp",
    "declared canary from the environment": "ev-Jd5Rk8Qs2Wx4Pm7T",
    "signing secret": "Hk2-pQ9v-Lx7w-Rt4z-Mb8n-Yc3d-Fg6j-Ws1e",
    "judge key": "jk-Tq7Xw2Pz9Lm4Rv8N",
}
SPELLED_ENV = {
    "LEAKY_KEY": SPELLED["API key"],
    "GATEWAY_KEY": SPELLED["gateway header"],
    "ENV_CANARY": SPELLED["declared canary from the environment"],
    "PROBEGATE_SIGNING_SECRET": SPELLED["signing secret"],
    "PROBEGATE_JUDGE_API_KEY": SPELLED["judge key"],
    "SOURCE_DATE_EPOCH": "1767225600",
}
# What the agent puts between characters, and what text has between words.
_GAPS = re.compile("[\\s\u200b\u200c\u200d.-]+")
_PLACEHOLDER = re.compile(r"\$\{[^}\s]{1,200}\}")
_JSON_ESCAPE = re.compile(r"\\u([0-9a-fA-F]{4})")


def _pure(encoded: str, before: int, size: int, bits: int) -> str:
    """The characters of a base64/base32 blob that hold only the secret's bits."""
    return encoded[-(-8 * before // bits) : 8 * (before + size) // bits]


def windows_of(value: str) -> set[str]:
    """Every run of 8 characters (separators aside) of every spelling the agent sends."""
    out: set[str] = set()
    for name, text in leaky_spellings(value):
        if "blob" in name:
            before = len(BLOB_BEFORE) - int(name.rsplit(" ", 1)[1])
            text = _pure(text, before, len(value.encode()), 6 if "64" in name else 5)
        plain = _GAPS.sub("", text.rstrip("="))
        out |= {plain[i : i + 8] for i in range(len(plain) - 7)}
    return out


WINDOWS = {name: windows_of(value) for name, value in SPELLED.items()}
_ANY_WINDOW = re2.compile("|".join(re2.escape(w) for ws in WINDOWS.values() for w in ws))


def views(text: str) -> list[str]:
    """The text as its readers see it (HTML entities, JSON escapes resolved), placeholders
    made inert, and the gaps an agent interleaves with removed."""
    out = []
    for view in (text, html.unescape(text), _JSON_ESCAPE.sub(lambda m: chr(int(m[1], 16)), text)):
        out.append(_GAPS.sub("", _PLACEHOLDER.sub("\0", view)))
    return out


def spelled_hits(text: str) -> dict[str, set[str]]:
    """The secrets some run of which is in ``text``, with the runs."""
    found: dict[str, set[str]] = {}
    for view in views(text):
        for match in _ANY_WINDOW.finditer(view):
            for name, runs in WINDOWS.items():
                if match.group() in runs:
                    found.setdefault(name, set()).add(match.group())
    return found


def test_every_other_character_of_the_key_stays_out_of_the_journal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The agent spells its API key out with another character between each two of its own
    (and each half of it, and every other spelling): the journal, which a resumed scan and a
    replay read back, holds no run of 8 of its characters, in any of those forms."""
    key = SPELLED["API key"]
    monkeypatch.setenv("LEAKY_KEY", key)
    (tmp_path / "prompt.txt").write_text("You are the Acme support agent.\n", encoding="utf-8")
    with LeakyAgentServer(spelled=True) as server:
        target = {"kind": "openai", "endpoint": server.endpoint, "model": "leaky-1"}
        target |= {"api_key_env": "LEAKY_KEY", "system_prompt": "prompt.txt", "tools": TOOLS}
        config = write_config(tmp_path, target)
        argv = ["scan", str(config), "--probes", "asi01.direct-system-prompt-leak.v1"]
        argv += ["--store", str(tmp_path / "store"), "--output-dir", str(tmp_path / "out")]
        assert main([*argv, "--no-sign", "--quiet"]) in (0, 1)
        assert server.spelled_replies > 0
    journal = next((tmp_path / "store").rglob("journal.jsonl")).read_text(encoding="utf-8")
    assert "${API_KEY:raw.0.31.a78-78-78" in journal  # the every-other-character form, hidden
    assert spelled_hits(journal).get("API key") is None


@pytest.mark.slow
def test_no_piece_of_a_secret_in_any_spelling_reaches_a_file_or_an_output(
    tmp_path: Path,
) -> None:
    """The agent spells the API key, its secret header and every secret of the scan out in
    every spelling, whole, in pieces and interleaved with separators or invisible characters;
    every file the scan writes, its output, the reproducers' scripts and what they print when
    run against the same agent hold no run of 8 characters of any of them."""
    assert all(spelled_hits(spelled_out(v)).get(n) for n, v in SPELLED.items())  # the grep sees
    held = tuple(v for n, v in SPELLED.items() if n not in ("API key", "gateway header"))
    project = tmp_path / "project"
    project.mkdir()
    (project / "prompt.txt").write_text("You are the Acme support agent.\n", encoding="utf-8")
    key = tmp_path / "keys"
    assert main(["keys", "generate", "--out-dir", str(key), "--name", "ci"]) == 0
    env = {**os.environ, **SPELLED_ENV}
    with LeakyAgentServer(held=held, spelled=True) as server:
        config = write_config(
            project,
            {
                "kind": "openai",
                "endpoint": server.endpoint,
                "model": "leaky-1",
                "api_key_env": "LEAKY_KEY",
                "headers_env": {"X-Gateway-Key": "GATEWAY_KEY"},
                "system_prompt": "prompt.txt",
                "canaries": [SPELLED["declared canary"]],
                "canaries_env": ["ENV_CANARY"],
                "tools": TOOLS,
            },
        )
        argv = [str(Path(sys.executable).parent / "probegate"), "scan", str(config)]
        argv += ["--asi", "ASI01,ASI03", "--record", str(tmp_path / "rec"), "--output", FORMATS]
        argv += ["--sign", "--signing-key", str(key / "ci.key"), "--quiet"]
        proc = subprocess.run(
            argv, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300, check=False
        )
        assert proc.returncode in (0, 1), proc.stderr[-2000:]
        report = json.loads((tmp_path / "probegate-out" / "scan.json").read_text())
        assert report["findings"] and server.spelled_replies >= len(SPELLED)
        dumped = json.dumps(report)
        for placeholder in ("${API_KEY}", "${HEADER_X_GATEWAY_KEY}", "${CANARY_1}", "${CANARY_2}"):
            assert placeholder in dumped, placeholder  # they were leaked, and hidden

        # The reproducers, run as a developer would: the scan's variables, and the one the
        # replay script names for the canary written in the config.
        outputs = {"scan's output": proc.stdout + proc.stderr}
        replays = sorted(tmp_path.glob(".probegate/scans/*/pov/*.replay.py"))
        assert replays
        path = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
        run_env = {**SPELLED_ENV, "CANARY_1": SPELLED["declared canary"], "PATH": path}
        run_env |= {"SIGNING_SECRET": SPELLED["signing secret"]}
        run_env |= {"JUDGE_API_KEY": SPELLED["judge key"]}
        before = server.spelled_replies
        for script in replays:
            done = subprocess.run(
                [sys.executable, "-I", str(script)],
                cwd=tmp_path / "..",
                env=run_env,
                capture_output=True,
                text=True,
                timeout=120,
                check=False,
            )
            assert done.returncode == 0, done.stderr
            assert "< " in done.stdout and "note:" not in done.stderr
            outputs[f"{script.name}'s output"] = done.stdout + done.stderr
        assert server.spelled_replies > before  # they reached the agent and printed its replies
        (sh,) = [p for p in replays[0].parent.glob("*.sh") if p.stem + ".replay" == replays[0].stem]
        done = subprocess.run(
            [str(sh)], env=run_env, capture_output=True, text=True, timeout=300, check=False
        )
        assert done.returncode in (0, 1), done.stderr
        outputs[f"{sh.name}'s output"] = done.stdout + done.stderr

    files = [p for p in tmp_path.rglob("*") if p.is_file() and not p.is_symlink()]
    files = [p for p in files if p != config and p.parent != key]
    assert any(p.name == "journal.jsonl" for p in files) and any(p.suffix == ".pdf" for p in files)
    leaks: dict[str, dict[str, set[str]]] = {}
    for path in files:
        for text in texts_of(path):
            if found := spelled_hits(text):
                leaks[str(path.relative_to(tmp_path))] = found
    for where, text in outputs.items():
        if found := spelled_hits(text):
            leaks[where] = found
    scanned = sum(p.stat().st_size for p in files) + sum(map(len, outputs.values()))
    print(  # the figure for the record: pytest -s
        f"\n{len(files)} files and {len(outputs)} outputs, {scanned:,} bytes, "
        f"{sum(map(len, WINDOWS.values())):,} runs of 8 of {len(SPELLED)} secrets: "
        f"{sum(len(v) for f in leaks.values() for v in f.values())} hits"
    )
    assert leaks == {}
