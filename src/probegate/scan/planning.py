"""Stage 2, plan: which attempts run, and what the user is told before the first request.

The plan itself is the engine's (engine/plan.py); this stage draws it for the engine's
:class:`~probegate.engine.plan.PlanRequest` against what the target exposes, and says, before
any request, what the plan cannot cover: probes left for a judge, probes that cannot apply to
the target's tools, probes the target cannot be given or judged on. A dry run ends here, with
the plan and an estimate of its cost.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, TextIO

from probegate.engine.plan import (
    CANARIES_SETTING,
    JUDGE_FLAG,
    SANDBOX_SETTING,
    Exposure,
    NotRun,
    Plan,
    build_plan,
)
from probegate.library.probe import Probe
from probegate.models.report import TargetInfo
from probegate.models.taxonomy import ASI_IDS
from probegate.models.tools import ToolSpec
from probegate.reports.headline import surface_text
from probegate.scan.settings import PlanSettings
from probegate.scan.view import View
from probegate.scoring import enablers
from probegate.targets.base import AgentConfig, Target, capabilities_of
from probegate.targets.registry import spec_of
from probegate.terminal import clean, json_text
from probegate.transport.pricing import cost_usd, price_table

ESTIMATE_PROMPT_TOKENS = 1000
ESTIMATE_COMPLETION_TOKENS = 300
# A scan that can apply fewer than this share of its selected probes says why before it starts.
FEW_PROBES_FRACTION = 0.5


# What each kind of probe left out of the plan needs, and where to read about it: the words
# of the one line the scan says about them (keyed by NotRun.enabled_by).
NOT_RUN_WHY: dict[str, tuple[str, str]] = {
    JUDGE_FLAG: ("only an LLM judge can decide", f"enable them with {JUDGE_FLAG} (docs/judge.md)"),
    CANARIES_SETTING: (
        "look for a leaked secret, and the agent holds none probegate planted or knows",
        f"declare the agent's real secrets under {CANARIES_SETTING} (docs/targets.md)",
    ),
    SANDBOX_SETTING: (
        "attack through content probegate's tool sandbox serves, and the agent runs its own tools",
        "let it take its tools from probegate: {{mcp_url}} for an http agent, context for a "
        "python one (docs/agent-service.md)",
    ),
}


def exposure_of(target: Target, settings: PlanSettings, *, judge: bool) -> Exposure:
    """What the target exposes to probegate, from its declared traits and the config."""
    traits = target.traits()
    return Exposure(
        uses_sandbox=traits.uses_sandbox,
        plants_secrets=traits.system_canaries,
        declared_secrets=settings.declared_secrets,
        judge=judge,
    )


def draw_plan(probes: list[Probe], target: Target, settings: PlanSettings, *, judge: bool) -> Plan:
    """The engine's plan of the request, for this target's tools and what else it exposes."""
    exposure = exposure_of(target, settings, judge=judge)
    return build_plan(probes, capabilities_of(target.tools()), settings.request, exposure)


def with_surface(info: TargetInfo, exposure: Exposure) -> TargetInfo:
    """The target's info with the rest of its surface, as the plan was drawn against it: what
    probegate can reach of it (its secrets as a count, never a value)."""
    return info.model_copy(
        update={
            "declared_secrets": exposure.declared_secrets,
            "planted_secrets": exposure.plants_secrets,
            "uses_sandbox": exposure.uses_sandbox,
        }
    )


def category_plan(plan: Plan) -> dict[str, str]:
    """All ten categories as the plan covers them: what runs, what cannot and what would
    bring it in, what the selection left out."""
    out: dict[str, str] = {}
    for asi in ASI_IDS:
        probes = [p for p in plan.probes if p.asi == asi]
        planned = {a.probe.id for a in plan.all_attempts if a.probe.asi == asi}
        attempts = sum(1 for a in plan.all_attempts if a.probe.asi == asi)
        not_run = [plan.not_run[p.id].enabled_by for p in probes if p.id in plan.not_run]
        if not probes:
            out[asi] = "not selected (--asi, --probes or --shard)"
        elif not planned:
            missing = [
                sorted(c.value for c in p.requires if c not in plan.capabilities)
                for p in probes
                if p.id in plan.not_applicable
            ]
            out[asi] = "n/a: " + enablers(missing, not_run, len(probes))[0]
        else:
            lacking = sum(1 for p in probes if p.id in plan.not_applicable)
            out[asi] = (
                f"{len(planned)} of {len(probes)} probes, {attempts} attempts"
                + (f"; {lacking} need capabilities the tools lack" if lacking else "")
                + (
                    f"; {len(not_run)} not run ({', '.join(sorted(set(not_run)))})"
                    if not_run
                    else ""
                )
            )
    return out


def dry_run(
    plan: Plan,
    agent: AgentConfig,
    out: TextIO,
    surface: TargetInfo | None = None,
    *,
    as_json: bool = False,
    verbose: bool = False,
) -> int:
    """Print the plan and what it may cost; exit 0 without a request. ``as_json`` (``--json``)
    prints the same facts as one JSON object, for a script deciding whether to run the scan.
    The probes that do not apply are counted in one line (each category's line says what would
    bring them in); ``verbose`` (``-v``) lists each with its reason."""
    facts = _dry_run_facts(plan, agent, surface)
    if as_json:
        out.write(json_text(json.dumps(facts, indent=2, ensure_ascii=False)) + "\n")
        return 0
    checked = (
        f" + up to {facts['controls_at_most']} controls"
        if plan.controls
        else ", controls off (--no-controls)"
    )
    out.write(
        f"plan {plan.fingerprint}: mode {plan.mode}, {len(plan.probes)} probes, "
        f"{facts['attempts']} attempts{checked} (at most {facts['requests_at_most']} requests)\n"
    )
    if facts["escalations_at_most"]:
        out.write(
            f"  smart mode: up to {facts['escalations_at_most']} "
            "escalation attempts are included for probes the agent resists\n"
        )
    if surface is not None:
        out.write(f"  surface: {clean(surface_text(surface))}\n")
    for asi, text in facts["categories"].items():
        out.write(f"  {asi}: {text}\n")
    not_applicable = facts["not_applicable"]
    if verbose:
        for probe_id, reason in not_applicable.items():
            out.write(f"  not applicable: {probe_id}: {reason}\n")
    elif not_applicable:
        out.write(
            f"  not applicable: {len(not_applicable)} probe(s), for the capabilities and "
            "settings each category names above (-v lists them)\n"
        )
    for line in facts["not_run"]:
        out.write(f"  {line}\n")
    out.write(f"  estimated cost: {facts['estimated_cost']}\n")
    return 0


def _dry_run_facts(plan: Plan, agent: AgentConfig, surface: TargetInfo | None) -> dict[str, Any]:
    """What a dry run tells, once, for the text and the JSON alike."""
    attempts = plan.all_attempts
    controls = plan.control_bound
    requests = sum(a.requests_upper_bound for a in attempts + controls) * agent.max_turns
    return {
        "dry_run": True,
        "plan": plan.fingerprint,
        "mode": plan.mode,
        "probes": len(plan.probes),
        "attempts": len(attempts),
        "controls": plan.controls,
        "controls_at_most": len(controls) if plan.controls else 0,
        "requests_at_most": requests,
        "escalations_at_most": sum(len(v) for v in plan.escalations.values()),
        "surface": None if surface is None else surface.model_dump(mode="json"),
        "categories": category_plan(plan),
        "not_applicable": dict(sorted(plan.not_applicable.items())),
        "not_run": not_run_lines(plan.not_run),
        "estimated_cost": _cost_estimate(agent, requests),
    }


def not_run_lines(not_run: Mapping[str, NotRun], *, named: int = 6) -> list[str]:
    """One line per setting that would let probes left out of the plan run, naming up to
    ``named`` of them (0: the count alone, for the note a scan starts with)."""
    by_setting: dict[str, list[str]] = {}
    for probe_id, item in sorted(not_run.items()):
        by_setting.setdefault(item.enabled_by, []).append(probe_id)
    lines = []
    for setting, ids in sorted(by_setting.items(), key=lambda kv: (-len(kv[1]), kv[0])):
        what, fix = NOT_RUN_WHY.get(setting, ("need what this target does not expose", setting))
        more = f" and {len(ids) - named} more" if len(ids) > named else ""
        shown = f" ({', '.join(ids[:named])}{more})" if named else ""
        lines.append(f"not run: {len(ids)} probe(s) {what}{shown}; {fix}")
    return lines


def _cost_estimate(agent: AgentConfig, requests: int) -> str:
    """What the dry run can say about money, and why when it cannot say a number."""
    spec = spec_of(agent)
    if spec.positional or not spec.live:
        return "$0.00 (the agent runs inside probegate or is a recording: no paid API is called)"
    if not spec.endpoint:
        return "not estimated: this agent calls its models itself, out of probegate's sight"
    if price_table(agent.prices, agent.model) is None:
        model = f"model {agent.model!r}" if agent.model else "the model"
        return f"unknown: no price for {model} in target.prices (docs/targets.md)"
    # An estimate, not a bound: real prompts grow with the conversation and the tools.
    per_request = cost_usd(
        agent.prices, agent.model, ESTIMATE_PROMPT_TOKENS, ESTIMATE_COMPLETION_TOKENS
    )
    return (
        f"about ${requests * per_request:.2f} at most (assuming ~{ESTIMATE_PROMPT_TOKENS} "
        f"prompt and ~{ESTIMATE_COMPLETION_TOKENS} completion tokens per request; cap it "
        "with --budget-usd)"
    )


def nothing_to_run(plan: Plan, variant: str | None) -> str:
    """Why a plan holds no attempt, in the words that lead to the fix."""
    if plan.not_run and len(plan.not_run) + len(plan.not_applicable) == len(plan.probes):
        return "no selected probe can run against this target: " + "; ".join(
            not_run_lines(plan.not_run)
        )
    if plan.not_applicable and len(plan.not_applicable) == len(plan.probes):
        return (
            f"none of the {len(plan.probes)} selected probes can apply to this target: "
            + _applicability_summary(plan.not_applicable)
        )
    if variant is not None:
        return (
            f"no selected probe has a {variant!r} variant (only probes with a payload "
            "have mutated variants; see 'probegate probes show ID')"
        )
    return "nothing to run: the selection (--asi/--probes/--shard) leaves no attempt"


def _applicability_summary(not_applicable: dict[str, str]) -> str:
    """What the tools lack, the most wanted first: ``retrieval (23), pii_read (11), ...``."""
    by_missing: dict[str, int] = {}
    for reason in not_applicable.values():
        missing = reason.removeprefix(_NO_TOOL_WITH)
        by_missing[missing] = by_missing.get(missing, 0) + 1
    ranked = sorted(by_missing.items(), key=lambda kv: (-kv[1], kv[0]))
    parts = [f"{missing} ({count})" for missing, count in ranked[:3]]
    return ", ".join(parts) + (", ..." if len(ranked) > 3 else "")


# engine/plan.py's reason for a probe whose capability no tool has; the note names the rest.
_NO_TOOL_WITH = "target has no tool with capability "


def say_what_cannot_apply(plan: Plan, tools: list[ToolSpec], view: View) -> None:
    """Before the first request: which probes this target cannot be tested on, and the fix.

    The plan decided it (engine/plan.py), so the notes and the report never disagree.
    """
    selected = len(plan.probes)
    if not selected:
        return
    # Said once, before the first request, in a line each: how many and the fix. The probes
    # are named by the report, the dry run and -v.
    for line in not_run_lines(plan.not_run, named=6 if view.verbose else 0):
        view.note(line)
    skipped = len(plan.not_applicable)
    unusable = skipped + len(plan.not_run)
    if skipped and not tools:
        view.note(
            f"{skipped} of {selected} probes cannot apply: the target declares no tools; "
            "declare them with their capabilities under target.tools (docs/targets.md)"
        )
    elif skipped and skipped >= FEW_PROBES_FRACTION * selected:
        view.note(
            f"{skipped} of {selected} probes cannot apply to this target: its tools lack "
            + _applicability_summary(plan.not_applicable)
            + "; declare the missing capabilities on them (docs/targets.md)"
        )
    elif unusable and unusable >= FEW_PROBES_FRACTION * selected and not view.quiet:
        view.note(
            f"only {selected - unusable} of {selected} selected probes apply to what this "
            "target exposes; each category in the report says what would bring more in"
        )
