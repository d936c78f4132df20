"""One error root for probegate, and the one table of exit codes.

Every failure a user can cause or meet is a :class:`ProbegateError` whose message says what to
do, and whose ``exit_code`` is the documented one. Adapters turn third-party exceptions into
these at the boundary so the CLI never shows a traceback for them.

:data:`EXIT_CODES` is the exit-code contract: the README's table, the ``--help`` text, the
gates, ``probegate run`` and the GitHub Action all read it, and a test checks that the README
says the same (docs/architecture.md).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum


class ExitCode(IntEnum):
    """What a probegate process exits with. Never depends on the output format."""

    PASSED = 0
    GATE_FAILED = 1
    USAGE = 2
    UNDECIDED = 3
    INTERNAL = 4
    # Not verdicts: how shells report an interrupt, a reader that went away, and SIGTERM.
    INTERRUPTED = 130
    CLOSED_PIPE = 141
    TERMINATED = 143


@dataclass(frozen=True)
class ExitMeaning:
    """One row of the exit-code table: a short label and the README's full sentence."""

    code: ExitCode
    label: str
    meaning: str


EXIT_CODES: tuple[ExitMeaning, ...] = (
    ExitMeaning(
        ExitCode.PASSED,
        "every gate asked for passed",
        "the scan ran and every gate asked for passed (or none was asked for)",
    ),
    ExitMeaning(
        ExitCode.GATE_FAILED,
        "a gate failed",
        "a gate failed: score below `--fail-under`, a finding at or above `--fail-on`, or a "
        "regression against `--baseline` / in `compare`",
    ),
    ExitMeaning(
        ExitCode.USAGE,
        "usage or input error",
        "usage or input error: bad flag, invalid config, probe or report file, unreadable "
        "path, a scan another process is running or a resume whose config changed; one clear "
        "message, no traceback",
    ),
    ExitMeaning(
        ExitCode.UNDECIDED,
        "the gate could not be decided",
        "the gate could not be decided: `--fail-under` on a scan that is not authoritative, "
        "`--fail-on` while attempts that could reach it are unjudged, or the target could not "
        "be judged (unreachable, most attempts unjudged)",
    ),
    ExitMeaning(
        ExitCode.INTERNAL,
        "internal error",
        "internal error: a bug; the message says to rerun with `--debug` for the traceback",
    ),
)
EXIT_LABELS: dict[int, str] = {row.code: row.label for row in EXIT_CODES}


_INTERNAL = (ExitCode.INTERNAL, "internal error: a bug; rerun with --debug for the traceback")


def _usage(what: str = "") -> str:
    return f"usage or input error: a bad flag, an unreadable path{what}; one clear message"


