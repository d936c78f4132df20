"""Budgets stop cleanly, the rate limit spaces requests, concurrency is bounded."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from probegate.cli import main
from probegate.transport.limiter import BudgetExhausted, RequestLimiter
from tests.servers.configs import known_probes, openai_config, scan_args
from tests.servers.openai_agent import OpenAIAgentServer


def report_of(tmp: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((tmp / "out" / "scan.json").read_text())
    return data


def test_request_budget_soft_stop_finishes_cleanly(tmp_path: Path) -> None:
    code = main(
        [
            "scan",
            "demo",
            "--store",
            str(tmp_path / "store"),
            "--output-dir",
            str(tmp_path / "out"),
            "--no-sign",
            "--quiet",
            "--max-requests",
            "10",
            "--concurrency",
            "4",
        ]
    )
    report = report_of(tmp_path)
    assert report["stopped_reason"] == "budget"
    assert 8 <= report["budget"]["requests_used"] <= 10
    assert not [u for u in report["unjudged"] if u["reason"].startswith("cut short")]
    done = report["completeness"]
    # Turns are attempts, agents are probes: the cap stopped some probes' attempts from starting.
    assert done["turns_used"] == report["coverage"]["attempts_completed"] < done["turns_planned"]
    assert done["agents_cut_short"] > 0
    assert done["agents_completed"] + done["agents_cut_short"] == done["agents_planned"]
    assert not report["authority"]["authoritative"]
    assert code == 0


@pytest.mark.parametrize("cap", [1.0, 3.0])
def test_dollar_budget_from_the_price_table(tmp_path: Path, cap: float) -> None:
    with OpenAIAgentServer() as server:
        prices = {"fake-1": {"input_per_1k": 1.0, "output_per_1k": 1.0}}  # $0.12 per reply
        config = openai_config(tmp_path, server.endpoint, prices=prices)
        main(scan_args(config, tmp_path, "--budget-usd", str(cap), "--concurrency", "2"))
        sent = server.requests
    report = report_of(tmp_path)
    assert report["stopped_reason"] == "budget"
    # The cap is never crossed, although a reply's cost is only known once it arrives.
    assert 0.8 * cap - 0.13 <= report["cost_usd"] <= cap
    assert report["cost_usd"] == pytest.approx(0.12 * sent)
    assert report["budget"]["spent_usd"] == report["cost_usd"]
    assert report["tokens_total"] == 120 * sent
    cut = [u for u in report["unjudged"] if u["reason"].startswith("cut short")]
    if cap >= 3:  # room for the average attempt to be learnt: the soft stop ends it cleanly
        assert not cut


def test_hard_cap_raises() -> None:
    limiter = RequestLimiter(max_requests=2)
    limiter.acquire()
    limiter.acquire()
    with pytest.raises(BudgetExhausted):
        limiter.acquire()


def test_rate_limit_spaces_requests_across_threads() -> None:
    limiter = RequestLimiter(rps=40)
    start = time.monotonic()
    threads = [threading.Thread(target=limiter.acquire) for _ in range(11)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert time.monotonic() - start >= 10 / 40 - 0.01


@pytest.mark.parametrize("concurrency", [1, 4])
def test_concurrency_bounds_requests_in_flight(tmp_path: Path, concurrency: int) -> None:
    with OpenAIAgentServer(latency=0.05) as server:
        config = openai_config(tmp_path, server.endpoint)
        args = ("--concurrency", str(concurrency), "--repeat", "2", *known_probes())
        assert main(scan_args(config, tmp_path, *args)) == 0
    assert server.peak <= concurrency
    assert server.peak == concurrency  # 12 attempts keep every worker busy at least once
