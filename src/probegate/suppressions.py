"""Accepted findings: the suppression file, ``.probegate-suppressions.yml`` by default.

A suppression is a team's written decision that one finding (by its ``fp``) is accepted, with a
reason and optionally an expiry date and a ``target``: a glob over the scanned target's
reference (``openai:support-bot@*``, ``http:https://staging.example/*``), so one agent's
accepted risk does not silence the same probe for every other agent scanned from the same
repository. A fingerprint names the probe, not the agent, so it stays the same across targets,
modes and seeds; the scope lives here, in the decision (docs/gating.md). Suppressed findings
stay in every report, marked, so the decision is visible where the finding is; only the gates
ignore them. An expired entry stops hiding its finding (it counts again and is reported), and
an entry that matches nothing is reported as stale so the file does not silently rot.

The file is untrusted input: it is parsed once here into validated models, and any problem is a
:class:`~probegate.errors.UsageError` naming the file and the first problem in one line.
:func:`apply_suppressions` is pure: the date is passed in, so a test (or a replay of an old
scan) decides what "today" is.
"""

from __future__ import annotations

import datetime as dt
import fnmatch
from dataclasses import replace
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from probegate.errors import UsageError
from probegate.files import MAX_YAML_BYTES, parse_yaml, read_text
from probegate.models.report import ScanReport, Suppression
from probegate.validation import first_problem

DEFAULT_SUPPRESSIONS_FILE = Path(".probegate-suppressions.yml")


class SuppressionEntry(BaseModel):
    """One accepted finding. ``expires`` is the last day on which the suppression applies."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    fp: str = Field(min_length=1, pattern=r"^\S+$")
    reason: str = Field(min_length=1)
    expires: dt.date | None = None
    # A glob over the target's reference (report.target.ref); None: every target.
    target: str | None = Field(default=None, min_length=1)

    def applies_to(self, target_ref: str) -> bool:
        return self.target is None or fnmatch.fnmatchcase(target_ref, self.target)

    @field_validator("reason")
    @classmethod
    def _reason_is_not_blank(cls, value: str) -> str:
        # An accepted risk without a reason is exactly what reviewers must be able to reject.
        if not value.strip():
            raise ValueError("reason must not be blank")
        return value.strip()

    @field_validator("expires", mode="before")
    @classmethod
    def _expires_is_a_plain_date(cls, value: Any) -> Any:
        # YAML reads `2027-03-31` as a date and `2027-03-31T10:00` as a datetime; pydantic would
        # also take an int as a timestamp. Only a calendar day has one obvious meaning here.
        if value is None or (isinstance(value, dt.date) and not isinstance(value, dt.datetime)):
            return value
        if isinstance(value, str):
            try:
                return dt.date.fromisoformat(value.strip())
            except ValueError:
                pass
        raise ValueError(f"expected a date YYYY-MM-DD, got {value!r}")

    def is_active(self, today: dt.date) -> bool:
        """Active through the ``expires`` day itself; expired from the day after."""
        return self.expires is None or today <= self.expires


class SuppressionFile(BaseModel):
    """The whole file: ``suppressions: [...]``; other top-level keys are refused as typos."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    suppressions: tuple[SuppressionEntry, ...] = ()


def load_suppressions(path: Path | None, *, explicit: bool) -> tuple[SuppressionEntry, ...]:
    """Read and validate a suppression file.

    ``path=None`` means the default file in the working directory. A missing file is no
    suppressions when the path is the default one (most repositories have none) but a usage
    error when the user named it, because then a typo in the path would silently un-accept
    every finding.
    """
    file = DEFAULT_SUPPRESSIONS_FILE if path is None else path
    if not explicit and not file.exists():
        return ()
    text = read_text(file, what="suppression file", max_bytes=MAX_YAML_BYTES)
    return parse_suppressions(text, source=str(file))


def parse_suppressions(text: str, *, source: str) -> tuple[SuppressionEntry, ...]:
    """Validate the YAML text of a suppression file; ``source`` names it in error messages."""
    data = parse_yaml(text, source=source)
    if data is None:
        return ()
    if not isinstance(data, dict):
        raise UsageError(
            f"{source}: expected a mapping with a 'suppressions' list, got {type(data).__name__}"
        )
    try:
        parsed = SuppressionFile.model_validate(data)
    except ValidationError as exc:
        raise UsageError(f"{source}: {_first_problem(exc)}") from None
    seen: set[tuple[str, str | None]] = set()
    for index, entry in enumerate(parsed.suppressions):
        if (entry.fp, entry.target) in seen:
            # Two entries for one finding would make its reason and expiry ambiguous.
            raise UsageError(f"{source}: suppressions[{index}].fp: duplicate fp {entry.fp!r}")
        seen.add((entry.fp, entry.target))
    return parsed.suppressions


def _first_problem(exc: ValidationError) -> str:
    """The first problem, reworded where pydantic's words would not help a YAML author."""
    problem = first_problem(exc)
    reason = problem.reason
    if problem.kind == "extra_forbidden":
        reason = "unknown key (expected suppressions: [{fp, reason, expires, target}])"
    elif problem.kind == "tuple_type":
        reason = "expected a list of {fp, reason, expires} entries"
    elif problem.kind == "string_type" and problem.path.endswith(".fp"):
        # YAML reads an unquoted all-digit fingerprint as a number.
        reason = f"expected a string, got {problem.value!r} (quote the fp)"
    return replace(problem, reason=reason).line("file")


def apply_suppressions(
    report: ScanReport, suppressions: tuple[SuppressionEntry, ...], today: dt.date
) -> ScanReport:
    """Return a copy of ``report`` with its suppression state decided by ``suppressions``.

    The result is authoritative, not additive: markings already in the report are replaced, so
    applying a file twice, or to a stored report whose suppressions have since expired, gives
    the same answer as applying it once to a fresh scan. Expired entries that still match a
    finding are listed in ``expired_suppressions`` (the finding counts again); entries that
    match no finding are listed in ``stale_suppressions``.
    """
    ref = report.target.ref
    # The entries for this target; a scoped entry wins over one for every target.
    mine = [e for e in suppressions if e.applies_to(ref)]
    by_fp = {e.fp: e for e in sorted(mine, key=lambda e: e.target is not None)}
    present = {finding.fp for finding in report.findings}
    findings = []
    for finding in report.findings:
        entry = by_fp.get(finding.fp)
        marking = None
        if entry is not None and entry.is_active(today):
            expires = entry.expires.isoformat() if entry.expires is not None else None
            marking = Suppression(reason=entry.reason, expires=expires)
        if marking != finding.suppressed:
            finding = finding.model_copy(update={"suppressed": marking})
        findings.append(finding)
    expired = sorted({e.fp for e in mine if e.fp in present and not e.is_active(today)})
    # An entry for another target is not stale here: this scan could not have matched it.
    stale = sorted({e.fp for e in mine if e.fp not in present})
    return report.model_copy(
        update={
            "findings": findings,
            "expired_suppressions": expired,
            "stale_suppressions": stale,
        }
    )
