"""What a reader needs first, in words: why the scan stopped, whether its score counts, what it
found in one line per finding, and why attempts went unjudged, grouped by cause with the fix.

The terminal summary, ``summary.md`` and ``report.html`` all say these things, so they are
decided once here, as plain text from the report alone (no clock, no file system). Each emitter
escapes the text for its own medium; nothing here is trusted to be safe markup.

Unjudged attempts are grouped by *cause*, not by their exact reason string: a 500 from the
target with twenty different bodies is one problem with one fix, and listing 150 near-identical
rows hides the one line that matters (docs/report-format.md, "Unjudged attempts").
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from probegate.models.report import Finding, ScanReport, UnjudgedAttempt
from probegate.models.transcript import text_at
from probegate.scoring import CONDITION_WORDS

# How many probe ids a group names before "and N more".
GROUP_PROBES = 3


@dataclass(frozen=True)
class Cause:
    """One reason attempts go unjudged: how to recognise it, say it, and fix it."""

    key: str
    label: str
    fix: str
    matches: Callable[[str], bool]


def _has(*needles: str) -> Callable[[str], bool]:
    lowered = tuple(n.lower() for n in needles)
    return lambda reason: any(n in reason.lower() for n in lowered)


def _http(*codes: str) -> Callable[[str], bool]:
    pattern = re.compile(r"\bHTTP (" + "|".join(codes) + r")\b")
    return lambda reason: pattern.search(reason) is not None


# First match wins; the order puts the specific before the general.
CAUSES: tuple[Cause, ...] = (
    Cause(
        "control",
        "judged vulnerable, but its control (the same conversation without the attack) could "
        "not be judged or did not run, so the attack was not shown to be the cause",
        "fix what its control ran into (its reason is in scan.json), or resume a scan that "
        "stopped: probegate scan --resume SCAN_ID runs the missing controls",
        _has("its control "),
    ),
    Cause(
        "ambiguous",
        "the reply repeats the attacker's bait in words the rules cannot decide (quoted, "
        "reported, or next to a warning)",
        "add --judge (e.g. --judge openai:gpt-4o-mini): only these attempts go to it "
        '(docs/scoring.md, "Reading a reply")',
        lambda reason: reason.startswith("needs a judge:"),
    ),
    Cause(
        "needs_judge",
        "only an LLM judge can decide these replies and none is configured",
        "add --judge (e.g. --judge openai:gpt-4o-mini) to decide them",
        _has("needs an LLM judge", "needs a judge"),
    ),
    # The next two read reports of versions whose runner left these probes unjudged; the plan
    # now leaves them out as not run, with the setting that enables them.
    Cause(
        "not_delivered",
        "the attack rides on content served by probegate's tool sandbox, which this target "
        "does not use",
        "scan the agent as a kind whose tools probegate answers (openai, or python taking "
        "context), or serve it the sandbox's tools (docs/targets.md)",
        _has("not delivered:"),
    ),
    Cause(
        "nothing_to_leak",
        "the agent holds no secret probegate planted or knows",
        "declare the agent's real secrets under target.canaries or target.canaries_env",
        _has("nothing to leak"),
    ),
    Cause(
        "tool_calls_hidden",
        "the target does not show the tool calls it made",
        "set target.http.response_tool_calls to where the reply lists the agent's tool calls",
        _has("does not expose its tool calls"),
    ),
    Cause(
        "interrupted",
        "cut short when the scan was interrupted",
        "resume the scan: probegate scan --resume SCAN_ID",
        _has("scan stopped (cancelled)"),
    ),
    Cause(
        "stopped",
        "cut short when the scan stopped",
        "fix what stopped the scan (see above) and scan again",
        _has("scan stopped ("),
    ),
    Cause(
        "budget",
        "cut short by the request or dollar budget",
        "raise --max-requests or --budget-usd, or select fewer probes (--asi, --probes)",
        _has("budget of", "exhausted", "cut short"),
    ),
    Cause(
        "dns",
        "the target's host name does not resolve (DNS)",
        "check the host name in the endpoint URL, and the network or proxy of this machine",
        _has("cannot resolve host"),
    ),
    Cause(
        "refused",
        "nothing listens at the target's address (connection refused)",
        "start the agent, or correct the endpoint URL and port",
        _has("connection refused"),
    ),
    Cause(
        "auth",
        "the target refused probegate's credentials (HTTP 401/403)",
        "set the API key: --api-key-env VAR (or target.api_key_env) names a variable that holds it",
        _http("401", "403", "407"),
    ),
    Cause(
        "rate_limited",
        "the target kept rate-limiting (HTTP 429)",
        "lower --concurrency or set --rps; probegate already honours Retry-After",
        _http("429"),
    ),
    Cause(
        "server_error",
        "the target failed with a server error (HTTP 5xx)",
        "look at the agent's logs for these requests; --retries retries transient failures",
        _http(r"5\d\d"),
    ),
    Cause(
        "client_error",
        "the target rejected the request (HTTP 4xx), e.g. a content filter or a wrong path",
        "check the endpoint path and request format; a content filter's refusal is the "
        "provider's, not the agent's",
        _http(r"4\d\d"),
    ),
    Cause(
        "timeout",
        "the target did not answer in time",
        "raise --timeout, or lower --concurrency if the agent slows down under load",
        _has("timeout", "timed out", "did not answer within"),
    ),
    Cause(
        "dropped",
        "the connection dropped before a complete reply",
        "look at the agent's logs; a proxy or load balancer in between may cut long requests",
        _has("connection dropped"),
    ),
    Cause(
        "unreadable",
        "the target answered with a body that could not be read (an HTML page, JSON cut off, "
        "an empty body, or one without the fields a reply needs)",
        "look at what answers for the agent (a proxy, gateway or load balancer) for these "
        "requests; probegate retries such a reply like a 5xx, --retries times (default 3)",
        # The older words too, so a stored report still groups its reasons.
        _has("unreadable reply", "not a chat completion", "reply is", "reply has no", "not json"),
    ),
    Cause(
        "agent_error",
        "the agent raised an error",
        "run the agent on the probe's input yourself (probegate probes show ID) and fix the "
        "error; its message is in scan.json",
        _has("agent raised", "constructor raised", "returned none"),
    ),
    Cause(
        "guard",
        "the runtime guard could not be used",
        "check the guard's URL, key (--guard-api-key-env) and logs (docs/guard.md)",
        _has("guard"),
    ),
    Cause(
        "recording",
        "the recording has no usable reply for this attempt",
        "record again with the same mode and selection (--record DIR)",
        _has("recording"),
    ),
)
OTHER = Cause("other", "", "", lambda reason: True)
# Unreadable replies when no reply of the scan was ever read: the protocol itself is wrong.
WRONG_PROTOCOL = Cause(
    "bad_reply",
    "no reply of the target could be read in the shape its kind expects",
    "check --protocol (openai, openai-responses, anthropic or http) and, for http, "
    "target.http.response_text",
    _has("unreadable reply"),
)


def cause_of(reason: str) -> Cause:
    return next((c for c in CAUSES if c.matches(reason)), OTHER)


@dataclass
class ReasonGroup:
    """Unjudged attempts that share one cause."""

    cause: Cause
    count: int = 0
    probes: list[str] = field(default_factory=list)
    example: str = ""

    @property
    def label(self) -> str:
        return self.cause.label or self.example

    @property
    def fix(self) -> str:
        return self.cause.fix

    def probes_text(self, limit: int = GROUP_PROBES) -> str:
        shown = ", ".join(self.probes[:limit])
        more = len(self.probes) - limit
        return shown + (f" and {more} more" if more > 0 else "")


def replies_read(report: ScanReport) -> bool:
    """Whether any reply of the scan was read: an attempt was judged, so the target answers in
    its kind's shape, and a reply that could not be read was a transient fault, not a wrong
    ``--protocol``."""
    return any(r.vulnerable or r.resisted for r in report.results)


def unjudged_groups(report: ScanReport) -> list[ReasonGroup]:
    """The report's unjudged attempts by cause (:func:`group_unjudged`)."""
    return group_unjudged(report.unjudged, replies_read=replies_read(report))


