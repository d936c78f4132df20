"""The taxonomies probegate maps to, as closed vocabularies.

Ids and titles are the official ones (``shared/reference/taxonomies.md``); tests check them
against the bundled data so a typo cannot ship. MITRE ATLAS ids are validated against the
bundled ``ATLAS.yaml`` by the library loader's contract test, not here, because loading that
file costs more than a CLI start should.
"""

from __future__ import annotations

import re
from enum import StrEnum
from typing import Annotated

from pydantic import AfterValidator


class Severity(StrEnum):
    """Finding severity; ordered by :data:`SEVERITY_RANK`."""

    CRITICAL = "critical"
    HIGH = "high"
    MEDIUM = "medium"
    LOW = "low"


SEVERITY_RANK: dict[Severity, int] = {
    Severity.LOW: 1,
    Severity.MEDIUM: 2,
    Severity.HIGH: 3,
    Severity.CRITICAL: 4,
}

ASI_TITLES: dict[str, str] = {
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
ASI_IDS: tuple[str, ...] = tuple(ASI_TITLES)


def unknown_asi(text: str) -> str:
    """The message for a category that is not one: ``ASI1`` meant ``ASI01`` (by its number,
    which spelling distance would take for ``ASI10``), else no guess."""
    match = re.fullmatch(r"(?i)\s*(?:asi|llm)?\s*0*(\d{1,2})\s*", text)
    meant = f"ASI{int(match.group(1)):02d}" if match else ""
    hint = f" (did you mean {meant!r}?)" if meant in ASI_IDS else ""
    return f"unknown ASI category {text!r}{hint} (ASI01..ASI10)"


def known_asi(value: str) -> str:
    """``value`` if it is an ASI id: a stored report is read with the ids scoring keys on, so a
    forged one is refused at read (exit 2), not a crash when a merge scores it."""
    if value not in ASI_TITLES:
        raise ValueError(f"not an ASI category (ASI01..ASI10): {value[:40]!r}")
    return value


AsiId = Annotated[str, AfterValidator(known_asi)]

OWASP_LLM_TITLES: dict[str, str] = {
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

# CSA Agentic AI Red Teaming Guide, the twelve threat categories, in the long kebab-case form
# (stable forever: it is a baseline and SARIF tag key).
CSA_TITLES: dict[str, str] = {
    "agent-authorization-and-control-hijacking": "Agent Authorization and Control Hijacking",
    "checker-out-of-the-loop": "Checker-Out-of-the-Loop",
    "agent-critical-system-interaction": "Agent Critical System Interaction",
    "agent-goal-and-instruction-manipulation": "Agent Goal and Instruction Manipulation",
    "agent-hallucination-exploitation": "Agent Hallucination Exploitation",
    "agent-impact-chain-and-blast-radius": "Agent Impact Chain and Blast Radius",
    "agent-knowledge-base-poisoning": "Agent Knowledge Base Poisoning",
    "agent-memory-and-context-manipulation": "Agent Memory and Context Manipulation",
    "agent-orchestration-and-multi-agent-exploitation": (
        "Agent Orchestration and Multi-Agent Exploitation"
    ),
    "agent-resource-and-service-exhaustion": "Agent Resource and Service Exhaustion",
    "agent-supply-chain-and-dependency-attacks": "Agent Supply Chain and Dependency Attacks",
    "agent-untraceability": "Agent Untraceability",
}


class Channel(StrEnum):
    """Where the attack text reaches the agent: the channels agents really read."""

    USER = "user"
    TOOL_RESULT = "tool_result"
    DOCUMENT = "document"
    MEMORY = "memory"
    AGENT_MESSAGE = "agent_message"
    TOOL_DESCRIPTION = "tool_description"


class Capability(StrEnum):
    """What a tool can do; probes need capabilities, targets declare them."""

    EGRESS = "egress"
    PII_READ = "pii_read"
    FINANCIAL = "financial"
    CODE_EXEC = "code_exec"
    MEMORY_WRITE = "memory_write"
    RETRIEVAL = "retrieval"
    DELEGATION = "delegation"
    DESTRUCTIVE = "destructive"
    PRIVILEGE = "privilege"
