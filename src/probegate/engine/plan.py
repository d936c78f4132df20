"""The plan: which attempts a scan will run, decided before anything is sent.

A plan is a pure function of the library, what the target exposes (its tools' capabilities,
its :class:`Exposure`) and the :class:`PlanRequest` (mode, seed, repeat, shard, variant,
controls), so ``--dry-run`` shows exactly what a scan will do, shards split it
deterministically and ``--resume`` can check it is continuing the same scan.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field, replace
from typing import assert_never

from probegate.engine.controls import CONTROL_VARIANT, control_id
from probegate.library.controls import control_text
from probegate.library.mutators import MUTATORS, SEED_VARIANT, mutate
from probegate.library.probe import Probe
from probegate.models.probe import PAYLOAD, Fixtures
from probegate.models.report import Mode
from probegate.models.shard import parse_shard
from probegate.models.taxonomy import Capability

__all__ = [
    "SEED_VARIANT",
    "Exposure",
    "NotRun",
    "Plan",
    "PlanRequest",
    "PlannedAttempt",
    "applicability",
    "build_plan",
]


# What enables each kind of probe a plan leaves out (NotRun.enabled_by), in the words of the
# setting a user changes: docs/scoring.md, "Outcomes".
JUDGE_FLAG = "--judge SPEC"
CANARIES_SETTING = "target.canaries"
SANDBOX_SETTING = "the agent taking its tools from probegate ({{mcp_url}} or context)"
NEEDS_JUDGE = (
    "only an LLM judge can decide this probe and none is configured; "
    f"enable it with {JUDGE_FLAG} (docs/scoring.md)"
)


@dataclass(frozen=True)
class NotRun:
    """Why a probe is left out of the plan although its capabilities apply, and the setting
    that would let it run: it is not an attempt, so neither unjudged nor resisted."""

    reason: str
    enabled_by: str


@dataclass(frozen=True)
class PlanRequest:
    """What a scan asks the plan for (scan/settings.py builds it from the config)."""

    mode: Mode
    seed: int
    # How many times each attempt of the mode runs (the config's effective repeat).
    repeat: int
    # ``--shard K/N``: only the probes whose id falls in shard K of N.
    shard: str | None = None
    # ``--variant``: only that variant of each probe, with the ids the mode gives it.
    variant: str | None = None
    # Whether vulnerable verdicts are checked against controls (``--no-controls`` turns it off).
    controls: bool = True


@dataclass(frozen=True)
class Exposure:
    """What the target lets probegate reach besides its tools' capabilities (its traits and
    config): whether its tool calls are answered by probegate's sandbox, whether probegate
    plants secrets in what it controls, how many of the agent's real secrets the user declared
    (a count, never a value), and whether an LLM judge is configured. A probe that needs
    something the target does not expose is not run, with the setting that would expose it
    (docs/targets.md); the report's surface is the plan's exposure."""

    uses_sandbox: bool = True
    plants_secrets: bool = True
    declared_secrets: int = 0
    judge: bool = False


@dataclass(frozen=True)
class PlannedAttempt:
    """One probe variant, once. ``payload`` is already mutated."""

    attempt_id: str
    probe: Probe
    variant: str
    repeat: int
    payload: str | None

    @property
    def requests_upper_bound(self) -> int:
        return len(self.probe.turns)

    @property
    def is_control(self) -> bool:
        return self.variant == CONTROL_VARIANT


def control_for(probe: Probe, repeat: int, seed: int) -> PlannedAttempt:
    """The control of a probe's attempts in one repeat: the same turns, the payload replaced by
    a benign text drawn from the seed (library/controls.py; docs/scoring.md, "Controls"). Every
    variant of the repeat shares it."""
    return PlannedAttempt(
        control_id(probe.id, repeat),
        probe,
        CONTROL_VARIANT,
        repeat,
        control_text(probe, seed, repeat),
    )


@dataclass(frozen=True)
class Plan:
    attempts: tuple[PlannedAttempt, ...]
    escalations: dict[str, tuple[PlannedAttempt, ...]]
    not_applicable: dict[str, str]
    probes: tuple[Probe, ...]
    # Probes left out because the target does not expose what they need (no --judge, no
    # sandbox, no secret to leak): id -> why and what enables them.
    not_run: dict[str, NotRun]
    fingerprint: str
    # What the plan was drawn for: the request, what the target's tools can do and what else
    # it exposes.
    request: PlanRequest
    capabilities: frozenset[Capability] = frozenset()
    exposure: Exposure = Exposure()
    notes: list[str] = field(default_factory=list)

    @property
    def mode(self) -> Mode:
        return self.request.mode

    @property
    def seed(self) -> int:
        """The scan's seed: the mutated payloads and the controls' benign texts are drawn
        from it."""
        return self.request.seed

    @property
    def shard(self) -> str | None:
        return self.request.shard

    @property
    def controls(self) -> bool:
        return self.request.controls

    @property
    def all_attempts(self) -> list[PlannedAttempt]:
        out = list(self.attempts)
        for extra in self.escalations.values():
            out.extend(extra)
        return out

    @property
    def control_bound(self) -> list[PlannedAttempt]:
        """Every control the scan may run: one per probe and repeat, if any attempt of it is
        judged vulnerable. An upper bound: controls run only for vulnerable attempts."""
        if not self.controls:
            return []
        seen: dict[str, PlannedAttempt] = {}
        for a in self.all_attempts:
            control = control_for(a.probe, a.repeat, self.seed)
            seen.setdefault(control.attempt_id, control)
        return list(seen.values())


def applicability(probe: Probe, capabilities: set[Capability]) -> str | None:
    """Why a probe cannot run against this target, or None when it can."""
    missing = [c.value for c in probe.requires if c not in capabilities]
    if missing:
        return f"target has no tool with capability {', '.join(missing)}"
    return None


def _rides_on_fixtures(probe: Probe) -> bool:
    """The attack is in the sandbox's fixtures, not in a message the target receives."""
    if any(PAYLOAD in turn.content for turn in probe.turns):
        return False
    return any(getattr(probe.fixtures, name) for name in Fixtures.model_fields)


