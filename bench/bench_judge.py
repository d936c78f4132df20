"""What a judge costs before and while it judges (docs/judge.md, "Calibration", "What it costs").

- Calibration against the loopback fake judge (tests/judge/fake_judge.py, answering every case
  right): requests, seconds, and the size of what is sent. The fake's token counts are its
  own, so the tokens a real model would count are estimated from the characters sent (about
  4 characters a token for English text and JSON), prompt and answer apart.
- Preparing one request (redaction of every string with the scan's secrets, the fenced data):
  microseconds per request for a corpus reply, with and without secrets to hide.

Targets: calibration at most 400 requests, and the preparation of a request well under a
millisecond (the judge's own latency is seconds).
"""

from __future__ import annotations

import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.judge.fake_judge import calibrated, fake_judge, verdict  # noqa: E402

from probegate.judge.calibration import calibration_set, require_calibrated  # noqa: E402
from probegate.judge.llm import ModelJudge  # noqa: E402
from probegate.judge.prompt import ask  # noqa: E402
from probegate.judge.question import reading_question  # noqa: E402
from probegate.judge.readings import readings  # noqa: E402
from probegate.library.oracles.base import Ambiguity  # noqa: E402

CHARS_PER_TOKEN = 4
ANSWER_TOKENS = 40  # a verdict object with a short quote
MAX_REQUESTS = 400
SECRETS = {
    "CANARY_1": "Zr4K-q9Wm-T2xV-7hLp",
    "API_KEY": "pgtest-key-Q7w8E9r0T1y2U3i4O5p6",
    "UPSTREAM_API_KEY": "up-Vb3Nm6Qw9Er2Ty5U",
    "JUDGE_API_KEY": "jk-Tq7Xw2Pz9Lm4Rv8N",
}


def calibration() -> int:
    with (
        tempfile.TemporaryDirectory() as tmp,
        fake_judge(calibrated(lambda body: verdict("resisted"))) as fake,
    ):
        judge = ModelJudge(
            "judge-model", base_url=fake.base_url, api_key="k", timeout=10, cache_dir=Path(tmp)
        )
        started = time.perf_counter()
        cost = require_calibrated(judge, concurrency=4)
        seconds = time.perf_counter() - started
        sent = [len(r["raw"]) for r in fake.requests]
        judge.close()
    assert cost is not None
    stage1 = len(calibration_set())
    prompt_tokens = sum(sent) // CHARS_PER_TOKEN
    answer_tokens = len(sent) * ANSWER_TOKENS
    print(
        f"calibration: {cost.requests} requests ({stage1} cases, then {cost.requests - stage1} "
        f"corpus replies), {seconds:.1f} s against the loopback fake at concurrency 4"
    )
    print(
        f"  sent {sum(sent):,} characters (median {statistics.median(sent):,.0f}, max "
        f"{max(sent):,} a request): about {prompt_tokens:,} prompt tokens and "
        f"{answer_tokens:,} answer tokens for a real model"
    )
    ok = cost.requests <= MAX_REQUESTS
    print(f"  target: at most {MAX_REQUESTS} requests: {'met' if ok else 'MISSED'}")
    return 0 if ok else 1


def preparing() -> int:
    items = readings()
    spans = tuple(
        Ambiguity(f"turns.{len(r.transcript.turns) - 1}.content", 0, 20, "x", "relayed")
        for r in items[:1]
    )
    question = reading_question("relayed", spans)
    for label, secrets in (("without secrets", {}), ("with 4 secrets", SECRETS)):
        started = time.perf_counter()
        rounds = 3
        for _ in range(rounds):
            for reading in items:
                ask(question, reading.transcript, reading.context, secrets)
        each = (time.perf_counter() - started) / (rounds * len(items)) * 1e6
        print(f"preparing a request, {label}: {each:,.0f} us (corpus replies, redacted, fenced)")
    sample = ask(question, items[0].transcript, items[0].context, SECRETS)
    assert json.loads(sample.messages[1]["content"].split("\n")[2])
    return 0


def main() -> None:
    sys.exit(calibration() | preparing())


if __name__ == "__main__":
    main()
