"""The probe library as data: one contract test walks every probe.

Taxonomy ids are checked against the official lists (shared/reference/taxonomies.md) and the
bundled MITRE ATLAS file, loaded here independently of the package's own loader; the library's
shape (counts per ASI category and channel, multi-turn, deterministic share) is held to
floors below, which docs/probes.md's header reports.
"""

from __future__ import annotations

import re
from collections import Counter
from functools import lru_cache
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest
import yaml

from probegate.engine.plan import applicability
from probegate.library.controls import control_text
from probegate.library.loader import ATLAS_FILE, PROBES_DIR, load_library
from probegate.library.oracles import ORACLE_KINDS
from probegate.library.oracles.judge import JudgeOracle
from probegate.library.probe import Probe
from probegate.models.taxonomy import ASI_IDS, ASI_TITLES, CSA_TITLES, OWASP_LLM_TITLES, Channel
from probegate.scoring import MIN_PROBES_PER_ASI
from probegate.targets.base import capabilities_of
from probegate.targets.demo.intents import claims_authority, normalise, read_intents
from probegate.targets.demo.tools import DEMO_TOOLS

OFFICIAL_ASI = {
    "ASI01": "Agent Goal Hijack",
    "ASI02": "Tool Misuse and Exploitation",
    "ASI03": "Identity and Privilege Abuse",
    "ASI04": "Agentic Supply Chain Vulnerabilities",
    "ASI05": "Unexpected Code Execution (RCE)",
    "ASI06": "Memory & Context Poisoning",
    "ASI07": "Insecure Inter-Agent Communication",
    "ASI08": "Cascading Failures",
    "ASI09": "Human-Agent Trust Exploitation",
    "ASI10": "Rogue Agents",
}
OFFICIAL_LLM = {
    "LLM01": "Prompt Injection",
    "LLM02": "Sensitive Information Disclosure",
    "LLM03": "Supply Chain",
    "LLM04": "Data and Model Poisoning",
    "LLM05": "Improper Output Handling",
    "LLM06": "Excessive Agency",
    "LLM07": "System Prompt Leakage",
    "LLM08": "Vector and Embedding Weaknesses",
    "LLM09": "Misinformation",
    "LLM10": "Unbounded Consumption",
}
OFFICIAL_CSA = [
    "Agent Authorization and Control Hijacking",
    "Checker-Out-of-the-Loop",
    "Agent Critical System Interaction",
    "Agent Goal and Instruction Manipulation",
    "Agent Hallucination Exploitation",
    "Agent Impact Chain and Blast Radius",
    "Agent Knowledge Base Poisoning",
    "Agent Memory and Context Manipulation",
    "Agent Orchestration and Multi-Agent Exploitation",
    "Agent Resource and Service Exhaustion",
    "Agent Supply Chain and Dependency Attacks",
    "Agent Untraceability",
]
PAYLOAD = "{{payload}}"
DEMO_CAPS = capabilities_of(list(DEMO_TOOLS))
FIXTURE_KEYS = {t.name for t in DEMO_TOOLS} | {c.value for c in DEMO_CAPS}
# Attack text may only point at reserved names: .test domains (RFC 2606), example.com,
# TEST-NET and private/link-local addresses. A probe must never aim at a real third party.
_HOST = re.compile(r"(?:https?|file)://([^/\s:?#\"'<>)\]]+)|@([A-Za-z0-9.-]+\.[A-Za-z]{2,})")
_RESERVED_HOST = re.compile(
    r"(?:^|\.)(?:[a-z0-9-]+\.test|example\.com|localhost)$|^(?:169\.254|10\.|127\.|203\.0\.113\.)",
    re.IGNORECASE,
)

LIBRARY = load_library()
PROBES = LIBRARY.probes
IDS = [p.id for p in PROBES]


@lru_cache(maxsize=1)
def atlas_ids() -> set[str]:
    """Technique ids from the packaged ATLAS.yaml, read with libyaml's safe loader."""
    data = yaml.load(ATLAS_FILE.read_text(encoding="utf-8"), Loader=yaml.CSafeLoader)
    return {t["id"] for m in data["matrices"] for t in m["techniques"]}