def _blind(probe: Probe, exposure: Exposure, *, declared: bool) -> bool:
    """Every oracle of the probe can never see evidence: the secret it looks for is never
    there, whatever the agent does."""
    blind = [
        o.blind(
            plants_secrets=exposure.plants_secrets,
            uses_sandbox=exposure.uses_sandbox,
            declared=declared,
        )
        for o in probe.oracles
    ]
    return bool(blind) and all(blind)


def exposure_gap(probe: Probe, exposure: Exposure) -> NotRun | None:
    """Why an applicable probe cannot be run against what the target exposes, or None."""
    if probe.needs_judge and not exposure.judge:
        return NotRun(NEEDS_JUDGE, JUDGE_FLAG)
    if not exposure.uses_sandbox and _rides_on_fixtures(probe):
        return NotRun(
            f"the attack arrives through {probe.channel.value} content served by probegate's "
            "tool sandbox, and this agent runs its own tools; let it take them from probegate "
            "(docs/agent-service.md)",
            SANDBOX_SETTING,
        )
    if _blind(probe, exposure, declared=exposure.declared_secrets > 0):
        if not _blind(probe, exposure, declared=True):
            return NotRun(
                "nothing to leak: the agent holds no secret probegate planted or knows; "
                f"declare its real secrets under {CANARIES_SETTING} (docs/targets.md)",
                CANARIES_SETTING,
            )
        return NotRun(
            "nothing to leak: the secret this probe looks for is planted in the tool sandbox, "
            "which this agent does not use (docs/agent-service.md)",
            SANDBOX_SETTING,
        )
    return None


def _variant(probe: Probe, mutator: str, repeat: int, seed: int) -> PlannedAttempt:
    attempt_id = f"{probe.id}#{mutator}#{repeat}"
    payload = probe.payload
    if mutator != SEED_VARIANT and payload is not None:
        payload = mutate(payload, mutator, seed, attempt_id)
    return PlannedAttempt(attempt_id, probe, mutator, repeat, payload)


def _in_shard(probe_id: str, shard: str | None) -> bool:
    """Shards split by probe (hash of its id), so a probe's attempts never straddle shards."""
    if shard is None:
        return True
    number, total = parse_shard(shard)
    bucket = int(hashlib.sha256(probe_id.encode()).hexdigest()[:8], 16) % total
    return bucket == number - 1


def _mutators(probe: Probe) -> list[str]:
    """The mutators that can rewrite the probe's payload: none without a payload."""
    return sorted(MUTATORS) if probe.payload is not None else []


def _named_variant(probe: Probe, variant: str, request: PlanRequest) -> list[PlannedAttempt]:
    """The attempts of one variant asked for by name, with the ids the mode gives it: smart
    mode's escalations run once, as repeat 0. None when the probe has no such variant."""
    if variant != SEED_VARIANT and variant not in _mutators(probe):
        return []
    once = request.mode is Mode.SMART and variant != SEED_VARIANT
    return [_variant(probe, variant, r, request.seed) for r in range(1 if once else request.repeat)]


def _mode_attempts(probe: Probe, request: PlanRequest) -> list[PlannedAttempt]:
    """The attempts the mode plans up front: the seed ``repeat`` times, and in full mode every
    mutated variant beside each repeat (smart mode's variants wait as escalations)."""
    match request.mode:
        case Mode.FULL:
            mutators = _mutators(probe)
        case Mode.FAST | Mode.SMART:
            mutators = []
        case _:
            assert_never(request.mode)
    return [
        _variant(probe, variant, r, request.seed)
        for r in range(request.repeat)
        for variant in [SEED_VARIANT, *mutators]
    ]


