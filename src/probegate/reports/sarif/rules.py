"""SARIF rules: one per probe, keyed by an id that survives a new probe version.

A probe id ends in its version (``asi01.direct-system-prompt-leak.v1``). GitHub keys alerts on
the rule id, so the rule id is the probe id without that suffix: bumping a probe to ``.v2``
keeps its alerts open rather than closing them and opening new ones. ``helpUri`` points at the
probe's section of docs/probes.md, whose version-less anchor is this same id. Each rule carries
what code scanning shows: short and full descriptions, help, ``security-severity`` and at most
ten tags, and links into the three taxonomies (``run.taxonomies``) by index.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable
from typing import Any

from probegate import DOCS_URL
from probegate.models.probe import stable_id, version_of
from probegate.models.report import Finding
from probegate.models.taxonomy import (
    ASI_TITLES,
    CSA_TITLES,
    OWASP_LLM_TITLES,
    SEVERITY_RANK,
    Severity,
)
from probegate.reports.escape import clean_text, md_code, md_text, sarif_text, truncate
from probegate.reports.sarif.omjson import Shared, node

DESCRIPTION_MAX = 1024  # GitHub's limit for short and full descriptions
MAX_TAGS = 10  # GitHub's recommendation (20 is the hard cap)

# SARIF taxonomies (name, organization, version, {id: title}); rules point into them by
# index. MITRE ATLAS is a tag only: its names live in the probe library's data, not here.
TAXONOMIES: tuple[tuple[str, str, str, dict[str, str]], ...] = (
    ("OWASP Top 10 for Agentic Applications", "OWASP", "2026", ASI_TITLES),
    ("OWASP Top 10 for LLM Applications", "OWASP", "2025", OWASP_LLM_TITLES),
    ("CSA Agentic AI Red Teaming Guide", "Cloud Security Alliance", "2025", CSA_TITLES),
)
_WORDS = re.compile(r"[A-Za-z0-9]+")  # the words of a rule's PascalCase name
_TAXON_INDEX: dict[tuple[int, str], int] = {
    (t, taxon): i for t, entry in enumerate(TAXONOMIES) for i, taxon in enumerate(entry[3])
}

LEVELS: dict[Severity, str] = {
    Severity.CRITICAL: "error",
    Severity.HIGH: "error",
    Severity.MEDIUM: "warning",
    Severity.LOW: "note",
}


def help_uri(probe_id: str) -> str:
    """The probe's section of docs/probes.md (its anchor is the version-less id)."""
    return f"{DOCS_URL}probes.md#{stable_id(probe_id)}"