def _texts(probe: Probe) -> list[str]:
    fx = probe.fixtures
    return (
        [t.content for t in probe.turns]
        + list(fx.documents.values())
        + list(fx.memory)
        + list(fx.agent_replies.values())
        + list(fx.tool_results.values())
        + list(fx.tool_descriptions.values())
        + list(fx.tool_errors.values())
        + [text for peer in fx.peer_agents.values() for text in peer.texts()]
    )


# -- taxonomies -----------------------------------------------------------------------------
def test_asi_titles_are_the_official_2026_ones() -> None:
    assert ASI_TITLES == OFFICIAL_ASI


def test_owasp_llm_titles_are_the_2025_ones() -> None:
    assert OWASP_LLM_TITLES == OFFICIAL_LLM


def test_csa_categories_are_the_twelve_in_long_kebab_case() -> None:
    assert list(CSA_TITLES.values()) == OFFICIAL_CSA
    for key, title in CSA_TITLES.items():
        assert key == re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-")


def test_atlas_data_is_the_pinned_release() -> None:
    data = yaml.load(ATLAS_FILE.read_text(encoding="utf-8"), Loader=yaml.CSafeLoader)
    assert data["version"] == "5.6.0"
    assert {"AML.T0051.001", "AML.T0086", "AML.T0110"} <= atlas_ids()


# -- every probe ----------------------------------------------------------------------------
@pytest.mark.parametrize("probe", PROBES, ids=IDS)
def test_probe_taxonomy_ids_are_real(probe: Probe) -> None:
    assert probe.asi in OFFICIAL_ASI
    assert probe.id.startswith(probe.asi.lower() + ".")
    unknown = [t for t in probe.mitre_atlas if t not in atlas_ids()]
    assert not unknown, f"ATLAS ids not in ATLAS.yaml: {unknown}"
    assert set(probe.owasp_llm) <= set(OFFICIAL_LLM)
    assert probe.csa_category in CSA_TITLES
    assert len(set(probe.mitre_atlas)) == len(probe.mitre_atlas)


@pytest.mark.parametrize("probe", PROBES, ids=IDS)
def test_probe_file_name_is_its_id(probe: Probe) -> None:
    assert (PROBES_DIR / f"{probe.id}.yaml").is_file()


@pytest.mark.parametrize("probe", PROBES, ids=IDS)
def test_payload_is_placed_where_the_attack_rides(probe: Probe) -> None:
    assert probe.payload, "every probe carries a payload the mutators can rewrite"
    assert PAYLOAD not in probe.payload
    assert any(PAYLOAD in text for text in _texts(probe)), "payload placeholder never used"


@pytest.mark.parametrize("probe", PROBES, ids=IDS)
def test_channel_matches_where_the_payload_is(probe: Probe) -> None:
    fx = probe.fixtures
    where = {
        Channel.USER: [t.content for t in probe.turns if t.sender == "user"],
        Channel.AGENT_MESSAGE: [t.content for t in probe.turns if t.sender == "agent"]
        + list(fx.agent_replies.values())
        + [text for peer in fx.peer_agents.values() for text in peer.texts()],
        Channel.DOCUMENT: list(fx.documents.values()),
        Channel.MEMORY: list(fx.memory),
        Channel.TOOL_RESULT: list(fx.tool_results.values()) + list(fx.tool_errors.values()),
        Channel.TOOL_DESCRIPTION: list(fx.tool_descriptions.values()),
    }[probe.channel]
    if probe.channel is Channel.DOCUMENT or probe.channel is Channel.MEMORY:
        # Memory poisoning may arrive through a document or a user turn and persist.
        where += [t.content for t in probe.turns]
    assert any(PAYLOAD in text for text in where), f"payload not in the {probe.channel} channel"


@pytest.mark.parametrize("probe", PROBES, ids=IDS)
def test_probe_applies_to_the_demo_agent(probe: Probe) -> None:
    assert applicability(probe, DEMO_CAPS) is None


@pytest.mark.parametrize("probe", PROBES, ids=IDS)
def test_fixtures_and_turns_are_well_formed(probe: Probe) -> None:
    fx = probe.fixtures
    for table in (fx.tool_results, fx.tool_errors, fx.tool_descriptions):
        assert set(table) <= FIXTURE_KEYS, "fixture keyed by an unknown tool or capability"
    sessions = [t.session for t in probe.turns]
    assert sessions[0] == 1 and sessions == sorted(sessions)
    assert all(b - a <= 1 for a, b in pairwise(sessions))
    for turn in probe.turns:
        assert turn.sender == "user" or turn.agent_name, "peer-agent turns name their agent"


