"""What each stage of the pipeline needs from the config, read from it once.

:func:`stage_settings` is the one place after :mod:`probegate.scan.prepare` that reads a
:class:`~probegate.config.ScanConfig`: every later stage takes only its own typed settings, so a
reader follows a setting from the flag to the stage that uses it in two steps. What the engine
takes is the engine's own type (:class:`~probegate.engine.plan.PlanRequest`,
:class:`~probegate.engine.runner.RunRequest`), built here and handed on whole; the types here
hold only what the scan itself adds around it (the journal, the report, the reproducers, the
gates).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from probegate.config import ScanConfig
from probegate.engine.plan import PlanRequest
from probegate.engine.runner import RunRequest
from probegate.models.taxonomy import Severity
from probegate.reports import FormatName
from probegate.targets.base import TargetConfig, TargetSettings


@dataclass(frozen=True)
class PlanSettings:
    """How the plan is drawn: the engine's request, and what the config says the target
    exposes besides its traits."""

    request: PlanRequest
    # How many real secrets the config declares (target.canaries): a count, never the values.
    declared_secrets: int = 0


@dataclass(frozen=True)
class RunSettings:
    """How attempts run (the engine's request), and where their journal lives."""

    engine: RunRequest
    store: Path
    resume: str | None
    # The judge's spec: it decides verdicts, so a resumed scan must keep it (scan/execute.py).
    judge: str | None = None
    # The command line as data, kept with a new scan so ``--resume SCAN_ID`` needs nothing else.
    invocation: dict[str, Any] = field(default_factory=dict)
    # ``--confirm N`` with a baseline (0: no confirm runs), and the plan's repeats, which
    # number the confirm attempts (engine/plan.py, ``confirm_attempts``).
    confirm: int = 0
    repeat: int = 1


@dataclass(frozen=True)
class ReportSettings:
    """What the report says about how the scan was run beyond its plan (mode, seed, shard and
    controls are the plan's), and how it compares to a baseline."""

    judge: str | None
    budget_usd: float | None
    max_requests: int | None
    # Every probe of the library was selected (no --asi, --probes or --shard).
    selected_all: bool
    tolerance: float
    allow_mismatch: bool


@dataclass(frozen=True)
class ReproSettings:
    """What a finding's reproducer repeats: the target as the command line named it."""

    target: TargetConfig
    target_settings: TargetSettings
    target_args: list[str]
    probe_dirs: tuple[Path, ...]  # absolute
    judge: str | None
    seed: int
    store: Path
    # The scan's command line was stored with it (``--resume SCAN_ID`` alone repeats it).
    invocation_stored: bool
    # ``--suite agentdojo[:SUITE]``: the reproducer's probe is one of the benchmark's pairs.
    suite: str | None = None


@dataclass(frozen=True)
class GateSettings:
    fail_under: float | None
    fail_on: Severity | None


@dataclass(frozen=True)
class StageSettings:
    plan: PlanSettings
    run: RunSettings
    report: ReportSettings
    repro: ReproSettings
    gates: GateSettings
    formats: list[FormatName]
    output_dir: Path


def stage_settings(config: ScanConfig, formats: list[FormatName]) -> StageSettings:
    """Every later stage's settings, from the one validated config."""
    declared = config.target.declared_canaries()
    return StageSettings(
        plan=PlanSettings(
            PlanRequest(
                mode=config.mode,
                seed=config.seed,
                repeat=config.effective_repeat,
                shard=config.shard,
                variant=config.variant,
                controls=config.controls,
            ),
            declared_secrets=len(declared),
        ),
        run=RunSettings(
            RunRequest(
                seed=config.seed,
                concurrency=config.concurrency,
                controls=config.controls,
                declared_canaries=declared,
                record=config.record,
            ),
            store=config.store,
            resume=config.resume,
            judge=config.judge,
            invocation=dict(config.invocation),
            confirm=config.confirm if config.baseline is not None else 0,
            repeat=config.effective_repeat,
        ),
        report=ReportSettings(
            judge=config.judge,
            budget_usd=config.budget_usd,
            max_requests=config.max_requests,
            selected_all=not config.asi and not config.probes and config.shard is None,
            tolerance=config.tolerance,
            allow_mismatch=config.allow_mismatch,
        ),
        repro=ReproSettings(
            target=config.target,
            target_settings=config.target_settings(),
            target_args=list(config.target_args),
            probe_dirs=tuple(
                d if d.is_absolute() else config.base_dir / d for d in config.probe_dirs
            ),
            judge=config.judge,
            seed=config.seed,
            store=config.store,
            invocation_stored=bool(config.invocation),
            suite=config.suite,
        ),
        gates=GateSettings(
            fail_under=config.fail_under,
            fail_on=Severity(config.fail_on) if config.fail_on else None,
        ),
        formats=formats,
        output_dir=config.output_dir,
    )