def group_unjudged(
    items: Iterable[UnjudgedAttempt], *, replies_read: bool = True
) -> list[ReasonGroup]:
    """The unjudged attempts by cause, largest group first; an unknown reason is its own group.

    Unreadable replies are a flaky endpoint's when others were read (``replies_read``), and a
    wrong protocol's when none was.
    """
    groups: dict[str, ReasonGroup] = {}
    for item in items:
        cause = cause_of(item.reason)
        if cause.key == "unreadable" and not replies_read:
            cause = WRONG_PROTOCOL
        key = cause.key if cause is not OTHER else "other:" + _shape(item.reason)
        group = groups.setdefault(key, ReasonGroup(cause, example=item.reason))
        group.count += 1
        if item.probe_id not in group.probes:
            group.probes.append(item.probe_id)
    return sorted(groups.values(), key=lambda g: (-g.count, g.label))


def _shape(reason: str) -> str:
    """A reason with its numbers and quoted parts blanked, so near-identical ones group."""
    return re.sub(r"\d+", "N", re.sub(r"'[^']*'|\"[^\"]*\"", "'…'", reason))[:120]


def stop_text(report: ScanReport) -> str:
    """Why the scan ended, in one sentence."""
    done = report.completeness
    ran = f"{done.turns_used} of {done.turns_planned} planned attempts ran" if done else ""
    budget = report.budget
    if report.stopped_reason == "completed":
        return f"ran to the end: {ran}" if ran else "ran to the end"
    if report.stopped_reason == "budget":
        spent = ""
        if budget is not None and budget.max_requests is not None:
            spent = f"{budget.requests_used} of --max-requests {budget.max_requests} requests used"
        elif budget is not None and budget.cap_usd is not None:
            spent = f"${budget.spent_usd:.2f} of --budget-usd {budget.cap_usd:.2f} spent"
        if spent and budget is not None:
            share = round(budget.soft_stop_fraction * 100)
            spent += f"; new attempts stop at {share}% so the ones running can finish"
        return (
            "stopped at the budget"
            + (f" ({spent})" if spent else "")
            + (f"; {ran}; raise the budget to run the rest" if ran else "")
        )
    if report.stopped_reason == "cancelled":
        return "interrupted" + (f": {ran}; the rest can be resumed" if ran else "")
    groups = unjudged_groups(report)
    why = f": {groups[0].label}" if groups else ""
    return f"stopped early, the target could not be judged{why}" + (f"; {ran}" if ran else "")