def rule(stable_id: str, findings: list[Finding], shared: Shared) -> dict[str, Any]:
    """The rule for every finding of one probe (normally one; more after a version bump)."""
    if len(findings) == 1:  # one probe version, as in nearly every rule: nothing to pick
        latest = findings[0]
        worst, score, precise = latest.severity, latest.aivss_severity, latest.confidence >= 0.9
        llm, atlas = _unique(latest.owasp_llm), _unique(latest.mitre_atlas)
    else:
        latest = max(findings, key=lambda f: (version_of(f.probe_id), f.probe_id))
        worst = max(findings, key=lambda f: SEVERITY_RANK[f.severity]).severity
        score = max(f.aivss_severity for f in findings)
        precise = min(f.confidence for f in findings) >= 0.9
        llm = _unique(x for f in findings for x in f.owasp_llm)
        atlas = _unique(x for f in findings for x in f.mitre_atlas)
    asi_title = ASI_TITLES.get(latest.asi, latest.asi)
    name = clean_text(latest.name) or stable_id
    remediation = clean_text(latest.remediation)
    asi, csa, llm_ids, atlas_ids = latest.asi, latest.csa_category, tuple(llm), tuple(atlas)

    mapping, table, mapping_plain = _mapping(asi, llm_ids, atlas_ids, csa)
    channel = latest.channel.replace("_", " ")
    full = (
        f"{name}: an attack through the {channel} channel that the "
        f"agent followed. Maps to {mapping}."
    )
    help_text = (
        f"{remediation}\n\nProbe {latest.probe_id} ({latest.asi} {asi_title}). Mapping: "
        f"{mapping}. Scan again after a fix: the alert closes when the probe no "
        "longer succeeds (its fingerprint depends on the probe alone)."
    )
    short = sarif_text(name)
    # The two long texts are mostly the mapping, which a scan's rules share: when every part
    # they are made of is plain SARIF text (the mapping's is known once per mapping), so is
    # the whole (:func:`_plain`), and it is not read again character by character.
    if not (mapping_plain and _plain(short, name) and _plain(sarif_text(channel), channel)):
        full = sarif_text(full)
    # (The mapping's line holds "{asi} {asi_title}" itself: it answers for that part too.)
    if not (
        mapping_plain
        and _plain(sarif_text(remediation), remediation)
        and _plain(sarif_text(latest.probe_id), latest.probe_id)
    ):
        help_text = sarif_text(help_text)
    help_md = "\n".join(
        [
            f"**{md_text(name)}** ({md_code(latest.probe_id)})",
            "",
            "**Remediation:** " + md_text(remediation),
            "",
            table,
        ]
    )
    # Written straight under the schema's names (the ten thousand rules of a large scan made
    # this the SARIF emitter's busiest function): every value here is set, none is a sarif-om
    # default, and a misspelt name is refused by the schema, which allows no other property
    # on a rule or a message. The shared parts are one object per document (:class:`Shared`).
    descriptor: dict[str, Any] = {
        "id": stable_id,
        "name": _pascal(name),
        "shortDescription": {"text": sentence(truncate(short, DESCRIPTION_MAX - 1))},
        "fullDescription": {"text": sentence(truncate(full, DESCRIPTION_MAX - 1))},
        "help": {"text": help_text, "markdown": help_md},
        "helpUri": help_uri(latest.probe_id),
        "defaultConfiguration": shared.get(_configuration, LEVELS[worst]),
    }
    relationships = shared.get(_relationships, asi, llm_ids, csa)
    if relationships:
        descriptor["relationships"] = relationships
    # Every entry is a field of the finding's model typed as JSON text or a list of it.
    descriptor["properties"] = {
        "tags": shared.get(_tags, asi, llm_ids, atlas_ids, csa),
        "security-severity": severity_string(score),
        "precision": "very-high" if precise else "high",
        "probe_id": latest.probe_id,
        "asi": asi,
        "csa": csa,
        "mitre_atlas": atlas,
        "owasp_llm": llm,
        "channel": latest.channel,
    }
    return descriptor


# Probes of one category share their mapping: a scan of thousands of probes has a few dozen.
@functools.lru_cache(maxsize=1024)
def _mapping(
    asi: str, llm: tuple[str, ...], atlas: tuple[str, ...], csa: str
) -> tuple[str, str, bool]:
    """A rule's taxonomy mapping: as one line for its text, as a Markdown table for its help,
    and whether the line is plain SARIF text (:func:`_plain`)."""
    asi_title = ASI_TITLES.get(asi, asi)
    csa_title = CSA_TITLES.get(csa, csa)
    mapping = [
        f"OWASP Agentic {asi} {asi_title}",
        *(f"OWASP LLM {_llm(x)}" for x in llm),
        *(f"MITRE ATLAS {x}" for x in atlas),
        f"CSA {csa_title}",
    ]
    table = [
        "| Taxonomy | Id |",
        "|---|---|",
        f"| OWASP Top 10 for Agentic Applications | {md_text(f'{asi} {asi_title}')} |",
        *(f"| OWASP Top 10 for LLM Applications | {md_text(_llm(x))} |" for x in llm),
        *(f"| MITRE ATLAS | {md_text(x)} |" for x in atlas),
        f"| CSA Agentic AI Red Teaming | {md_text(csa_title)} |",
    ]
    line = "; ".join(mapping)
    return line, "\n".join(table), _plain(sarif_text(line), line)


