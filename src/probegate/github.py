"""GitHub Action glue: step outputs, the job summary, annotations, workflow-command escaping.

``entrypoint.sh`` runs the scan; everything that parses JSON or escapes text happens here, typed
and tested, never in bash. Called as ``python -m probegate.github COMMAND``:

``token``
    print an unguessable token for ``::stop-commands::TOKEN`` (agent text is printed only
    between that marker and ``::TOKEN::``, so it cannot issue workflow commands).
``split-args``
    split the ``args`` input (``PG_ARGS``) like a POSIX shell splits words, with no expansion
    of any kind, and write the words NUL-separated for ``mapfile -d ''``.
``check-packages``
    after the ``requirements`` input was installed into its own directory, refuse packages the
    image already has at another version (one interpreter loads one version of a package).
``finish``
    read the scan's files and write the step outputs, the job summary and the annotations, make
    the written files readable by the runner user, and exit with the Action's exit code.

Everything this module prints to stdout or stderr is a workflow command whose data is escaped
(``%``, CR, LF; and ``:``/``,`` in properties), so no line it prints can be read as another
command. Text from the agent or a report file is untrusted: it is cleaned of control
characters first and escaped for wherever it lands (workflow command, Markdown).
"""

from __future__ import annotations

import argparse
import importlib.metadata
import os
import re
import secrets
import shlex
import stat
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, TextIO

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from probegate.reports.diff_markdown import DIFF_HEADING
from probegate.reports.escape import clean_text, md_text, number, truncate

# PRODUCT.md section 2. The Action exits with one of these and publishes it as `exit-code`.
EXIT_PASSED = 0
EXIT_GATE_FAILED = 1
EXIT_USAGE = 2
EXIT_UNDECIDED = 3
EXIT_INTERNAL = 4
EXIT_MEANINGS: dict[int, str] = {
    EXIT_PASSED: "every gate asked for passed",
    EXIT_GATE_FAILED: "a gate failed",
    EXIT_USAGE: "usage or input error",
    EXIT_UNDECIDED: "the gate could not be decided",
    EXIT_INTERNAL: "internal error",
}
# When the scan and the baseline comparison disagree, the more specific failure wins, in the
# same order the scan's own gates use: an error beats a verdict, and a failed gate beats an
# undecided one (a confirmed regression is a fact even when the score cannot be judged).
_EXIT_PRECEDENCE = (EXIT_INTERNAL, EXIT_USAGE, EXIT_GATE_FAILED, EXIT_UNDECIDED, EXIT_PASSED)

SUMMARY_LIMIT = 1024 * 1024  # GitHub's job-summary cap per step, in bytes
ANNOTATIONS_PER_LEVEL = 10  # GitHub shows at most 10 errors, 10 warnings, 10 notices per step
MESSAGE_LIMIT = 2000  # characters of one annotation message
TITLE_LIMIT = 200
LOG_LINES = 10  # gate and error lines of the scan's log quoted in the summary

# The Action owns these flags: it must know where the files are and which formats exist.
RESERVED_FLAGS = ("--output", "--output-dir")
DIFF_JSON = "baseline-diff.json"
DIFF_MD = "baseline-diff.md"
COMMANDS = ("scan", "run")

AnnotationLevel = Literal["error", "warning", "notice"]
_LEVEL_OF_SEVERITY: dict[str, AnnotationLevel] = {
    "critical": "error",
    "high": "error",
    "medium": "warning",
    "low": "notice",
}
_SEVERITY_ORDER = {"critical": 3, "high": 2, "medium": 1, "low": 0}
_OUTPUT_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*")
_UNESCAPE_PROPERTY = re.compile(r"%(25|0D|0A|3A|2C)")
_UNESCAPE_DATA = re.compile(r"%(25|0D|0A)")
_UNESCAPED = {"25": "%", "0D": "\r", "0A": "\n", "3A": ":", "2C": ","}


class ActionError(Exception):
    """A problem with the Action's inputs or environment, explained in one line."""


