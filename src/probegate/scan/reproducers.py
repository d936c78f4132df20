"""Stage 5, reproducers: for each finding, the command and the script that send it again.

``pov/<probe>.sh`` reruns the attempt that found it through probegate (same mode, variant,
repeat, seed and judge: the same attempt id, mutated payload and planted canaries);
``pov/<probe>.replay.py`` sends the attempt's exact messages to the agent without probegate,
for the agent's developers (a kind with an endpoint only). Neither ever holds a secret: a
secret is a ``${NAME}`` the script reads from the environment and refuses to run without.
"""

from __future__ import annotations

import os
import re
import shlex
from pathlib import Path

from probegate.config import DEFAULT_STORE
from probegate.engine.plan import Plan
from probegate.engine.runner import fill_fixtures
from probegate.errors import ReportError
from probegate.files import write_atomic
from probegate.models.canaries import make_canaries
from probegate.models.redaction import Redactor
from probegate.models.report import Finding, ScanReport
from probegate.models.store_layout import ScanFiles
from probegate.reports.digest import evidence_text
from probegate.scan.settings import ReproSettings
from probegate.targets.base import ReplayInput, Target
from probegate.targets.registry import spec_of
from probegate.targets.sandbox import Sandbox
from probegate.workspace import repository_root

_SHELL_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def write_reproducers(
    report: ScanReport,
    files: ScanFiles,
    settings: ReproSettings,
    plan: Plan,
    target: Target,
    hidden: dict[str, str],
) -> None:
    """Every finding's ``pov/*.sh`` and, where the kind has one, its ``pov/*.replay.py``."""
    _write_povs(report, files, settings, hidden)
    _write_replays(report, files, settings, plan, target, hidden)


def _write_povs(
    report: ScanReport, files: ScanFiles, settings: ReproSettings, hidden: dict[str, str]
) -> None:
    """A reproducer per finding: the command that sends the attempt that found it again.

    Paths are relative to the repository root, which the script changes to, so it runs on
    another checkout too. A secret in the command line (a password in an endpoint URL) is never
    written: the script reads it from the variable its placeholder names and refuses to run
    without it. Every word is quoted for the shell (:func:`_shell_word`).
    """
    hide = Redactor(hidden, patterns=False)
    pov_dir = files.pov
    root = repository_root().resolve()
    common = _common_args(settings, root)
    by_probe = {r.probe_id: r for r in report.results}
    for finding in report.findings:
        argv = _pov_argv(finding, report, settings, common, root)
        back = os.path.relpath(root, pov_dir.resolve())
        outcome = by_probe.get(finding.probe_id)
        variables: list[str] = []
        command = " ".join(_shell_word(arg, hide, variables) for arg in argv)
        script = (
            "#!/bin/sh\n"
            f"# Reproduce finding {finding.id} ({finding.probe_id}): the attempt that found it,\n"
            f"# same mode ({report.mode}), variant, repeat, seed ({report.seed}) and judge.\n"
            + (
                f"# It was vulnerable in {outcome.vulnerable} of {outcome.attempts} attempts.\n"
                if outcome is not None
                else ""
            )
            + "# Paths are relative to the repository root, where this script runs.\n"
            + "".join(
                f': "${{{name}:?set {name} to the secret it stands for (never stored here)}}"\n'
                for name in dict.fromkeys(variables)
            )
            + f'cd "$(dirname "$0")"/{shlex.quote(back)} || exit 2\n'
            f"exec {command}\n"
        )
        write_atomic(
            files.reproducer(finding.probe_id),
            script,
            error=ReportError,
            private=True,
            executable=True,
        )


def _common_args(settings: ReproSettings, root: Path) -> list[str]:
    """The target's arguments and the user's probe directories, relative to the root."""
    common = [_repo_path(Path(a), root) if os.path.isabs(a) else a for a in settings.target_args]
    for extra in settings.probe_dirs:
        common += ["--probe-dir", _repo_path(extra.resolve(), root)]
    return common


