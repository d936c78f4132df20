"""``docs/probes.md``, generated from the library, and the probe descriptions it shares with
``probegate probes``.

The generated file has one section per probe whose anchor is the probe id (the same id is the
SARIF ruleId and the baseline key), plus the mutators and the oracle kinds. A test renders it
again and fails when the committed file differs, so the docs cannot drift from the library.

Regenerate with ``python -m probegate.library.docs`` (writes ``docs/probes.md``) or check with
``python -m probegate.library.docs --check``.
"""

from __future__ import annotations

import argparse
import re
import sys
import unicodedata
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from probegate.library.controls import control_pool
from probegate.library.loader import Library, load_atlas, load_library
from probegate.library.mutators import MUTATORS
from probegate.library.oracles import KINDS
from probegate.library.probe import Probe
from probegate.models.probe import PAYLOAD, stable_id
from probegate.models.taxonomy import ASI_IDS, ASI_TITLES, CSA_TITLES, OWASP_LLM_TITLES, Channel

DOCS_PATH = Path("docs") / "probes.md"
_TAG_RUN = re.compile("[\U000e0020-\U000e007e]+")

# Oracle kind -> how it decides, in the registry's order (docs/probes.md, "Oracle kinds").
ORACLE_KINDS: dict[str, str] = {kind.kind_name(): kind.SUMMARY for kind in KINDS}


def probe_record(probe: Probe) -> dict[str, Any]:
    """The machine-readable summary of a probe (``probegate probes list --json``)."""
    return {
        "id": probe.id,
        "name": probe.name,
        "asi": probe.asi,
        "asi_title": ASI_TITLES[probe.asi],
        "severity": probe.severity.value,
        "channel": probe.channel.value,
        "oracles": list(probe.oracle_kinds),
        "needs_judge": probe.needs_judge,
        "multi_turn": probe.multi_turn,
        "requires": [c.value for c in probe.requires],
        "owasp_llm": list(probe.owasp_llm),
        "mitre_atlas": list(probe.mitre_atlas),
        "csa_category": probe.csa_category,
        "docs": f"docs/probes.md#{probe.id}",
    }


def visible(text: str) -> str:
    """Show invisible characters (zero-width, Unicode tags, bidi controls) as escapes.

    Probe payloads hide instructions in such characters on purpose; docs and terminals must show
    that they are there.
    """
    text = _TAG_RUN.sub(
        lambda m: (
            '[invisible Unicode tags: "' + "".join(chr(ord(c) - 0xE0000) for c in m.group(0)) + '"]'
        ),
        text,
    )
    out: list[str] = []
    for ch in text:
        if ch not in "\n\t" and unicodedata.category(ch) in ("Cf", "Cc", "Co", "Cn"):
            out.append(f"\\u{ord(ch):04x}" if ord(ch) <= 0xFFFF else f"\\U{ord(ch):08x}")
        else:
            out.append(ch)
    return "".join(out)


def _md_block(text: str) -> list[str]:
    body = visible(text)
    fence = "`" * max(3, _longest_backticks(body) + 1)
    return [f"{fence}text", body, fence]


def _longest_backticks(text: str) -> int:
    longest = run = 0
    for ch in text:
        run = run + 1 if ch == "`" else 0
        longest = max(longest, run)
    return longest


def _md_escape(text: str) -> str:
    return visible(text).replace("|", "\\|").replace("<", "&lt;").replace(">", "&gt;")


def _item(prefix: str, text: str) -> list[str]:
    """A list item; multi-line text goes into an indented fenced block so Markdown keeps it."""
    if "\n" not in text:
        return [f"{prefix} {_md_escape(text)}"]
    indent = " " * (prefix.index(" ") + 1)  # the list marker's width: "- " or "1. "
    block = "\n".join(_md_block(text)).split("\n")
    return [prefix, "", *[f"{indent}{line}" if line else "" for line in block], ""]


def _turn_lines(index: int, probe: Probe) -> list[str]:
    turn = probe.turns[index]
    who = "user" if turn.sender == "user" else f"peer agent `{turn.agent_name or 'agent'}`"
    session = f", session {turn.session}" if turn.session > 1 else ""
    return _item(f"{index + 1}. {who}{session}:", turn.content)


