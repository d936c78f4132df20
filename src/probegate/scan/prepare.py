"""Stage 1, prepare: the config in, everything the scan needs out, before any request.

Everything that can make a scan fail for the user's reasons is checked here, before the first
request: the output directory, the store and the recording directory can be written, the
probe selection is not empty, the baseline can be read and compared with this scan, a dollar
budget can be counted, the signing material can sign. A scan that cannot keep its results
spends nothing. This stage and :func:`~probegate.scan.settings.stage_settings` are the only
readers of the config.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from probegate.baseline import check_comparable
from probegate.benchmarks.agentdojo import AgentDojoSource, load_source
from probegate.config import ScanConfig
from probegate.errors import UsageError
from probegate.files import check_writable_dir
from probegate.judge.calibration import require_calibrated
from probegate.judge.llm import (
    ENV_ANTHROPIC_API_KEY,
    ENV_API_KEY,
    ENV_FALLBACK_API_KEY,
    Judge,
    ModelJudge,
    build_judge,
)
from probegate.library.loader import Library, extend_library, load_library
from probegate.library.probe import Probe
from probegate.models.report import ScanReport
from probegate.models.stored import load_report
from probegate.reports import parse_formats
from probegate.reports.signing import SECRET_ENV, sign_report, signing_material
from probegate.scan.settings import StageSettings, stage_settings
from probegate.suppressions import SuppressionEntry, load_suppressions
from probegate.targets.base import AgentConfig, Target, ToolDelivery
from probegate.targets.registry import build_target, spec_of
from probegate.transport.limiter import RequestLimiter
from probegate.transport.pricing import price_table

# Where the judge keeps its verdicts and calibration, under --store (judge/cache.py).
JUDGE_CACHE = "judge-cache"


@dataclass(frozen=True)
class ScanInputs:
    """What the scan works with besides its settings: read, checked and built once."""

    library_version: str
    probes: list[Probe]
    baseline: ScanReport | None
    suppressions: tuple[SuppressionEntry, ...]
    llm_judge: Judge | None
    limiter: RequestLimiter
    # What no file may contain, by placeholder name (scan_secrets).
    secrets: dict[str, str]
    # The HMAC secret and the Ed25519 key (PEM) the report is signed with, if any.
    signing: tuple[bytes | None, bytes | None]
    # Lines for the user once the scan's output is set up (a judge's calibration and its cost).
    notes: tuple[str, ...] = ()
    # ``--suite agentdojo``: the benchmark whose task pairs are the probes, and which opens
    # each attempt's environment (benchmarks/agentdojo/).
    benchmark: AgentDojoSource | None = None


@dataclass(frozen=True)
class Prepared:
    """The prepared scan: its target (open until the scan ends), inputs and stage settings."""

    target: Target
    inputs: ScanInputs
    settings: StageSettings
    # The agent probegate talks to (behind a guard, the guarded agent): a dry run prices it.
    agent: AgentConfig
    dry_run: bool


@contextmanager
def prepare_scan(config: ScanConfig) -> Iterator[Prepared]:
    """Check and build everything the config names; close the target and judge on the way out."""
    formats = parse_formats(config.output)
    if not config.dry_run:
        # Where the results go is checked first: a scan that cannot keep them spends nothing.
        check_writable_dir(config.output_dir, what="output directory (--output-dir)")
        check_writable_dir(config.store, what="scan store (--store)")
        if config.record is not None:
            check_writable_dir(config.record, what="recording directory (--record)")
    settings = stage_settings(config, formats)
    agent = config.target.agent_under_test()
    library, benchmark = _library(config, settings, agent)
    probes = library.select(asi=config.asi, patterns=config.probes)
    if not probes:
        raise UsageError("no probe matches --asi/--probes (see 'probegate probes list')")
    # Only compared with (findings by fingerprint, counts, scores): its transcripts and evidence
    # are never shown.
    baseline = (
        load_report(config.baseline, transcripts=False, evidence=False)
        if config.baseline is not None
        else None
    )
    if baseline is not None:
        check_comparable(
            baseline,
            library_version=library.version,
            mode=config.mode,
            allow_mismatch=config.allow_mismatch,
        )
    suppressions = load_suppressions(
        _relative(config, config.suppressions), explicit=config.suppressions is not None
    )
    limiter = RequestLimiter(
        rps=config.rps,
        max_requests=config.max_requests,
        budget_usd=config.budget_usd,
        deadline=config.deadline,
        max_wait=config.max_wait,
    )
    secrets = {} if config.dry_run else scan_secrets(config)
    llm_judge = _judge(config, limiter, agent, secrets)
    try:
        if config.budget_usd is not None and not config.allow_unpriced:
            _refuse_unpriced(config, llm_judge)
        notes = _calibrated(config, llm_judge)
        signing = (None, None) if config.dry_run else _signing_material(config)
        # A dry run only plans: it must work before the secrets are set up.
        target_config = config.target.without_secrets() if config.dry_run else config.target
        target = build_target(target_config, config.target_settings())
        if benchmark is not None:
            _check_serves_tools(target, config.suite or "")
    except BaseException:
        if llm_judge is not None:
            llm_judge.close()
        raise
    inputs = ScanInputs(
        library.version,
        probes,
        baseline,
        suppressions,
        llm_judge,
        limiter,
        secrets,
        signing,
        notes,
        benchmark,
    )
    try:
        yield Prepared(target, inputs, settings, agent, config.dry_run)
    finally:
        target.close()
        if llm_judge is not None:
            llm_judge.close()


def _judge(
    config: ScanConfig, limiter: RequestLimiter, agent: AgentConfig, secrets: dict[str, str]
) -> Judge | None:
    """The ``--judge`` the config names, if any, spending from the scan's limiter."""
    if not config.judge:
        return None
    return build_judge(
        config.judge,
        timeout=config.timeout,
        limiter=limiter,
        prices=agent.prices,
        pool_size=config.concurrency,
        # Verdicts and calibration are kept in the store (docs/judge.md); a dry run keeps
        # nothing.
        cache_dir=None if config.dry_run else config.store / JUDGE_CACHE,
        # Nothing a file may not hold leaves for the judge either (judge/prompt.py).
        secrets=secrets,
    )