@pytest.mark.parametrize("probe", PROBES, ids=IDS)
def test_probe_is_documented_for_developers(probe: Probe) -> None:
    assert len(probe.name) <= 100 and probe.name.lstrip("'")[0].isupper()
    assert len(probe.description) >= 40
    assert len(probe.remediation) >= 60, "remediation must say what to change"
    assert probe.references, "at least one reference"
    assert all(r.startswith("https://") for r in probe.references)
    for oracle in probe.oracles:
        if isinstance(oracle, JudgeOracle):
            assert "Vulnerable if" in oracle.rubric and "Resisted if" in oracle.rubric


@pytest.mark.parametrize("probe", PROBES, ids=IDS)
def test_attack_text_only_names_reserved_hosts(probe: Probe) -> None:
    texts = [*_texts(probe), probe.payload or ""]
    hosts = {a or b for text in texts for a, b in _HOST.findall(text)}
    real = sorted(h for h in hosts if not _RESERVED_HOST.search(h))
    assert not real, f"probe names non-reserved hosts: {real}"


# -- the library as a whole -----------------------------------------------------------------
def test_library_files_and_ids_agree() -> None:
    files = sorted(p.stem for p in Path(PROBES_DIR).glob("*.yaml"))
    assert files == sorted(IDS)
    assert len(set(IDS)) == len(IDS)


def test_at_least_twelve_probes_per_asi_category() -> None:
    counts = Counter(p.asi for p in PROBES)
    assert len(PROBES) >= 120
    assert {asi: counts[asi] for asi in OFFICIAL_ASI if counts[asi] < 12} == {}


def test_every_channel_carries_at_least_five_probes() -> None:
    counts = Counter(p.channel for p in PROBES)
    assert {c.value: counts[c] for c in Channel if counts[c] < 5} == {}


def test_at_least_fifteen_multi_turn_probes() -> None:
    multi = [p for p in PROBES if p.multi_turn]
    assert len(multi) >= 15
    assert any(t.session > 1 for p in multi for t in p.turns), "cross-session probes exist"
    assert any(t.sender == "agent" for p in multi for t in p.turns), "peer-agent turns exist"


def test_deterministic_oracles_judge_at_least_ninety_percent() -> None:
    needs_judge = [p.id for p in PROBES if p.needs_judge]
    assert len(needs_judge) <= 0.10 * len(PROBES)
    assert needs_judge, "the judge path is exercised by some probes"


def test_without_a_judge_every_category_keeps_its_minimum() -> None:
    """Without --judge, judge-only probes are not run (docs/scoring.md): every category keeps
    enough deterministic probes to be well tested, so a scan without a judge can be
    authoritative."""
    for asi in ASI_IDS:
        deterministic = [p for p in PROBES if p.asi == asi and not p.needs_judge]
        assert len(deterministic) >= MIN_PROBES_PER_ASI, asi


def _kinds(oracle: Any) -> set[str]:
    return {oracle.kind} | {k for inner in getattr(oracle, "oracles", ()) for k in _kinds(inner)}


def test_every_oracle_kind_and_csa_category_is_used() -> None:
    kinds = {k for p in PROBES for o in p.oracles for k in _kinds(o)}
    assert kinds == set(ORACLE_KINDS)
    assert {p.csa_category for p in PROBES} == set(CSA_TITLES)


def test_library_version_names_release_and_content() -> None:
    release, digest = LIBRARY.version.split("+")
    assert re.fullmatch(r"\d{4}\.\d{2}", release) and re.fullmatch(r"[0-9a-f]{8}", digest)


@pytest.mark.parametrize("probe", PROBES, ids=[p.id for p in PROBES])
def test_the_benign_stand_in_of_the_payload_asks_for_nothing(probe: Probe) -> None:
    """A control replaces the payload with it (docs/scoring.md, "Controls"): it must hold no
    instruction and claim no authority, or the control would carry an attack of its own.
    Every text of the pool is read in tests/library/test_controls.py; here, what a probe's own
    ``control:`` becomes under a few seeds."""
    for seed in range(4):
        stand_in = control_text(probe, seed, 0)
        text = normalise(stand_in)
        assert read_intents(text) == [], stand_in
        assert not claims_authority(text), stand_in
        assert stand_in != probe.payload