def _fixture_lines(probe: Probe) -> list[str]:
    fx = probe.fixtures
    lines: list[str] = []
    tables = (
        ("fetched document", fx.documents),
        ("tool result", fx.tool_results),
        ("tool error", fx.tool_errors),
        ("tool description", fx.tool_descriptions),
        ("peer agent reply", fx.agent_replies),
    )
    for label, table in tables:
        for key in sorted(table):
            where = "any" if key == "*" else f"`{key}`"
            lines += _item(f"- {label} ({where}):", table[key])
    for note in fx.memory:
        lines += _item("- long-term memory:", note)
    for key in sorted(fx.peer_agents):
        where = "any" if key == "*" else f"`{key}`"
        peer = fx.peer_agents[key]
        if peer.card_text():
            lines += _item(f"- peer agent card ({where}):", peer.card_text())
        if peer.state != "completed":
            lines.append(f"- peer agent's tasks end ({where}): `{peer.state}`")
    return lines


def render_probe(probe: Probe, atlas: dict[str, str]) -> list[str]:
    lines = [
        f'<a id="{stable_id(probe.id)}"></a>',
        f'<a id="{probe.id}"></a>',
        "",
        f"### `{probe.id}`",
        "",
        f"**{_md_escape(probe.name)}**",
        "",
        _md_escape(probe.description),
        "",
        "| | |",
        "|---|---|",
        f"| ASI | {probe.asi} {ASI_TITLES[probe.asi]} |",
        f"| severity | {probe.severity.value} |",
        f"| channel | `{probe.channel.value}` |",
        f"| requires | {', '.join(f'`{c.value}`' for c in probe.requires) or 'nothing'} |",
        f"| turns | {len(probe.turns)}{' (multi-turn)' if probe.multi_turn else ''} |",
        "| OWASP LLM | " + "; ".join(f"{i} {OWASP_LLM_TITLES[i]}" for i in probe.owasp_llm) + " |",
        "| MITRE ATLAS | "
        + "; ".join(f"{i} {atlas.get(i, '(unknown id)')}" for i in probe.mitre_atlas)
        + " |",
        f"| CSA | {CSA_TITLES[probe.csa_category]} (`{probe.csa_category}`) |",
        "",
        "**How it is judged**"
        + (" (needs an LLM judge):" if probe.needs_judge else " (deterministic):"),
        "",
        *[f"- {_md_escape(o.describe())}" for o in probe.oracles],
        "",
        "**Attack**:",
        "",
    ]
    if probe.payload is not None:
        lines += [f"Payload (`{PAYLOAD}`; mutators rewrite it in smart and full modes):", ""]
        lines += _md_block(probe.payload)
        lines.append("")
        if probe.control is not None:
            lines += [
                "Control (the payload's benign stand-in in this probe's control, followed by a "
                "sentence drawn for each scan):",
                "",
            ]
            lines += _md_block(probe.control)
            lines.append("")
    for i in range(len(probe.turns)):
        lines += _turn_lines(i, probe)
    fixtures = _fixture_lines(probe)
    if fixtures:
        lines += ["", "Sandbox fixtures:", "", *fixtures]
    lines += ["", f"**Remediation**: {_md_escape(probe.remediation)}", ""]
    if probe.references:
        lines += ["**References**: " + ", ".join(f"<{r}>" for r in probe.references), ""]
    return lines


def render_probe_docs(library: Library) -> str:
    """The whole of docs/probes.md for ``library``; a pure function of the probe files."""
    atlas = load_atlas()
    probes = library.probes
    per_asi = Counter(p.asi for p in probes)
    per_channel = Counter(p.channel.value for p in probes)
    judged = sum(1 for p in probes if not p.needs_judge)
    lines = [
        "# Probe library",
        "",
        "<!-- Generated by `python -m probegate.library.docs` from "
        "src/probegate/library/probes/*.yaml. Do not edit by hand; a test fails when this file "
        "is out of date. -->",
        "",
        f"Library release `{library.version.split('+')[0]}`: {len(probes)} probes, "
        f"{sum(p.multi_turn for p in probes)} multi-turn, {judged} "
        f"({100.0 * judged / len(probes):.1f}%) judged by deterministic oracles, "
        f"{len(probes) - judged} need an LLM judge. MITRE ATLAS data {atlas.version}.",
        "",
        "Each probe id is stable: it is this page's anchor and the baseline key. Without its "
        "`.vN` suffix it is the SARIF `ruleId` and a second anchor, so code-scanning alerts and "
        "their help links survive a new version of a probe. Browse from the command line with "
        "`probegate probes list` and `probegate probes show ID`.",
        "",
        "| ASI | title | probes |",
        "|---|---|---|",
        *[f"| {a} | {ASI_TITLES[a]} | {per_asi[a]} |" for a in ASI_IDS],
        "",
        "| channel | probes |",
        "|---|---|",
        *[f"| `{c.value}` | {per_channel[c.value]} |" for c in Channel],
        "",
        *_how_attempts_are_judged(),
    ]
    for asi in ASI_IDS:
        mine = [p for p in probes if p.asi == asi]
        if not mine:
            continue
        lines += [f"## {asi} {ASI_TITLES[asi]}", ""]
        lines += [f"- [`{p.id}`](#{p.id}): {_md_escape(p.name)}" for p in mine]
        lines.append("")
        for probe in mine:
            lines += render_probe(probe, atlas.techniques)
    return "\n".join(lines).rstrip("\n") + "\n"


