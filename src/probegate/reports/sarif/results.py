"""SARIF results: one per finding, at a file of the repository, with probegate's own key.

``partialFingerprints`` carries only :data:`FINGERPRINT_KEY`, the finding's ``fp`` (the same key
the baseline matches on). ``primaryLocationLineHash`` is left to upload-sarif, which computes it
from the file's line whenever the file exists and warns when a SARIF file already carries a
different value. The location is the finding's ``location``: a path relative to the repository
root that the scan checked exists (docs/report-format.md, "SARIF locations").
"""

from __future__ import annotations

import re
import urllib.parse
from typing import Any

from probegate.errors import ReportError
from probegate.models.report import Finding
from probegate.reports.escape import clean_text, sarif_text, truncate
from probegate.reports.sarif.omjson import Shared, node, plain
from probegate.reports.sarif.rules import LEVELS, sentence, severity_string

FINGERPRINT_KEY = "probegateFindingFp/v1"
MESSAGE_MAX = 4000

_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")


def result(finding: Finding, rule_id: str, rule_index: int, shared: Shared) -> dict[str, Any]:
    """The result of one finding, of the rule ``rule_id`` (its probe's :func:`stable_id`).

    Written straight under the schema's names, as a rule is (:func:`.rules.rule`): the schema
    allows no other property on a result or a message, so a misspelt name is refused.
    """
    # The finding's model types every entry as JSON data; None (an optional field left
    # unset) is left out, as a property bag of omjson.plain would leave it.
    properties: dict[str, Any] = {
        "aivss_severity": finding.severity.value,
        "security-severity": severity_string(finding.aivss_severity),
        "probe_id": finding.probe_id,
        "asi": finding.asi,
        "mitre_atlas": list(finding.mitre_atlas),
        "csa": finding.csa_category,
        "owasp_llm": list(finding.owasp_llm),
        "confidence": finding.confidence,
        "success": finding.success,
        "attempt_count": finding.attempt_count,
        "successes": finding.successes,
        "finding_id": finding.id,
        "fp": finding.fp,
        "channel": finding.channel,
    }
    if finding.pov_reference is not None:
        properties["pov_reference"] = finding.pov_reference
    if finding.pov_reliability is not None:
        properties["pov_reliability"] = finding.pov_reliability
    message = sarif_text(finding.summary or f"{finding.name} succeeded against the agent")
    if finding.control is not None:
        properties["control"] = {
            "attempt_id": clean_text(finding.control.attempt_id),
            "outcome": finding.control.outcome,
            "summary": clean_text(finding.control.summary),
        }
        # The causal check, where a reviewer reads the alert: it did not happen without the attack.
        message = f"{sentence(message)} Control: {sarif_text(finding.control.summary)}"
    out: dict[str, Any] = {
        "ruleId": rule_id,
        "ruleIndex": rule_index,
        "level": LEVELS[finding.severity],
        "message": {"text": sentence(truncate(message, MESSAGE_MAX))},
        "locations": [shared.get(_location, finding.location.path, finding.location.line)],
        "partialFingerprints": {FINGERPRINT_KEY: finding.fp},
    }
    if finding.suppressed is not None:
        out["suppressions"] = [
            node(
                "Suppression",
                kind="external",
                justification=clean_text(finding.suppressed.reason) or "suppressed",
                properties=(
                    plain({"expires": finding.suppressed.expires})
                    if finding.suppressed.expires
                    else None
                ),
            )
        ]
    out["properties"] = properties
    return out


def _location(path: str, line: int) -> Any:
    """A file and line of the repository. Findings mostly share a handful (the config and
    prompt files): one object each per document (:class:`Shared`)."""
    return node(
        "Location",
        physical_location=node(
            "PhysicalLocation",
            artifact_location=node("ArtifactLocation", uri=artifact_uri(path)),
            region=node("Region", start_line=line),
        ),
    )


def artifact_uri(path: str) -> str:
    """A finding's repo-relative path as a SARIF ``uri`` GitHub accepts.

    GitHub rejects the whole upload for an empty uri or one whose first segment holds a colon
    (read as a scheme), and an absolute or ``..`` path cannot be a file of the repository, so
    those are :class:`ReportError`; everything else is percent-encoded as a relative reference.
    """
    normalised = path.replace("\\", "/")
    while normalised.startswith("./"):
        normalised = normalised[2:]
    segments = [s for s in normalised.split("/") if s not in ("", ".")]
    if not segments or normalised.startswith("/") or ".." in segments or _SCHEME.match(normalised):
        raise ReportError(
            f"finding location {path!r} is not a repo-relative file path; SARIF for GitHub "
            "needs one (the config, prompt or tool definition file)"
        )
    return urllib.parse.quote("/".join(segments), safe="/-._~!$&'()*+,;=@")