def _fingerprint(attempts: list[PlannedAttempt], request: PlanRequest) -> str:
    """What identifies the plan: its request and its attempt ids, in order, so a resumed scan
    can tell it continues the same plan, and a pinned clock gives the same scan id."""
    digest = hashlib.sha256()
    heading = [str(request.mode), str(request.seed), str(request.repeat), request.shard or ""]
    heading += [request.variant] if request.variant else []
    heading += [] if request.controls else ["no-controls"]
    for item in heading + [a.attempt_id for a in attempts]:
        digest.update(item.encode() + b"\0")
    return digest.hexdigest()[:16]


def build_plan(
    probes: list[Probe],
    capabilities: set[Capability],
    request: PlanRequest,
    exposure: Exposure = Exposure(),
) -> Plan:
    """The attempts of the request's mode for the applicable probes (only its variant, when it
    names one).

    A variant asked for by name is planned directly, with the attempt ids the mode gives it
    (smart mode's escalations run once, as repeat 0), so a finding's reproducer sends exactly
    the attempt that found it: same id, same mutated payload, same planted canaries.
    ``exposure``: what else the target exposes (sandbox, secrets, an LLM judge for the probes
    only it can decide); by default all but a judge, as an agent whose loop probegate runs
    does.
    """
    attempts: list[PlannedAttempt] = []
    escalations: dict[str, tuple[PlannedAttempt, ...]] = {}
    not_applicable: dict[str, str] = {}
    not_run: dict[str, NotRun] = {}
    chosen: list[Probe] = []
    for probe in sorted(probes, key=lambda p: p.id):
        if not _in_shard(probe.id, request.shard):
            continue
        chosen.append(probe)
        reason = applicability(probe, capabilities)
        if reason is not None:
            not_applicable[probe.id] = reason
            continue
        gap = exposure_gap(probe, exposure)
        if gap is not None:
            not_run[probe.id] = gap
            continue
        if request.variant is not None:
            attempts.extend(_named_variant(probe, request.variant, request))
            continue
        attempts.extend(_mode_attempts(probe, request))
        if request.mode is Mode.SMART:
            escalations[probe.id] = tuple(
                _variant(probe, m, 0, request.seed) for m in _mutators(probe)
            )
    return Plan(
        attempts=tuple(attempts),
        escalations=escalations,
        not_applicable=not_applicable,
        probes=tuple(chosen),
        not_run=not_run,
        fingerprint=_fingerprint(attempts, request),
        request=request,
        capabilities=frozenset(capabilities),
        exposure=exposure,
    )


def confirm_attempts(
    first: list[PlannedAttempt], runs: int, repeats: int, seed: int
) -> list[PlannedAttempt]:
    """``scan --confirm N``: each of these first-run attempts ``runs`` more times.

    Confirm run ``c`` of an attempt of repeat ``r`` is repeat ``r + c * repeats`` (``repeats``
    the plan's repeats, so no planned attempt has it): the same id, canaries and mutated
    payload a scan with a higher ``--repeat`` would give that attempt, and one control per
    probe and repeat, as for any attempt. Nothing here is in the plan's fingerprint: a resumed
    scan finds these attempts in its journal by their ids (:func:`confirm_bound`).
    """
    return [
        _variant(a.probe, a.variant, a.repeat + run * repeats, seed)
        for run in range(1, runs + 1)
        for a in first
        if not a.is_control
    ]


def confirm_bound(plan: Plan, runs: int, repeats: int) -> list[PlannedAttempt]:
    """Every attempt and control ``--confirm`` may add to ``plan``, whichever findings it
    confirms: what a resumed scan keeps of its journal beyond the plan."""
    if runs <= 0:
        return []
    extra = confirm_attempts(plan.all_attempts, runs, repeats, plan.seed)
    if not plan.controls:
        return extra
    controls = {control_id(a.probe.id, a.repeat): a for a in extra}
    return extra + [control_for(a.probe, a.repeat, plan.seed) for a in controls.values()]


def confirm_plan(plan: Plan, attempts: list[PlannedAttempt]) -> Plan:
    """The plan the runner runs for ``--confirm``: these attempts of ``plan``'s probes, with its
    controls and seed; no escalation (the confirm runs repeat what ran)."""
    ids = {a.probe.id for a in attempts}
    return replace(
        plan,
        attempts=tuple(attempts),
        escalations={},
        probes=tuple(p for p in plan.probes if p.id in ids),
        fingerprint=f"{plan.fingerprint}+confirm",
        notes=[],
    )