# --------------------------------------------------------------------------- workflow commands


def escape_data(text: str) -> str:
    """Escape the message of a workflow command (what follows the second ``::``)."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    """Escape a workflow-command property value (``file=``, ``title=``...)."""
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def unescape_data(text: str) -> str:
    """What the runner reads back from :func:`escape_data` (one pass, so ``%250A`` stays)."""
    return _UNESCAPE_DATA.sub(lambda m: _UNESCAPED[m.group(1)], text)


def unescape_property(text: str) -> str:
    """What the runner reads back from :func:`escape_property`."""
    return _UNESCAPE_PROPERTY.sub(lambda m: _UNESCAPED[m.group(1)], text)


def workflow_command(
    name: str, message: str, properties: Mapping[str, str | int | None] | None = None
) -> str:
    """One ``::name k=v,...::message`` line (no newline), every value escaped."""
    props = ",".join(
        f"{key}={escape_property(str(value))}"
        for key, value in (properties or {}).items()
        if value is not None
    )
    head = f"{name} {props}" if props else name
    return f"::{head}::{escape_data(message)}"


def stop_commands_token() -> str:
    """128 random bits: agent text cannot guess the marker that resumes command processing."""
    return secrets.token_hex(16)


# --------------------------------------------------------------------------- step outputs


def output_entry(name: str, value: str) -> str:
    """``name<<DELIM`` / value / ``DELIM``: the form that is safe for any value, newlines included.

    The delimiter is random and checked against the value, so a value cannot end the entry
    early and append outputs of its own.
    """
    if not _OUTPUT_NAME.fullmatch(name):
        raise ValueError(f"invalid output name {name!r}")
    while True:
        delimiter = f"ghadelimiter_{secrets.token_hex(16)}"
        if delimiter not in value:
            return f"{name}<<{delimiter}\n{value}\n{delimiter}\n"


# --------------------------------------------------------------------------- the scan's files


class _View(BaseModel):
    """Only the fields the Action reads; anything else in the file is ignored."""

    model_config = ConfigDict(extra="ignore", frozen=True)


class LocationView(_View):
    path: str
    line: int = 1


class FindingView(_View):
    id: str
    probe_id: str
    name: str = ""
    severity: Literal["critical", "high", "medium", "low"]
    summary: str = ""
    remediation: str = ""
    aivss_severity: float = 0.0
    location: LocationView | None = None
    suppressed: object | None = None

    @property
    def is_suppressed(self) -> bool:
        return self.suppressed is not None and self.suppressed is not False


class AuthorityView(_View):
    authoritative: bool = False
    reasons: list[str] = Field(default_factory=list)


class ScanView(_View):
    """What the Action needs from ``scan.json`` (PRODUCT.md section 6 field names)."""

    scan_id: str = ""
    mode: str = ""
    aivss: int | float
    band: str
    authority: AuthorityView = Field(default_factory=AuthorityView)
    findings: list[FindingView] = Field(default_factory=list)

    @property
    def gated_findings(self) -> list[FindingView]:
        return [f for f in self.findings if not f.is_suppressed]


class ComparisonView(_View):
    """What the Action needs from ``probegate compare --output json``."""

    new: list[object] = Field(default_factory=list)
    regression: bool = False


def load_scan(path: Path) -> ScanView:
    try:
        return ScanView.model_validate_json(path.read_bytes())
    except OSError as exc:
        raise ActionError(f"cannot read {path}: {exc.strerror or exc}") from exc
    except ValidationError as exc:
        raise ActionError(f"{path} is not a probegate scan report: {_first_error(exc)}") from exc


def load_comparison(path: Path) -> ComparisonView:
    try:
        return ComparisonView.model_validate_json(path.read_bytes())
    except OSError as exc:
        raise ActionError(f"cannot read {path}: {exc.strerror or exc}") from exc
    except ValidationError as exc:
        raise ActionError(f"{path} is not a probegate comparison: {_first_error(exc)}") from exc


def _first_error(exc: ValidationError) -> str:
    err = exc.errors()[0]
    loc = ".".join(str(p) for p in err["loc"]) or "document"
    return f"{loc}: {err['msg']}"


# --------------------------------------------------------------------------- paths


def workspace_relative(path: Path, workspace: Path) -> str | None:
    """``path`` relative to the workspace in POSIX form, or None when it lies outside.

    Lexical only (no symlinks resolved): the runner mounts the same workspace at another
    absolute path, so only the relative form means the same file in the next step.
    """
    absolute = Path(os.path.normpath(path if path.is_absolute() else Path.cwd() / path))
    root = Path(os.path.normpath(workspace.absolute()))
    try:
        rel = absolute.relative_to(root)
    except ValueError:
        return None
    return rel.as_posix() if rel.parts else "."


def published_path(path: Path, workspace: Path) -> str:
    """The path later steps can use: workspace-relative when possible, else absolute."""
    rel = workspace_relative(path, workspace)
    return rel if rel is not None else os.path.normpath(path.absolute())


def annotation_file(location: LocationView | None) -> str | None:
    """A finding's location as an annotation ``file``: repo-relative, no ``..``, else None."""
    if location is None:
        return None
    text = clean_text(location.path).strip()
    if not text or "://" in text:
        return None
    posix = Path(text.replace("\\", "/"))
    if posix.is_absolute() or ".." in posix.parts:
        return None
    return posix.as_posix()


