"""Accepted findings: the suppression file, ``.probegate-suppressions.yml`` by default.

A suppression is a team's written decision that one finding (by its ``fp``) is accepted, with a
reason and optionally an expiry date. Suppressed findings stay in every report, marked, so the
decision is visible where the finding is; only the gates ignore them. An expired entry stops
hiding its finding (it counts again and is reported), and an entry that matches nothing is
reported as stale so the file does not silently rot.

The file is untrusted input: it is parsed once here into validated models, and any problem is a
:class:`~probegate.errors.UsageError` naming the file and the first problem in one line.
:func:`apply_suppressions` is pure: the date is passed in, so a test (or a replay of an old
scan) decides what "today" is.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from probegate.errors import UsageError
from probegate.models.report import ScanReport, Suppression

DEFAULT_SUPPRESSIONS_FILE = Path(".probegate-suppressions.yml")


class SuppressionEntry(BaseModel):
    """One accepted finding. ``expires`` is the last day on which the suppression applies."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    fp: str = Field(min_length=1, pattern=r"^\S+$")
    reason: str = Field(min_length=1)
    expires: dt.date | None = None

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
    try:
        text = file.read_text(encoding="utf-8")
    except FileNotFoundError as exc:
        if explicit:
            raise UsageError(f"{file}: suppression file not found") from exc
        return ()
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"{file}: cannot read suppression file: {exc}") from exc
    return parse_suppressions(text, source=str(file))


def parse_suppressions(text: str, *, source: str) -> tuple[SuppressionEntry, ...]:
    """Validate the YAML text of a suppression file; ``source`` names it in error messages."""
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 1})" if mark is not None else ""
        problem = getattr(exc, "problem", None) or "invalid YAML"
        raise UsageError(f"{source}: invalid YAML{where}: {problem}") from exc
    if data is None:
        return ()
    if not isinstance(data, dict):
        raise UsageError(
            f"{source}: expected a mapping with a 'suppressions' list, got {type(data).__name__}"
        )
    try:
        parsed = SuppressionFile.model_validate(data)
    except ValidationError as exc:
        raise UsageError(f"{source}: {_first_problem(exc)}") from exc
    seen: set[str] = set()
    for index, entry in enumerate(parsed.suppressions):
        if entry.fp in seen:
            # Two entries for one finding would make its reason and expiry ambiguous.
            raise UsageError(f"{source}: suppressions[{index}].fp: duplicate fp {entry.fp!r}")
        seen.add(entry.fp)
    return parsed.suppressions


def _first_problem(exc: ValidationError) -> str:
    errors = exc.errors()
    first = errors[0]
    loc = ""
    for part in first["loc"]:
        loc += f"[{part}]" if isinstance(part, int) else (f".{part}" if loc else str(part))
    message = str(first["msg"]).removeprefix("Value error, ")
    if first["type"] == "extra_forbidden":
        message = "unknown key (expected suppressions: [{fp, reason, expires}])"
    elif first["type"] == "tuple_type":
        message = "expected a list of {fp, reason, expires} entries"
    elif first["type"] == "string_type" and first["loc"][-1] == "fp":
        # YAML reads an unquoted all-digit fingerprint as a number.
        message = f"expected a string, got {first['input']!r} (quote the fp)"
    more = f" (and {len(errors) - 1} more problem(s))" if len(errors) > 1 else ""
    return f"{loc or 'file'}: {message}{more}"


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
    by_fp = {entry.fp: entry for entry in suppressions}
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
    expired = sorted(e.fp for e in suppressions if e.fp in present and not e.is_active(today))
    stale = sorted(e.fp for e in suppressions if e.fp not in present)
    return report.model_copy(
        update={
            "findings": findings,
            "expired_suppressions": expired,
            "stale_suppressions": stale,
        }
    )