def _plain(escaped: str, text: str) -> bool:
    """Whether ``text``, which :func:`sarif_text` made ``escaped``, was plain SARIF text.

    sarif_text changes a text exactly when it holds one of the characters it drops or escapes
    (a control, a bracket, a backslash): each is dropped or gains a backslash, so the text
    cannot come out equal. A text made of plain parts holds none of them either, so
    sarif_text leaves it as it is: the parts answer for the whole. (A test holds the texts of
    rules made of hostile parts equal to sarif_text of the whole.)
    """
    return escaped == text


def taxonomies() -> list[dict[str, Any]]:
    """``run.taxonomies``: every taxon of the three taxonomies the rules link into."""
    return [_taxonomy(*entry) for entry in TAXONOMIES]


def supported_taxonomies() -> list[dict[str, Any]]:
    return [
        node("ToolComponentReference", name=name, index=i)
        for i, (name, _org, _version, _taxa) in enumerate(TAXONOMIES)
    ]


def _taxonomy(name: str, organization: str, version: str, taxa: dict[str, str]) -> Any:
    return node(
        "ToolComponent",
        name=name,
        organization=organization,
        version=version,
        taxa=[
            node(
                "ReportingDescriptor",
                id=taxon,
                name=title,
                short_description=node("MultiformatMessageString", text=title),
            )
            for taxon, title in taxa.items()
        ],
    )


def _relationships(asi: str, llm: tuple[str, ...], csa: str) -> list[Any]:
    """Links from a rule to its taxa; ids the taxonomies do not know are left to the tags.
    Rules of one mapping share the list: one per document (:class:`Shared`)."""
    wanted = [(0, asi), *((1, x) for x in llm), (2, csa)]
    return [rel for t, taxon in wanted if (rel := _relationship(t, taxon)) is not None]


def _relationship(taxonomy: int, taxon: str) -> Any:
    """The link to one taxon."""
    index = _TAXON_INDEX.get((taxonomy, taxon))
    if index is None:
        return None
    return node(
        "ReportingDescriptorRelationship",
        target=node(
            "ReportingDescriptorReference",
            id=taxon,
            index=index,
            tool_component=node(
                "ToolComponentReference", name=TAXONOMIES[taxonomy][0], index=taxonomy
            ),
        ),
        kinds=["subset"],  # a probe is one case of its category
    )


def _configuration(level: str) -> Any:
    return node("ReportingConfiguration", level=level)


def _llm(llm_id: str) -> str:
    return f"{llm_id} {OWASP_LLM_TITLES.get(llm_id, '')}".rstrip()


def _tags(asi: str, llm: tuple[str, ...], atlas: tuple[str, ...], csa: str) -> list[str]:
    """At most ten tags; ``security`` (which makes GitHub read security-severity), the ASI
    category and the CSA category always survive, LLM and ATLAS ids fill the rest. Rules of
    one mapping share the list: one per document (:class:`Shared`)."""
    optional = [f"owasp-llm/{x.lower()}" for x in llm] + [f"mitre-atlas/{x.lower()}" for x in atlas]
    room = MAX_TAGS - 3
    return ["security", f"owasp-agentic/{asi.lower()}", *optional[:room], f"csa/{csa}"]


def severity_string(score: float) -> str:
    """GitHub's ``security-severity``: a decimal string, 0.0-10.0, one decimal."""
    return f"{min(max(score, 0.0), 10.0):.1f}"


def _unique(values: Iterable[str]) -> list[str]:
    return sorted(set(values))


def sentence(text: str) -> str:
    """SARIF asks that messages end with a period (SARIF2001); add one when missing."""
    text = text.strip()
    return text if text.endswith((".", "!", "?", "…")) else text + "."


def _pascal(name: str) -> str:
    """A rule's friendly ``name`` in PascalCase, as SARIF recommends (SARIF2012)."""
    words = _WORDS.findall(name)
    return "".join([w[:1].upper() + w[1:] for w in words]) or "Probe"