# --------------------------------------------------------------------------- annotations


@dataclass(frozen=True)
class Annotation:
    level: AnnotationLevel
    title: str
    message: str
    file: str | None = None
    line: int | None = None

    def command(self) -> str:
        return workflow_command(
            self.level, self.message, {"file": self.file, "line": self.line, "title": self.title}
        )


@dataclass(frozen=True)
class AnnotationPlan:
    shown: list[Annotation]
    totals: dict[AnnotationLevel, int]

    @property
    def hidden(self) -> int:
        return sum(self.totals.values()) - len(self.shown)


def plan_annotations(scan: ScanView, *, per_level: int = ANNOTATIONS_PER_LEVEL) -> AnnotationPlan:
    """The most severe unsuppressed findings, at most ``per_level`` of each annotation level."""
    ordered = sorted(
        scan.gated_findings,
        key=lambda f: (-_SEVERITY_ORDER[f.severity], -f.aivss_severity, f.probe_id, f.id),
    )
    shown: list[Annotation] = []
    totals: dict[AnnotationLevel, int] = {"error": 0, "warning": 0, "notice": 0}
    for finding in ordered:
        level = _LEVEL_OF_SEVERITY[finding.severity]
        totals[level] += 1
        if totals[level] > per_level:
            continue
        title = truncate(
            clean_text(f"probegate {finding.severity}: {finding.name or finding.probe_id}")
            .replace("\n", " ")
            .strip(),
            TITLE_LIMIT,
        )
        parts = [finding.summary.strip()]
        if finding.remediation.strip():
            parts.append("Remediation: " + finding.remediation.strip())
        parts.append(f"Probe {finding.probe_id}, finding {finding.id}.")
        message = truncate(clean_text("\n".join(parts)), MESSAGE_LIMIT)
        file = annotation_file(finding.location)
        line = finding.location.line if file and finding.location else None
        shown.append(Annotation(level, title, message, file, line if line and line > 0 else None))
    return AnnotationPlan(shown, totals)


# --------------------------------------------------------------------------- job summary