# What each command other than scan exits with, for its own --help: ``probegate verify --help``
# ending with the scan's gates would say codes verify never returns. Keyed by the command, or
# the command and its action (``probes lint``); each command's tests hold it to these.
COMMAND_EXITS: dict[str, tuple[tuple[ExitCode, str], ...]] = {
    "init": (
        (ExitCode.PASSED, "the files were written"),
        (
            ExitCode.USAGE,
            _usage(", a file that exists (--force replaces it)") + ", nothing written",
        ),
        _INTERNAL,
    ),
    "report": (
        (ExitCode.PASSED, "the formats asked for were written"),
        (ExitCode.USAGE, _usage(", no such scan, a report file that is not valid")),
        _INTERNAL,
    ),
    "verify": (
        (ExitCode.PASSED, "every signature present checks and the report is anchored"),
        (ExitCode.GATE_FAILED, "a check failed, or the report is UNANCHORED"),
        (ExitCode.USAGE, _usage(": the report or a key cannot be read")),
        _INTERNAL,
    ),
    "compare": (
        (ExitCode.PASSED, "no regression"),
        (ExitCode.GATE_FAILED, "a regression: a new finding, or a score drop over --tolerance"),
        (
            ExitCode.USAGE,
            _usage(
                ", a report that is not valid, reports of another mode or probe library "
                "without --allow-mismatch"
            ),
        ),
        _INTERNAL,
    ),
    "merge": (
        (ExitCode.PASSED, "merged, and every gate asked for passed (or none was asked for)"),
        (ExitCode.GATE_FAILED, "a gate failed on the merged report"),
        (ExitCode.USAGE, _usage(", shards that are not of one scan")),
        (
            ExitCode.UNDECIDED,
            "the gate could not be decided: --fail-under on a merged report that is not "
            "authoritative, or --fail-on while attempts that could reach it are unjudged",
        ),
        _INTERNAL,
    ),
    "probes": (
        (ExitCode.PASSED, "listed or shown"),
        (ExitCode.USAGE, _usage(", no such probe")),
        _INTERNAL,
    ),
    "probes lint": (
        (ExitCode.PASSED, "every probe file of the directory is valid"),
        (ExitCode.USAGE, "a probe file has a problem (each is listed), or the path is unreadable"),
        _INTERNAL,
    ),
    "keys": (
        (ExitCode.PASSED, "the key pair was written"),
        (ExitCode.USAGE, _usage(", a key file that exists (never overwritten)")),
        _INTERNAL,
    ),
    "run": (
        (ExitCode.PASSED, "every scenario passed"),
        (ExitCode.GATE_FAILED, "a scenario failed, or regressed against --compare"),
        (ExitCode.USAGE, _usage(", a suite file that is not valid")),
        _INTERNAL,
    ),
}


def exit_code_help(command: str | None = None) -> str:
    """The exit codes as plain text for ``--help``: the table of :data:`EXIT_CODES` for
    ``probegate --help`` and ``scan``, each other command's own (:data:`COMMAND_EXITS`)."""
    own = COMMAND_EXITS.get(command or "")
    if own is not None:
        rows = [f"  {code.value}  {meaning}" for code, meaning in own]
    else:
        rows = [f"  {row.code.value}  {row.meaning.replace('`', '')}" for row in EXIT_CODES]
    rows.append(
        f"  {ExitCode.CLOSED_PIPE.value}  the output was cut off by a closed pipe "
        f"({ExitCode.INTERRUPTED.value} when interrupted by Ctrl-C, "
        f"{ExitCode.TERMINATED.value} by SIGTERM"
        + ("; a scan then says how to resume)" if own is None else ")")
    )
    return "exit codes:\n" + "\n".join(rows)


class Interrupted(KeyboardInterrupt):
    """Ctrl-C (SIGINT) or a CI cancel (SIGTERM): stop cleanly, keep what was done.

    A subclass of :class:`KeyboardInterrupt`, so code that already stops on Ctrl-C stops on
    SIGTERM the same way; the exit code is the shell's ``128 + signal``.
    """

    def __init__(self, signum: int = 2) -> None:
        super().__init__(signum)
        self.signum = signum

    @property
    def exit_code(self) -> int:
        return 128 + self.signum

    @property
    def what(self) -> str:
        """How the user would name what stopped the process."""
        return {2: "Ctrl-C", 15: "SIGTERM"}.get(self.signum, f"signal {self.signum}")


class ProbegateError(Exception):
    """Root of every error probegate raises on purpose."""

    exit_code: int = ExitCode.INTERNAL

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class UsageError(ProbegateError):
    """A bad flag, config, probe, report or path: the user can fix it (exit 2)."""

    exit_code = ExitCode.USAGE


class ConfigError(UsageError):
    """The config file or a flag value is invalid."""


class ProbeLibraryError(UsageError):
    """A probe file is malformed or names an unknown taxonomy id."""


class ReportError(UsageError):
    """A report could not be read, or an emitter would produce an invalid document."""


class UndecidedError(ProbegateError):
    """The gate cannot be decided: non-authoritative scan, missing evidence or unjudgeable
    target (exit 3)."""

    exit_code = ExitCode.UNDECIDED


class TargetError(UndecidedError):
    """The target could not be reached or judged at all."""
