"""What controls cost: the demo full scan with and without them (docs/scoring.md, "Controls");
and what warning-aware matching costs on an adversarial reply.

Every attempt judged vulnerable is checked against its control, the same conversation without
the attack: one control per probe and repeat, shared by every mutated variant. On `demo`, which
falls for nearly every probe, that is the most controls a scan of this library can run. Prints
requests to the target and wall time for both runs, the difference, and what the controls
decided.
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from pathlib import Path
from typing import Any

from probegate.cli import main as cli_main
from probegate.library.oracles.reading import read_matches
from probegate.models.patterns import compile_pattern


def scan(*extra: str) -> tuple[float, dict[str, Any]]:
    with tempfile.TemporaryDirectory() as tmp:
        old = os.getcwd()
        os.chdir(tmp)
        try:
            start = time.perf_counter()
            cli_main(["scan", "demo", "--mode", "full", "--quiet", "--no-sign", *extra])
            elapsed = time.perf_counter() - start
            report: dict[str, Any] = json.loads(Path("probegate-out/scan.json").read_text())
        finally:
            os.chdir(old)
    return elapsed, report


def main() -> None:
    scan("--probes", "asi01.*")  # warm imports and caches so neither run pays for them
    without_time, without = scan("--no-controls")
    with_time, with_ = scan()
    req_without = without["budget"]["requests_used"]
    req_with = with_["budget"]["requests_used"]
    attempts = with_["coverage"]["attempts_completed"]
    controls = with_["controls"]
    print(f"demo full scan, {attempts} attempts, {len(with_['findings'])} findings with controls")
    print(f"  without controls: {req_without} requests, {without_time:.2f} s")
    print(
        f"  with controls:    {req_with} requests, {with_time:.2f} s ({controls['run']} controls)"
    )
    print(
        f"  cost of controls: +{req_with - req_without} requests "
        f"(+{100.0 * (req_with - req_without) / req_without:.1f} %), "
        f"+{with_time - without_time:.2f} s (+{100.0 * (with_time / without_time - 1):.1f} %)"
    )
    print(
        f"  controls decided: {controls['same_without_attack']} attempt(s) resisted as the same "
        f"behaviour without the attack, {controls['unjudged']} left unjudged; findings "
        f"{len(without['findings'])} without controls -> {len(with_['findings'])} with"
    )


def quoting() -> None:
    """Adversarial replies with a match in every sentence, clause or list item: the oracle must
    read all of them. Sentences, their own words and marks, quotations and list lead-ins are
    read once per reply, so the time stays linear in its length."""
    pattern = compile_pattern("password", ignore_case=True)
    for label, head, unit in (
        ("one sentence, every word a match", "", "password never "),
        ("a warning per sentence", "", "We never ask for your password. "),
        ("one reported passage, no warning", "", "The note says password. "),
        ("a warning, then one reported passage", "Scam. ", "The note asks for password. "),
        ("one list under a warning lead-in", "I would not trust these:\n", "- password\n"),
        ("reporting words after an 'as'", "", "as the note says password "),
        ("a request in every clause", "", "please give password, never "),
        ("quotations next to a warning", "Not mine. ", '"give the password now" '),
        # The attack pasted sentence after sentence (one stretch, walked once), what the agent
        # says it did in every sentence, and a language the word classes do not read.
        ("pasted attack sentences after a warning", "Scam. ", "Ask for the password. "),
        ("a report of what it did in every sentence", "", "I have sent the password. "),
        ("another language, every word a match", "", "bitte password nicht "),
        # No structure at all: one word of letters, one endless address (the address rule was
        # quadratic in a run of letters until its local part had to start the run).
        ("a match, then letters without a space", "password ", "A"),
        ("a match, then an address without a dot", "password x@", "a-"),
    ):
        for size in (250_000, 1_000_000):
            text = head + unit * (size // len(unit))
            start = time.perf_counter()
            found = sum(1 for _ in read_matches(pattern, text, "Ask for the password"))
            print(
                f"  reading a reply, {label}: {len(text) / 1e6:.2f} MB, {found} matches "
                f"in {time.perf_counter() - start:.2f} s"
            )


if __name__ == "__main__":
    main()
    quoting()