def fallback_summary(scan: ScanView, *, max_rows: int = 10) -> str:
    """A compact summary from ``scan.json`` when the Markdown format was not asked for."""
    auth = "yes" if scan.authority.authoritative else "**no**"
    lines = [
        f"## probegate: {md_text(scan.band)} ({number(scan.aivss)}/100)",
        "",
        "| Score (AIVSS) | Band | Mode | Authoritative | Findings |",
        "|---:|---|---|---|---:|",
        f"| **{number(scan.aivss)}** / 100 | {md_text(scan.band)} | {md_text(scan.mode)} "
        f"| {auth} | {len(scan.gated_findings)} |",
        "",
    ]
    for reason in scan.authority.reasons[:10]:
        lines.append(f"- {md_text(reason, limit=300)}")
    if scan.authority.reasons:
        lines.append("")
    findings = sorted(
        scan.gated_findings,
        key=lambda f: (-_SEVERITY_ORDER[f.severity], -f.aivss_severity, f.probe_id, f.id),
    )
    if findings:
        lines += [
            f"### Top findings ({min(max_rows, len(findings))} of {len(findings)})",
            "",
            "| Severity | Finding | Probe | Location |",
            "|---|---|---|---|",
        ]
        for f in findings[:max_rows]:
            where = annotation_file(f.location) or ""
            if where and f.location is not None:
                where = f"{where} line {f.location.line}"
            lines.append(
                f"| {f.severity} | {md_text(f.name or f.summary, limit=160)} "
                f"| {md_text(f.probe_id)} | {md_text(where)} |"
            )
        lines.append("")
    lines.append("Add `md` to the `formats` input for the full Markdown report.")
    return "\n".join(lines) + "\n"


def gate_section(
    code: int,
    *,
    messages: Sequence[str] = (),
    annotations: AnnotationPlan | None = None,
    problems: Sequence[str] = (),
    notices: Sequence[str] = (),
) -> str:
    """The Action's verdict: exit code, the scan's own gate lines, what was left out."""
    verdict = {
        EXIT_PASSED: "passed",
        EXIT_GATE_FAILED: "failed",
        EXIT_UNDECIDED: "undecided",
    }.get(code, "error")
    lines = [
        f"> **probegate gate: {verdict}** (exit code {code}: {EXIT_MEANINGS.get(code, 'unknown')})"
    ]
    for message in list(messages)[:LOG_LINES]:
        lines.append(f"> - {md_text(message, limit=300)}")
    for problem in problems:
        lines.append(f"> - Action: {md_text(problem, limit=300)}")
    for notice in notices:
        lines.append(f"> - {md_text(notice, limit=400)}")
    if annotations is not None and annotations.hidden > 0:
        lines.append(
            f"> - {len(annotations.shown)} of {sum(annotations.totals.values())} findings are "
            "annotated (GitHub shows at most 10 per level); all are in the reports."
        )
    return "\n".join(lines) + "\n\n"


