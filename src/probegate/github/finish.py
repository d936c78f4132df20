"""``finish``: read what the run wrote, publish it, and decide the Action's exit code.

The scan's report is read by the one stored-report reader and the baseline comparison by the
same strict reader (:mod:`probegate.models.stored`), so the Action sees exactly what
``probegate report`` and ``compare`` would see. A file this step cannot read is an Action
problem: the run is never green then.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

from probegate.errors import EXIT_LABELS, ExitCode, ReportError
from probegate.github.annotations import AnnotationPlan, gated_findings, plan_annotations
from probegate.github.summary import (
    SUMMARY_LIMIT,
    fallback_summary,
    fit_summary,
    gate_section,
    log_messages,
    missing_baseline_note,
)
from probegate.github.workflow import output_entry, workflow_command
from probegate.models.comparison import Comparison
from probegate.models.report import ScanReport
from probegate.models.stored import load_comparison, load_report
from probegate.reports import FORMATS, FormatName
from probegate.reports.diff_markdown import DIFF_HEADING
from probegate.reports.escape import md_text
from probegate.reports.headline import score_text

DIFF_JSON = "baseline-diff.json"
DIFF_MD = "baseline-diff.md"
# When the scan and the baseline comparison disagree, the more specific failure wins, in the
# same order the scan's own gates use: an error beats a decision, and a failed gate beats an
# undecided one (a confirmed regression is a fact even when the score cannot be judged).
_EXIT_PRECEDENCE = (
    ExitCode.INTERNAL,
    ExitCode.USAGE,
    ExitCode.GATE_FAILED,
    ExitCode.UNDECIDED,
    ExitCode.PASSED,
)


# The formats whose files the Action reads back and hands on as step outputs (action.yml).
PUBLISHED_FORMATS = (FormatName.JSON, FormatName.SARIF, FormatName.JUNIT, FormatName.MD)

# A scan stopped by Ctrl-C or SIGTERM (a cancelled job): no gate decided, and the Action says so
# with the scan's own code rather than an internal error.
CANCELLED = (ExitCode.INTERRUPTED, ExitCode.TERMINATED)


def combine_exit_codes(*codes: int | None) -> int:
    """The Action's exit code from the scan's and the comparison's (None = not run)."""
    if codes and codes[0] in CANCELLED:
        return ExitCode(codes[0])
    known = [c if c in EXIT_LABELS else ExitCode.INTERNAL for c in codes if c is not None]
    if not known:
        return ExitCode.INTERNAL
    return min(known, key=_EXIT_PRECEDENCE.index)


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


def hand_over(root: Path, since: Path | None, owner: tuple[int, int]) -> int:
    """Give what this run wrote under ``root`` to ``owner`` (uid, gid); how many were changed.

    The container writes as root and the job's later steps run as the runner's user, who owns
    the workspace. Files and directories this process owns and wrote after ``since`` change
    owner and keep their modes, so a 0600 journal stays readable by that user alone. Nothing
    else is touched: no file that was there before (a key committed 0600 stays as it was), no
    symlink, nothing a symlink leads to.
    """
    if os.geteuid() == owner[0] or root.is_symlink() or not root.is_dir():
        return 0
    me = os.geteuid()
    paths = [root]
    for base, dirs, files in os.walk(root, followlinks=False):
        paths += [Path(base, name) for name in (*dirs, *files)]
    changed = 0
    for path in paths:
        info = path.lstat()
        if stat.S_ISLNK(info.st_mode) or info.st_uid != me or not _written_since(info, since):
            continue
        os.chown(path, *owner, follow_symlinks=False)
        changed += 1
    return changed


def workspace_owner(workspace: Path) -> tuple[int, int] | None:
    try:
        info = workspace.stat()
    except OSError:
        return None
    return info.st_uid, info.st_gid


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
    # Why nothing ran (a fork's pull request): a notice, exit 0, skipped=true.
    skipped: str = ""
    # Notices about the inputs (a deprecated one), shown in the log and the summary.
    notices: tuple[str, ...] = ()


def _fresh(path: Path, since: Path | None) -> bool:
    """A regular file written by this run (not left over from an earlier step).

    A symlink is never fresh, whatever it points to: a committed ``summary.md`` leading to
    ``/proc/self/environ`` must not be published as the summary.
    """
    try:
        info = path.lstat()
    except OSError:
        return False
    return stat.S_ISREG(info.st_mode) and _written_since(info, since)


