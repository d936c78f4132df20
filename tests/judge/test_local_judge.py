"""The offline path is a local model: a judge on a loopback address needs no API key.

A local OpenAI-compatible server (llama.cpp's, Ollama's, vLLM's) is the loopback fake here; a
judge there runs with no key at all, is never handed the provider's fallback key, and is
calibrated like any other judge before a scan uses it (a weak local model is refused).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from probegate.cli import main
from probegate.errors import UsageError
from probegate.judge.llm import (
    ENV_ANTHROPIC_API_KEY,
    ENV_API_KEY,
    ENV_BASE_URL,
    ENV_FALLBACK_API_KEY,
    ModelJudge,
    build_judge,
    on_loopback,
)
from tests.judge.fake_judge import calibrated, fake_judge, verdict

JUDGE_PROBES = ("asi01.summary-slant-defamation.v1", "asi09.soc2-compliance-assurance.v1")


@pytest.fixture
def no_keys(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> pytest.MonkeyPatch:
    for name in (ENV_API_KEY, ENV_FALLBACK_API_KEY, ENV_ANTHROPIC_API_KEY, ENV_BASE_URL):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("NO_COLOR", "1")
    return monkeypatch


@pytest.mark.parametrize(
    ("url", "local"),
    [
        ("http://127.0.0.1:8080/v1", True),
        ("http://127.8.9.10:8000/v1", True),
        ("http://localhost:11434/v1", True),
        ("http://[::1]:8000/v1", True),
        ("http://LOCALHOST:11434/v1", True),
        ("https://api.openai.com/v1", False),
        ("http://10.0.0.5:8080/v1", False),
        ("http://127.0.0.1.nip.io:8080/v1", False),
        ("http://localhost.evil.test/v1", False),
        ("http://0.0.0.0:8080/v1", False),
    ],
)
def test_loopback_is_this_machine_only(url: str, local: bool) -> None:
    assert on_loopback(url) is local


def test_a_judge_on_loopback_runs_without_a_key(no_keys: pytest.MonkeyPatch) -> None:
    with fake_judge(verdict("resisted")) as fake:
        no_keys.setenv(ENV_BASE_URL, fake.base_url)
        judge = build_judge("openai:qwen2.5-7b-instruct", timeout=5)
        assert isinstance(judge, ModelJudge)
        judge.verdict([{"role": "system", "content": "s"}, {"role": "user", "content": "u"}])
    assert "authorization" not in fake.headers[0]


def test_a_local_judge_is_never_handed_the_providers_key(no_keys: pytest.MonkeyPatch) -> None:
    """OPENAI_API_KEY is the provider's: a local server gets only the key set for the judge."""
    no_keys.setenv(ENV_FALLBACK_API_KEY, "sk-provider-key-0123456789")
    with fake_judge(verdict("resisted"), verdict("resisted")) as fake:
        no_keys.setenv(ENV_BASE_URL, fake.base_url.replace("127.0.0.1", "localhost"))
        build_judge("openai:llama3.1", timeout=5).verdict([{"role": "system", "content": "s"}])
        no_keys.setenv(ENV_API_KEY, "local-server-key-42")
        build_judge("openai:llama3.1", timeout=5).verdict([{"role": "system", "content": "s"}])
    assert "authorization" not in fake.headers[0]
    assert fake.headers[1]["authorization"] == "Bearer local-server-key-42"


def test_a_remote_judge_still_needs_a_key(no_keys: pytest.MonkeyPatch) -> None:
    no_keys.setenv(ENV_BASE_URL, "https://judge.example.com/v1")
    with pytest.raises(UsageError, match="loopback"):
        build_judge("openai:m", timeout=5)


def _scan(tmp: Path) -> list[str]:
    args = ["scan", "demo", "--judge", "openai:llama3.1-8b", "--no-sign", "--store"]
    args += [str(tmp / "store"), "--output-dir", str(tmp / "out")]
    return [*args, *(arg for probe in JUDGE_PROBES for arg in ("--probes", probe))]


@pytest.mark.slow
def test_a_scan_with_a_local_judge_and_no_key_is_calibrated_and_runs(
    no_keys: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with fake_judge(calibrated(lambda body: verdict("resisted"))) as fake:
        no_keys.setenv(ENV_BASE_URL, fake.base_url)
        assert main(_scan(tmp_path)) == 0
    report = json.loads((tmp_path / "out" / "scan.json").read_text(encoding="utf-8"))
    assert report["judge"]["spec"] == "openai:llama3.1-8b"
    assert report["judge"]["by_reason"]["rubric"] == report["judge"]["calls"] > 0
    assert all("authorization" not in h for h in fake.headers)
    assert "calibrated on" in capsys.readouterr().err


@pytest.mark.parametrize("answer", ["resisted", "vulnerable"])
def test_a_weak_local_model_is_refused(
    no_keys: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str], answer: str
) -> None:
    """A model that says the same whatever it reads is refused before the scan sends
    anything: exit 2, the cases it got wrong named."""
    with fake_judge(verdict(answer, "I can't")) as fake:
        no_keys.setenv(ENV_BASE_URL, fake.base_url)
        assert main(_scan(tmp_path)) == 2
    err = capsys.readouterr().err
    assert "failed its calibration" in err and "so it is not used" in err
    assert not (tmp_path / "out" / "scan.json").exists()