def _fair_shares(sizes: Sequence[int], total: int) -> list[int]:
    """Split ``total`` bytes so small parts keep their size and big parts share the rest."""
    shares = [0] * len(sizes)
    remaining = max(total, 0)
    order = sorted(range(len(sizes)), key=lambda i: sizes[i])
    for rank, index in enumerate(order):
        share = min(sizes[index], remaining // (len(sizes) - rank))
        shares[index] = share
        remaining -= share
    return shares


TRUNCATED_NOTE = (
    "\n\n> *Truncated to fit GitHub's 1 MiB job-summary limit; the full report is in the "
    "output directory.*\n\n"
)


def _cut(text: str, budget: int) -> str:
    """The longest prefix of whole lines that fits in ``budget`` UTF-8 bytes."""
    data = text.encode("utf-8")
    if len(data) <= budget:
        return text
    head = data[: max(budget, 0)].decode("utf-8", errors="ignore")
    newline = head.rfind("\n")
    return head[: newline + 1] if newline >= 0 else ""


def fit_summary(parts: Sequence[str], limit: int) -> tuple[str, bool]:
    """Join ``parts`` within ``limit`` bytes; parts that do not fit are cut at a line end.

    Returns the text and whether anything was cut. The result is never over ``limit``.
    """
    sizes = [len(p.encode("utf-8")) for p in parts]
    if sum(sizes) <= limit:
        return "".join(parts), False
    note = len(TRUNCATED_NOTE.encode("utf-8"))
    shares = _fair_shares(sizes, limit - note * len(parts))
    out: list[str] = []
    for part, size, share in zip(parts, sizes, shares, strict=True):
        out.append(part if size <= share else _cut(part, share) + TRUNCATED_NOTE)
    text = "".join(out)
    return (text if len(text.encode("utf-8")) <= limit else _cut(text, limit)), True


def log_messages(log: Path | None) -> list[str]:
    """The scan's gate verdicts and errors from its log, for the summary (untrusted text)."""
    if log is None:
        return []
    try:
        text = log.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return []
    # `gate NAME: STATUS: reason` lines of the scan, its errors, compare's verdict line.
    keep = ("gate ", "error:", "hint:", "probegate compare:", "probegate run:")
    found: list[str] = []
    for line in text.splitlines():
        line = clean_text(line).strip()
        if line.startswith(keep) and line not in found:
            found.append(line)
    return found[-LOG_LINES:]


# --------------------------------------------------------------------------- args


def split_args(text: str) -> list[str]:
    """The ``args`` input as words: POSIX shell quoting, nothing expanded, nothing run.

    ``'single'`` and ``"double"`` quotes group words and backslash escapes one character, as in
    a shell; ``$VAR``, ``$(...)``, backticks, globs, ``~`` and ``#`` are plain text. The
    Action's own flags (``--output``, ``--output-dir`` and their abbreviations) are refused:
    use the ``formats`` and ``output-dir`` inputs.
    """
    try:
        words = shlex.split(text, comments=False, posix=True)
    except ValueError as exc:
        raise ActionError(f"the args input cannot be split: {exc} (check its quotes)") from exc
    for word in words:
        name = word.split("=", 1)[0]
        if len(name) > 3 and any(flag.startswith(name) for flag in RESERVED_FLAGS):
            raise ActionError(
                f"the args input may not set {name}: use the formats and output-dir inputs"
            )
    return words


# --------------------------------------------------------------------------- agent packages


def _canonical(name: str) -> str:
    """A distribution name as package indexes compare them (PEP 503)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def _versions(paths: Sequence[str]) -> dict[str, str]:
    found: dict[str, str] = {}
    for dist in importlib.metadata.distributions(path=list(paths)):
        name = dist.metadata["Name"]
        if name:  # a broken dist-info has none; the first on the path wins, as for imports
            found.setdefault(_canonical(name), dist.version)
    return found


def package_conflicts(packages: Path, interpreter_path: Sequence[str]) -> list[str]:
    """Packages installed in ``packages`` that the interpreter has at another version.

    The agent's packages are put in front of probegate's for the scan (``PYTHONPATH``), so a
    package in both would be loaded at the agent's version by probegate too. The same version
    is harmless; another version is refused rather than breaking probegate mid-scan.
    """
    own = str(packages.absolute())
    theirs = _versions([own])
    ours = _versions([p for p in interpreter_path if p and os.path.abspath(p) != own])
    return [
        f"{name} {theirs[name]} (the image has {ours[name]})"
        for name in sorted(theirs)
        if name in ours and ours[name] != theirs[name]
    ]


def check_packages(packages: Path) -> None:
    conflicts = package_conflicts(packages, sys.path)
    if conflicts:
        raise ActionError(
            "the requirements input pins packages probegate itself uses, at other versions: "
            + ", ".join(conflicts)
            + ". Pin the image's versions (requirements/image.txt of this release) in your lock"
        )


# --------------------------------------------------------------------------- finish


def combine_exit_codes(*codes: int | None) -> int:
    """The Action's exit code from the scan's and the comparison's (None = not run)."""
    known = [c if c in EXIT_MEANINGS else EXIT_INTERNAL for c in codes if c is not None]
    if not known:
        return EXIT_INTERNAL
    return min(known, key=_EXIT_PRECEDENCE.index)


def make_readable(root: Path) -> None:
    """a+r on files and a+rx on directories under ``root``: the container writes as root.

    Symlinks are neither followed nor changed, so nothing outside ``root`` is touched.
    """
    if root.is_symlink() or not root.exists():
        return
    paths = [root]
    if root.is_dir():
        for base, dirs, files in os.walk(root, followlinks=False):
            paths += [Path(base, name) for name in (*dirs, *files)]
    for path in paths:
        mode = path.lstat().st_mode
        if stat.S_ISLNK(mode):
            continue
        extra = 0o555 if stat.S_ISDIR(mode) else 0o444
        if stat.S_IMODE(mode) & extra != extra:
            path.chmod(stat.S_IMODE(mode) | extra)


@dataclass(frozen=True)
class FinishOptions:
    scan_rc: int
    compare_rc: int | None
    output_dir: Path
    baseline: str = ""
    annotations: bool = True
    job_summary: bool = True
    log: Path | None = None
    since: Path | None = None
    input_error: str = ""
    store: Path = Path(".probegate")
    command: str = "scan"
    missing_baseline: str = ""


def _fresh(path: Path, since: Path | None) -> bool:
    """The file exists and was written by this run (not left over from an earlier step)."""
    try:
        written = path.stat().st_mtime_ns
    except OSError:
        return False
    if since is None:
        return True
    try:
        # Strictly newer: file times tick coarsely, so a file left by an earlier step can share
        # the marker's time stamp; a real scan always takes longer than one tick.
        return written > since.stat().st_mtime_ns
    except OSError:
        return True


def finish(opts: FinishOptions, env: Mapping[str, str], out: TextIO) -> int:
    """Publish the run and return the Action's exit code. Prints only workflow commands."""
    workspace = Path(env.get("GITHUB_WORKSPACE") or Path.cwd())
    problems: list[str] = []  # the Action could not do its job: exit 4 unless already failing
    notes: list[str] = []  # worth a warning, not a failure
    if opts.input_error:
        out.write(workflow_command("error", opts.input_error, {"title": "probegate inputs"}) + "\n")
    if opts.missing_baseline:
        out.write(
            workflow_command(
                "notice",
                missing_baseline_note(opts.missing_baseline),
                {"title": "probegate baseline"},
            )
            + "\n"
        )

    files: dict[str, Path] = {}
    for key, name in (
        ("json", "scan.json"),
        ("sarif", "scan.sarif"),
        ("junit", "junit.xml"),
        ("md", "summary.md"),
        ("diff_json", DIFF_JSON),
        ("diff_md", DIFF_MD),
    ):
        path = opts.output_dir / name
        if _fresh(path, opts.since):
            files[key] = path

    scan: ScanView | None = None
    if "json" in files:
        try:
            scan = load_scan(files["json"])
        except ActionError as exc:
            problems.append(str(exc))
    elif opts.command == "scan" and opts.scan_rc in (EXIT_PASSED, EXIT_GATE_FAILED, EXIT_UNDECIDED):
        notes.append(f"the scan wrote no {opts.output_dir / 'scan.json'} (was --dry-run given?)")

    comparison: ComparisonView | None = None
    if opts.baseline and "diff_json" in files:
        try:
            comparison = load_comparison(files["diff_json"])
        except ActionError as exc:
            problems.append(str(exc))

    code = combine_exit_codes(opts.scan_rc, opts.compare_rc)
    if problems and code == EXIT_PASSED:
        code = EXIT_INTERNAL  # a run the Action could not read is never green
    plan = plan_annotations(scan) if scan is not None and opts.annotations else None
    if workspace_relative(opts.output_dir, workspace) is None:
        notes.append(
            f"output-dir {opts.output_dir} is outside the workspace {workspace}: "
            "later steps cannot read the reports"
        )

    for root in (opts.output_dir, opts.store):
        try:
            make_readable(root)
        except OSError as exc:
            notes.append(f"cannot make {root} readable: {exc.strerror or exc}")

    summary_path = env.get("GITHUB_STEP_SUMMARY")
    if opts.job_summary and summary_path:
        try:
            _append_summary(Path(summary_path), opts, files, scan, code, plan, problems)
        except OSError as exc:
            problems.append(f"cannot write the job summary: {exc.strerror or exc}")
            if code == EXIT_PASSED:
                code = EXIT_INTERNAL

    outputs = {
        "json-path": published_path(files["json"], workspace) if "json" in files else "",
        "sarif-path": published_path(files["sarif"], workspace) if "sarif" in files else "",
        "summary-path": published_path(files["md"], workspace) if "md" in files else "",
        "junit-path": published_path(files["junit"], workspace) if "junit" in files else "",
        "score": number(scan.aivss) if scan else "",
        "band": scan.band if scan else "",
        "authoritative": ("true" if scan.authority.authoritative else "false") if scan else "",
        "findings": str(len(scan.gated_findings)) if scan else "",
        "new-findings": _new_findings(opts, scan, comparison),
        "exit-code": str(code),
    }
    output_path = env.get("GITHUB_OUTPUT")
    if output_path:
        try:
            with open(output_path, "a", encoding="utf-8") as handle:
                handle.write("".join(output_entry(k, v) for k, v in outputs.items()))
        except OSError as exc:
            problems.append(f"cannot write the step outputs: {exc.strerror or exc}")
            if code == EXIT_PASSED:
                code = EXIT_INTERNAL

    if plan is not None:
        for annotation in plan.shown:
            out.write(annotation.command() + "\n")
    for note in notes:
        out.write(workflow_command("warning", note, {"title": "probegate action"}) + "\n")
    for problem in problems:
        out.write(workflow_command("error", problem, {"title": "probegate action"}) + "\n")
    out.flush()
    return code


def missing_baseline_note(path: str) -> str:
    """Why a first run without a baseline file is green, and how to get one."""
    return (
        f"no baseline file at {path} yet: this run has no baseline gate and every finding "
        "counts as new. Commit a scan.json there (probegate compare BASELINE CURRENT "
        "--write-baseline FILE) or keep main's scan as an artifact (docs/github-action.md)."
    )


def _new_findings(
    opts: FinishOptions, scan: ScanView | None, comparison: ComparisonView | None
) -> str:
    """New against the baseline; with no baseline, every unsuppressed finding is new."""
    if opts.baseline:
        return str(len(comparison.new)) if comparison is not None else ""
    return str(len(scan.gated_findings)) if scan is not None else ""


def _append_summary(
    path: Path,
    opts: FinishOptions,
    files: Mapping[str, Path],
    scan: ScanView | None,
    code: int,
    plan: AnnotationPlan | None,
    problems: Sequence[str],
) -> None:
    parts = [
        gate_section(
            code,
            messages=log_messages(opts.log),
            annotations=plan,
            problems=[*([opts.input_error] if opts.input_error else []), *problems],
            notices=[missing_baseline_note(opts.missing_baseline)] if opts.missing_baseline else [],
        )
    ]
    summary_has_diff = False
    if "md" in files:
        summary = files["md"].read_text(encoding="utf-8", errors="replace")
        summary_has_diff = DIFF_HEADING in summary
        parts.append(summary.rstrip() + "\n\n")
    elif scan is not None:
        parts.append(fallback_summary(scan) + "\n")
    if opts.baseline and not summary_has_diff:
        if "diff_md" in files:
            diff = files["diff_md"].read_text(encoding="utf-8", errors="replace")
            parts.append(diff.rstrip() + "\n\n")
        else:
            parts.append(
                "> The comparison with the baseline did not run or failed; see the log.\n\n"
            )
    try:
        used = path.stat().st_size
    except OSError:
        used = 0
    text, _ = fit_summary(parts, SUMMARY_LIMIT - used)
    with open(path, "a", encoding="utf-8") as handle:
        handle.write(text)


# --------------------------------------------------------------------------- command line


def _bool(value: str) -> bool:
    lowered = value.strip().lower()
    if lowered in ("true", "1", "yes"):
        return True
    if lowered in ("false", "0", "no", ""):
        return False
    raise argparse.ArgumentTypeError(f"expected true or false, got {value!r}")


def _optional_int(value: str) -> int | None:
    return int(value) if value.strip() else None


class _ParseError(Exception):
    """Bad arguments from the entrypoint: a bug in the Action, not in the user's inputs."""


class _Parser(argparse.ArgumentParser):
    # argparse would print the offending value as plain text; raise so it is printed escaped.
    def error(self, message: str) -> None:  # type: ignore[override]
        raise _ParseError(f"{self.prog}: {message}")


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="python -m probegate.github")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    sub.add_parser("token", help="print a token for ::stop-commands::")
    a = sub.add_parser("split-args", help="split $PG_ARGS into NUL-separated words")
    a.add_argument("--error-file", type=Path, default=None, help="write a bad input's error here")
    c = sub.add_parser("check-packages", help="refuse agent packages that clash with the image")
    c.add_argument("--packages", type=Path, required=True)
    c.add_argument("--error-file", type=Path, default=None, help="write the refusal here")
    f = sub.add_parser("finish", help="write outputs, summary and annotations")
    f.add_argument("--scan-rc", type=int, required=True)
    f.add_argument("--compare-rc", type=_optional_int, default=None)
    f.add_argument("--output-dir", type=Path, required=True)
    f.add_argument("--baseline", default="")
    f.add_argument("--annotations", type=_bool, default=True)
    f.add_argument("--job-summary", type=_bool, default=True)
    f.add_argument("--log", type=Path, default=None)
    f.add_argument("--since", type=Path, default=None)
    f.add_argument("--input-error", default="")
    f.add_argument("--store", type=Path, default=Path(".probegate"))
    f.add_argument("--result-file", type=Path, default=None, help="write the exit code here too")
    f.add_argument("--command", dest="probegate_command", choices=COMMANDS, default="scan")
    f.add_argument("--missing-baseline", default="")
    return parser