def _pov_argv(
    finding: Finding, report: ScanReport, settings: ReproSettings, common: list[str], root: Path
) -> list[str]:
    argv = ["probegate", "scan", *common, "--probes", finding.probe_id, "--mode", report.mode]
    attempt = _reproduced_attempt(finding)
    if attempt is not None:
        variant, repeat = attempt
        argv += ["--variant", variant, "--repeat", str(max(repeat + 1, 1))]
    if settings.judge:
        argv += ["--judge", settings.judge]
    if settings.suite:
        argv += ["--suite", settings.suite]
    argv += [
        "--seed",
        str(report.seed),
        "--no-sign",
        "--output",
        "json,html",
        "--output-dir",
        f"probegate-pov/{finding.probe_id}",
    ]
    if settings.store.resolve() != (root / DEFAULT_STORE):
        argv += ["--store", _repo_path(settings.store.resolve(), root)]
    return argv


def _shell_word(arg: str, hide: Redactor, variables: list[str]) -> str:
    """One argument as one shell word: its text single-quoted, each secret in it a
    ``"${NAME}"`` expansion of its placeholder's variable (appended to ``variables``).

    Redacting before quoting keeps a secret that holds a quote from surviving in its quoted
    spelling, and nothing but those expansions is ever read by the shell.
    """
    redacted, offsets = hide.text_with_map(arg)
    parts: list[str] = []
    cursor = 0
    for _start, _end, new_start, new_end in offsets.spans:
        name = redacted[new_start + 2 : new_end - 1]  # "${NAME}"
        if not _SHELL_NAME.fullmatch(name):
            continue  # quoted with the text around it, as the literal placeholder
        if new_start > cursor:
            parts.append(shlex.quote(redacted[cursor:new_start]))
        parts.append(f'"${{{name}}}"')
        variables.append(name)
        cursor = new_end
    if cursor < len(redacted) or not parts:
        parts.append(shlex.quote(redacted[cursor:]))
    return "".join(parts)


def _write_replays(
    report: ScanReport,
    files: ScanFiles,
    settings: ReproSettings,
    plan: Plan,
    target: Target,
    hidden: dict[str, str],
) -> None:
    """Beside each reproducer, a plain-Python script that sends the attempt's exact messages to
    the agent without probegate. The scan's secrets in it (a declared canary the agent holds)
    are written as placeholders."""
    spec = spec_of(settings.target)
    if spec.replay_script is None:
        return
    planned = {a.attempt_id: a for a in plan.all_attempts}
    tools = target.tools()
    declared = settings.target.declared_canaries()
    for finding in report.findings:
        attempt_id = (finding.transcript_ref or "").partition("#")[2]
        attempt = planned.get(attempt_id)
        if attempt is None or finding.transcript is None:
            continue
        canaries = make_canaries(settings.seed, attempt_id, declared)
        sandbox = Sandbox(
            tools,
            fill_fixtures(attempt.probe.fixtures, attempt.payload),
            canaries,
            attempt_id=attempt_id,
        )
        given = ReplayInput(
            title=f"Replay of finding {finding.id} ({finding.probe_id}), attempt {attempt_id}",
            transcript=finding.transcript,
            tool_descriptions={t.name: sandbox.tool_description(t) for t in tools},
            canaries=canaries,
            settings=settings.target_settings,
            evidence=evidence_text(finding),
            secrets=hidden,
        )
        write_atomic(
            files.replay_script(finding.probe_id),
            spec.replay_script(settings.target, given),
            error=ReportError,
            private=True,
            executable=True,
        )


def _reproduced_attempt(finding: Finding) -> tuple[str, int] | None:
    """(variant, repeat) of the finding's first vulnerable attempt, from its transcript ref."""
    ref = finding.transcript_ref or ""
    parts = ref.rsplit("#", 2)
    if len(parts) == 3 and parts[2].isdigit():
        return parts[1], int(parts[2])
    return None


def _repo_path(path: Path, root: Path) -> str:
    try:
        return path.relative_to(root).as_posix()
    except ValueError:
        return str(path)