def _calibrated(config: ScanConfig, judge: Judge | None) -> tuple[str, ...]:
    """A judge is used only once it passed its calibration (exit 2 otherwise); a calibration
    run now says what it cost. A dry run calibrates nothing."""
    if not isinstance(judge, ModelJudge) or config.dry_run:
        return ()
    cost = require_calibrated(judge, concurrency=config.concurrency)
    return () if cost is None else (cost.text(judge.spec),)


def _library(
    config: ScanConfig, settings: StageSettings, agent: AgentConfig
) -> tuple[Library, AgentDojoSource | None]:
    """The probes to choose from: the library and ``--probe-dir``, or with ``--suite`` the
    benchmark's task pairs (a scan of it compares only with scans of the same benchmark)."""
    if not config.suite:
        return extend_library(load_library(), settings.repro.probe_dirs), None
    benchmark = load_source(config.suite, model=agent.model)
    return Library(probes=tuple(benchmark.probes), version=benchmark.version), benchmark


# How an agent takes the tools probegate serves: AgentDojo's tools then act on its environment.
_SERVED = (ToolDelivery.AGENT_LOOP, ToolDelivery.MCP, ToolDelivery.CONTEXT)


def _check_serves_tools(target: Target, suite: str) -> None:
    """A benchmark's tools reach only an agent that takes its tools from probegate."""
    delivery = target.traits().tool_delivery
    if delivery not in _SERVED:
        target.close()
        raise UsageError(
            f"--suite {suite}: AgentDojo's tools act on its environment only when probegate "
            f"serves them, and this target's tools are {delivery.value!r}; scan an agent whose "
            "loop probegate runs (kind openai or anthropic), or one that takes its tools from "
            "probegate's MCP server ({{mcp_url}}) or its context (docs/agentdojo.md)"
        )


def _signing_material(config: ScanConfig) -> tuple[bytes | None, bytes | None]:
    """The secret and key the report will be signed with, checked before the scan runs: a key
    that cannot be read must not cost a whole scan and then its report."""
    secret, key_pem = signing_material(
        config.sign, str(config.signing_key) if config.signing_key else None
    )
    if secret is None and key_pem is None:
        return None, None
    sign_report({}, secret=secret, private_key_pem=key_pem)  # a short secret is refused here
    return secret, key_pem


def scan_secrets(config: ScanConfig) -> dict[str, str]:
    """Every secret this scan holds, by placeholder name: what no file it writes may contain.

    The target kind declares its own (``TargetConfig.real_secrets``); the scan adds the signing
    secret and the LLM judge's keys, set or not a judge is used: an agent should never see
    them, but one handed its environment (a system prompt read from /proc) would repeat them.
    """
    out = dict(config.target.real_secrets())
    for name, variable in (
        ("SIGNING_SECRET", SECRET_ENV),
        ("JUDGE_API_KEY", ENV_API_KEY),
        ("OPENAI_API_KEY", ENV_FALLBACK_API_KEY),
        ("ANTHROPIC_API_KEY", ENV_ANTHROPIC_API_KEY),
    ):
        value = os.environ.get(variable)
        if value and value not in out.values():
            out[name] = value
    return out


def _refuse_unpriced(config: ScanConfig, judge: Judge | None) -> None:
    """``--budget-usd`` counts dollars only for priced models: refuse one it cannot count."""
    agent = config.target.agent_under_test()
    unpriced: list[str] = []
    if spec_of(agent).endpoint and price_table(agent.prices, agent.model) is None:
        unpriced.append(f"the target's model {agent.model or '(none)'!r}")
    if isinstance(judge, ModelJudge) and price_table(judge.prices, judge.model) is None:
        unpriced.append(f"the judge's model {judge.model!r}")
    if unpriced:
        raise UsageError(
            f"--budget-usd {config.budget_usd:g} cannot be enforced: no price for "
            f"{' or '.join(unpriced)} in target.prices (docs/targets.md). Add its prices, or "
            "pass --allow-unpriced to scan without a dollar cap for it (--max-requests still "
            "caps the requests)"
        )


def _relative(config: ScanConfig, path: Path | None) -> Path | None:
    """Paths from the config file are relative to it; flag paths are already resolved."""
    if path is None or path.is_absolute():
        return path
    return config.base_dir / path