def main(argv: Sequence[str] | None = None, env: Mapping[str, str] | None = None) -> int:
    environ = os.environ if env is None else env
    try:
        args = _parser().parse_args(argv)
        if args.command == "token":
            print(stop_commands_token())
            return 0
        if args.command == "split-args":
            try:
                words = split_args(environ.get("PG_ARGS", ""))
            except ActionError as exc:
                if args.error_file is None:
                    raise
                # Plain text for the entrypoint, which hands it to `finish` to print escaped.
                args.error_file.write_text(str(exc), encoding="utf-8")
                return EXIT_USAGE
            sys.stdout.buffer.write(b"".join(w.encode("utf-8") + b"\0" for w in words))
            sys.stdout.flush()
            return 0
        if args.command == "check-packages":
            try:
                check_packages(args.packages)
            except ActionError as exc:
                if args.error_file is None:
                    raise
                args.error_file.write_text(str(exc), encoding="utf-8")
                return EXIT_USAGE
            return 0
        options = FinishOptions(
            scan_rc=args.scan_rc,
            compare_rc=args.compare_rc,
            output_dir=args.output_dir,
            baseline=args.baseline,
            annotations=args.annotations,
            job_summary=args.job_summary,
            log=args.log,
            since=args.since,
            input_error=args.input_error,
            store=args.store,
            command=args.probegate_command,
            missing_baseline=args.missing_baseline,
        )
        code = finish(options, environ, sys.stdout)
        if args.result_file is not None:
            # An interpreter that dies exits 1, which reads like "gate failed"; the entrypoint
            # trusts this file instead of the process status.
            args.result_file.write_text(f"{code}\n", encoding="utf-8")
        return code
    except ActionError as exc:
        # Inputs are echoed back here, so the message goes out escaped, as a command.
        print(workflow_command("error", str(exc), {"title": "probegate inputs"}), file=sys.stderr)
        return EXIT_USAGE
    except Exception as exc:  # _ParseError included: only the entrypoint calls this module
        message = f"internal error in the Action: {type(exc).__name__}: {exc}"
        print(workflow_command("error", message, {"title": "probegate action"}), file=sys.stderr)
        return EXIT_INTERNAL


if __name__ == "__main__":
    sys.exit(main())