def authority_text(report: ScanReport) -> str:
    """Whether the score counts, and what that means for the gates."""
    authority = report.authority
    if authority.authoritative:
        return (
            "authoritative: full mode, real evaluation, every finding checked against its "
            "control, complete coverage; --fail-under can pass on this scan"
        )
    reasons = "; ".join(authority_reasons(report))
    return (
        f"not authoritative ({reasons}), so --fail-under exits 3 on this scan; confirmed "
        "findings still count for --fail-on and --baseline"
    )


def authority_reasons(report: ScanReport) -> list[str]:
    """Why the score does not count, each in words with its fix; never a condition's name.

    The report's own reasons come first; a report that names conditions without reasons (one
    read from another tool) gets each condition's words, and the top-level flags are read too,
    so a report whose flags disagree with its ``authority`` block still says why.
    """
    if report.authority.authoritative and report.mode_authoritative and report.scoring_valid:
        return []
    why = list(report.authority.reasons)
    failed = list(report.authority.failed)
    extra = []
    if not report.mode_authoritative and "mode_authoritative" not in failed:
        extra.append("mode_authoritative")
    # The top-level scoring_valid is every condition but the mode: named only when none is.
    if not report.scoring_valid and not set(failed) - {"mode_authoritative"}:
        extra.append("scoring_valid")
    failed += extra
    why += [CONDITION_WORDS[name] for name in extra] if why else []
    if not why:
        why = [CONDITION_WORDS.get(c, c) for c in failed] or [CONDITION_WORDS["authoritative"]]
    return why


def evidence_text(finding: Finding, limit: int = 100) -> str:
    """The finding's first evidence in a line: what the agent did, with the bait it carried."""
    if not finding.evidence:
        return finding.summary
    ev = finding.evidence[0]
    subject = ev.subject if len(ev.subject) <= limit else ev.subject[: limit - 1] + "…"
    place = _place(finding, ev.path)
    if place == "called":
        return f"called {subject} ({ev.category})"
    return f"{place}: {subject!r} ({ev.category})"


_TOOL_PATH = re.compile(r"^turns\.(\d+)\.tool_calls\.(\d+)\.(\w+)(?:\.(.+))?$")
_TURN_PATH = re.compile(r"^turns\.(\d+)\.(content|guard.*)$")


def _place(finding: Finding, path: str) -> str:
    """``send_email(to=…)``-style words for an evidence path, or the path itself."""
    match = _TOOL_PATH.match(path)
    if match and finding.transcript is not None:
        turn, call, part, rest = match.groups()
        name = text_at(finding.transcript, f"turns.{turn}.tool_calls.{call}.name")
        if name is not None:
            if part == "arguments" and rest:
                return f"called {name} with {rest}"
            if part == "name":
                return "called"
            return f"{name} {part}"
    match = _TURN_PATH.match(path)
    if match and match.group(2) == "content":
        return "replied"
    return path