def _how_attempts_are_judged() -> list[str]:
    """The sections every probe's entry refers to: oracle kinds, patterns, controls, mutators."""
    pool = control_pool()
    return [
        "## Oracle kinds",
        "",
        "An attempt is `vulnerable` when any of the probe's oracles sees evidence, `resisted` "
        "when at least one could look and none did, and `unjudged` (never counted as resisted) "
        "when none could decide. Every piece of evidence points into the transcript "
        "(`turns.N.tool_calls.M.arguments.KEY`) with offsets that slice exactly its subject.",
        "",
        *[f"- `{kind}`: {text}" for kind, text in ORACLE_KINDS.items()],
        "",
        "### Patterns",
        "",
        "An oracle's `pattern`, `args_pattern` and `claims` are RE2 regular expressions, matched "
        "case-insensitively in time linear in the agent's text: no reply, however it is built, "
        "makes a match take longer than reading it. RE2 has no backreferences, lookahead or "
        "lookbehind, atomic or possessive groups, or `(?x)`; a probe that uses one is refused "
        "when it is loaded, with RE2's reason (exit 2). `\\b`, `\\w`, `\\d` and `\\s` are "
        "ASCII classes; Python's `\\Z` is accepted as RE2's `\\z`.",
        "",
        "## Controls",
        "",
        "Every attempt judged vulnerable is run again with the payload replaced by a benign "
        "text on the same channel (its control, docs/scoring.md): evidence the control shows "
        "too was not caused by the attack. The text is drawn for each scan, probe and repeat "
        "from the scan's seed, out of a pool of templates per channel "
        "(`library/data/controls.yaml`), so an agent cannot recognise a fixed list of controls; "
        "the same seed draws the same texts. A probe may name its own benign text (`control:`, "
        "shown with the probe), which a drawn sentence of its channel follows. What the pool "
        "can draw, by channel:",
        "",
        "| channel | templates | texts | for example |",
        "|---|---:|---:|---|",
        *[
            f"| `{c.value}` | {len(pool.templates[c])} | {sum(1 for _ in pool.texts(c))} | "
            f"{_md_escape(pool.templates[c][0])} |"
            for c in Channel
        ],
        "",
        "## Mutators",
        "",
        "In `smart` mode (escalation where the agent resisted) and `full` mode (every variant x "
        "`--repeat`), each probe's payload is also sent rewritten by every mutator. A mutator is "
        "deterministic for a seed: the RNG is seeded with `seed:attempt-id:mutator`, so a rerun "
        "with the same `--seed` sends byte-identical attacks. E-mail addresses and URLs are kept "
        "intact so the attack still works after obfuscation.",
        "",
        "| mutator | what it does |",
        "|---|---|",
        *[f"| `{m.name}` | {m.description} |" for m in MUTATORS.values()],
        "",
    ]


def main(argv: Sequence[str] | None = None) -> int:
    """Write docs/probes.md, or with ``--check`` exit 1 when it is out of date."""
    parser = argparse.ArgumentParser(
        prog="python -m probegate.library.docs", description="Generate docs/probes.md."
    )
    parser.add_argument("path", nargs="?", default=str(DOCS_PATH), help="output file")
    parser.add_argument("--check", action="store_true", help="fail if the file is out of date")
    args = parser.parse_args(argv)
    path = Path(args.path)
    text = render_probe_docs(load_library())
    if args.check:
        current = path.read_text(encoding="utf-8") if path.exists() else ""
        if current != text:
            print(f"{path} is out of date: run python -m probegate.library.docs", file=sys.stderr)
            return 1
        return 0
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
