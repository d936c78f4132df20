"""Progress while a scan runs (docs/targets.md, "Progress"): elapsed time, rate, ETA, requests
and spend; a live line on a terminal, a plain line at a fixed interval in a CI log. Driven by a
fake clock and a fake wait: nothing here sleeps."""

from __future__ import annotations

import io
from dataclasses import dataclass

import pytest

from probegate.engine.run_state import Progress
from probegate.scan.progress import LOG_INTERVAL_SECONDS, ProgressPrinter, clock_text


@dataclass
class FakeClock:
    now: float = 1000.0

    def __call__(self) -> float:
        return self.now


def _progress(done: int, total: int = 100, **extra: object) -> Progress:
    return Progress(done=done, total=total, vulnerable=1, unjudged=0, **extra)  # type: ignore[arg-type]


def test_clock_text() -> None:
    assert [clock_text(s) for s in (0, 9.6, 75, 3725)] == ["0:00", "0:10", "1:15", "1:02:05"]


def test_a_log_gets_a_plain_line_at_a_fixed_interval_whatever_completes() -> None:
    clock, err = FakeClock(), io.StringIO()
    printer = ProgressPrinter(err, quiet=False, clock=clock, tty=False)
    for done in range(1, 21):  # 20 attempts in the first 10 s: no line of their own
        clock.now += 0.5
        printer(_progress(done, requests=2 * done, cost_usd=0.001 * done))
    assert err.getvalue() == ""
    ticks = iter([False, False, True])  # the ticker's wait: two intervals pass, then stop

    def wait(seconds: float) -> bool:
        assert seconds == LOG_INTERVAL_SECONDS
        stop = next(ticks)
        if not stop:
            clock.now += seconds
        return stop

    clock.now = 1000.0
    printer.run_ticks(wait)
    first, second = err.getvalue().splitlines()
    # 20 attempts in 10 s: 2.0/s, 80 left: 40 s; 40 requests, $0.02 spent.
    assert first == (
        "[20/100] · 0:10 elapsed · 2.0 attempts/s · ETA 0:40 · 40 requests · $0.0200 spent · "
        "vulnerable 1 unjudged 0"
    )
    # Nothing completed in the next 10 s: the line says so by its slower rate and later ETA.
    assert second.startswith("[20/100] · 0:20 elapsed · 1.0 attempts/s · ETA 1:20 · ")
    printer.finish()  # the final count, once: it differs from nothing printed since
    assert err.getvalue().splitlines()[-1].startswith("[20/100] · 0:20 elapsed")
    assert "\r" not in err.getvalue() and "\x1b" not in err.getvalue()


def test_a_terminal_gets_one_live_line_redrawn_at_most_ten_times_a_second() -> None:
    clock, err = FakeClock(), io.StringIO()
    printer = ProgressPrinter(err, quiet=False, clock=clock, tty=True)
    assert printer.interval == 1.0
    for done in range(1, 11):  # one attempt every 0.03 s
        clock.now += 0.03
        printer(_progress(done, requests=done))
    draws = err.getvalue().split("\r\x1b[2K")[1:]
    assert [d.split("]")[0] for d in draws] == ["[1/100", "[5/100", "[9/100"]
    assert draws[1].startswith("[5/100] · 0:00 elapsed · 33.3 attempts/s · ETA 0:03 · 5 requests")
    clock.now += 5.0
    printer.tick()  # the ticker keeps the elapsed time current while nothing completes
    assert err.getvalue().split("\r\x1b[2K")[-1].startswith("[10/100] · 0:05 elapsed")
    printer.finish()
    assert err.getvalue().endswith("\n")


def test_spend_shows_once_a_reply_is_priced_and_controls_are_counted_apart() -> None:
    clock, err = FakeClock(), io.StringIO()
    printer = ProgressPrinter(err, quiet=False, clock=clock, tty=False)
    printer(_progress(3, requests=9))
    clock.now += 1
    printer.tick()
    assert "$" not in err.getvalue() and "9 requests" in err.getvalue()
    printer(_progress(4, requests=12, cost_usd=0.25, controls=2))
    printer.tick()
    assert (
        err.getvalue()
        .splitlines()[-1]
        .endswith("12 requests · $0.2500 spent · vulnerable 1 unjudged 0 controls 2")
    )


def test_a_resumed_scan_counts_its_rate_from_what_this_run_did() -> None:
    clock, err = FakeClock(), io.StringIO()
    printer = ProgressPrinter(err, quiet=False, clock=clock, tty=False)
    clock.now += 4.0
    printer(_progress(901, total=1000))  # 900 done before the resume
    clock.now += 1.0
    printer(_progress(905, total=1000))
    printer.tick()
    assert "1.0 attempts/s · ETA 1:35" in err.getvalue()  # 5 in 5 s, 95 left


def test_smart_modes_escalation_is_counted_on_its_own() -> None:
    clock, err = FakeClock(), io.StringIO()
    printer = ProgressPrinter(err, quiet=False, clock=clock, tty=False)
    clock.now += 10
    printer(_progress(50, total=50, phase="escalating", phase_done=5, phase_total=20))
    printer.tick()
    assert err.getvalue().startswith("[escalating 5/20] · 0:10 elapsed")
    assert "ETA" in err.getvalue()


@pytest.mark.parametrize("tty", [True, False])
def test_quiet_prints_nothing(tty: bool) -> None:
    err = io.StringIO()
    printer = ProgressPrinter(err, quiet=True, clock=FakeClock(), tty=tty)
    printer.start()
    printer(_progress(1))
    printer.tick()
    printer.finish()
    assert err.getvalue() == ""