def _written_since(info: os.stat_result, since: Path | None) -> bool:
    if since is None:
        return True
    try:
        # Strictly newer: file times tick coarsely, so a file left by an earlier step can share
        # the marker's time stamp; a real scan always takes longer than one tick.
        return info.st_mtime_ns > since.stat().st_mtime_ns
    except OSError:
        return True


def finish(opts: FinishOptions, env: Mapping[str, str], out: TextIO) -> int:
    """Publish the run and return the Action's exit code. Prints only workflow commands."""
    workspace = Path(env.get("GITHUB_WORKSPACE") or Path.cwd())
    _announce_inputs(opts, out)
    if opts.skipped and not opts.input_error:
        return _skip(opts, env, out)
    run = _read_run(opts)
    code = combine_exit_codes(opts.scan_rc, opts.compare_rc)
    if run.problems and code == ExitCode.PASSED:
        code = ExitCode.INTERNAL  # a run the Action could not read is never green
    scan = run.scan
    plan = plan_annotations(scan) if scan is not None and opts.annotations else None
    if workspace_relative(opts.output_dir, workspace) is None:
        run.notes.append(
            f"output-dir {opts.output_dir} is outside the workspace {workspace}: "
            "later steps cannot read the reports"
        )
    _hand_over_files(opts, workspace, run.notes)
    summary_path = env.get("GITHUB_STEP_SUMMARY")
    if opts.job_summary and summary_path:
        try:
            _append_summary(Path(summary_path), opts, run.files, scan, code, plan, run.problems)
        except OSError as exc:
            run.problems.append(f"cannot write the job summary: {exc.strerror or exc}")
            code = _failed_if_passing(code)
    problem = _write_outputs(env, _step_outputs(opts, run, code, workspace))
    if problem:
        run.problems.append(problem)
        code = _failed_if_passing(code)
    if plan is not None:
        for annotation in plan.shown:
            out.write(annotation.command() + "\n")
    for note in run.notes:
        out.write(workflow_command("warning", note, {"title": "probegate action"}) + "\n")
    for problem in run.problems:
        out.write(workflow_command("error", problem, {"title": "probegate action"}) + "\n")
    out.flush()
    return code


@dataclass
class _Run:
    """What the run left in the output directory, read back as the Action publishes it."""

    files: dict[str, Path] = field(default_factory=dict)
    scan: ScanReport | None = None
    comparison: Comparison | None = None
    # The Action could not do its job: exit 4 unless already failing.
    problems: list[str] = field(default_factory=list)
    # Worth a warning, not a failure.
    notes: list[str] = field(default_factory=list)


def _announce_inputs(opts: FinishOptions, out: TextIO) -> None:
    """What the inputs step found: an error, a missing baseline, deprecated inputs."""
    if opts.input_error:
        out.write(workflow_command("error", opts.input_error, {"title": "probegate inputs"}) + "\n")
    if opts.missing_baseline and not opts.skipped:  # nothing ran: no baseline to speak of
        note = missing_baseline_note(opts.missing_baseline)
        out.write(workflow_command("notice", note, {"title": "probegate baseline"}) + "\n")
    for notice in opts.notices:
        out.write(workflow_command("notice", notice, {"title": "probegate inputs"}) + "\n")


def _read_run(opts: FinishOptions) -> _Run:
    """The files this run wrote (never one left by an earlier step), and the report and
    comparison in them read by the strict stored-report readers."""
    run = _Run()
    published = [(key, FORMATS[key].filename) for key in PUBLISHED_FORMATS]
    for key, name in (*published, ("diff_json", DIFF_JSON), ("diff_md", DIFF_MD)):
        path = opts.output_dir / name
        if _fresh(path, opts.since):
            run.files[key] = path
    if "json" in run.files:
        try:
            run.scan = load_report(run.files["json"])
        except ReportError as exc:
            run.problems.append(exc.message)
    elif opts.command == "scan" and opts.scan_rc in (
        ExitCode.PASSED,
        ExitCode.GATE_FAILED,
        ExitCode.UNDECIDED,
    ):
        stored = opts.output_dir / FORMATS[FormatName.JSON].filename
        run.notes.append(f"the scan wrote no {stored} (was --dry-run given?)")
    if opts.baseline and "diff_json" in run.files:
        try:
            run.comparison = load_comparison(run.files["diff_json"])
        except ReportError as exc:
            run.problems.append(exc.message)
    return run


def _hand_over_files(opts: FinishOptions, workspace: Path, notes: list[str]) -> None:
    """Give what this run wrote to the workspace's owner (the container runs as root)."""
    owner = workspace_owner(workspace)
    if owner is None:
        return
    for root in (opts.output_dir, opts.store):
        try:
            hand_over(root, opts.since, owner)
        except OSError as exc:
            notes.append(f"cannot hand {root} over to the workspace's owner: {exc.strerror or exc}")


def _step_outputs(opts: FinishOptions, run: _Run, code: int, workspace: Path) -> dict[str, str]:
    """The step's outputs (action.yml), each empty when the run did not produce it."""
    files, scan = run.files, run.scan

    def path_of(key: str) -> str:
        return published_path(files[key], workspace) if key in files else ""

    return {
        "json-path": path_of("json"),
        "sarif-path": path_of("sarif"),
        "summary-path": path_of("md"),
        "junit-path": path_of("junit"),
        "score": score_text(scan.aivss) if scan else "",
        "band": scan.band if scan else "",
        "authoritative": ("true" if scan.authority.authoritative else "false") if scan else "",
        "findings": str(len(gated_findings(scan))) if scan else "",
        "new-findings": _new_findings(opts, scan, run.comparison),
        "skipped": "false",
        "exit-code": str(code),
    }


def _write_outputs(env: Mapping[str, str], outputs: Mapping[str, str]) -> str:
    """Append the step outputs to $GITHUB_OUTPUT; the problem when that fails, else ""."""
    output_path = env.get("GITHUB_OUTPUT")
    if not output_path:
        return ""
    try:
        with open(output_path, "a", encoding="utf-8") as handle:
            handle.write("".join(output_entry(k, v) for k, v in outputs.items()))
    except OSError as exc:
        return f"cannot write the step outputs: {exc.strerror or exc}"
    return ""


def _failed_if_passing(code: int) -> int:
    """A run whose results could not all be published is never green."""
    return ExitCode.INTERNAL if code == ExitCode.PASSED else code


def _skip(opts: FinishOptions, env: Mapping[str, str], out: TextIO) -> int:
    """Nothing ran, on purpose: say why in the log and the summary; green, ``skipped=true``."""
    out.write(workflow_command("notice", opts.skipped, {"title": "probegate"}) + "\n")
    code: int = ExitCode.PASSED
    summary_path = env.get("GITHUB_STEP_SUMMARY")
    if opts.job_summary and summary_path:
        lines = ["> **probegate: skipped** (exit code 0: nothing was scanned)"]
        lines += [f"> - {md_text(note, limit=400)}" for note in (opts.skipped, *opts.notices)]
        text = "\n".join(lines) + "\n\n"
        try:
            with open(summary_path, "a", encoding="utf-8") as handle:
                handle.write(text)
        except OSError as exc:
            out.write(workflow_command("error", f"cannot write the job summary: {exc}") + "\n")
            code = ExitCode.INTERNAL
    outputs = {name: "" for name in _OUTPUTS}
    outputs.update({"skipped": "true", "exit-code": str(code)})
    problem = _write_outputs(env, outputs)
    if problem:
        out.write(workflow_command("error", problem) + "\n")
        code = ExitCode.INTERNAL
    out.flush()
    return code


# Every step output (action.yml's outputs), in the order they are written.
_OUTPUTS = (
    "json-path",
    "sarif-path",
    "summary-path",
    "junit-path",
    "score",
    "band",
    "authoritative",
    "findings",
    "new-findings",
    "skipped",
    "exit-code",
)


def _new_findings(
    opts: FinishOptions, scan: ScanReport | None, comparison: Comparison | None
) -> str:
    """New against the baseline; with no baseline, every unsuppressed finding is new."""
    if opts.baseline:
        return str(len(comparison.new)) if comparison is not None else ""
    return str(len(gated_findings(scan))) if scan is not None else ""


def _append_summary(
    path: Path,
    opts: FinishOptions,
    files: Mapping[str, Path],
    scan: ScanReport | None,
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
            notices=[
                *([missing_baseline_note(opts.missing_baseline)] if opts.missing_baseline else []),
                *opts.notices,
            ],
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
