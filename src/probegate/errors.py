"""One error root for probegate.

Every failure a user can cause or meet is a :class:`ProbegateError` whose message says what to
do, and whose ``exit_code`` is the documented one (PRODUCT.md section 2). Adapters turn
third-party exceptions into these at the boundary so the CLI never shows a traceback for them.
"""

from __future__ import annotations


class ProbegateError(Exception):
    """Root of every error probegate raises on purpose."""

    exit_code: int = 4

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class UsageError(ProbegateError):
    """A bad flag, config, probe, report or path: the user can fix it (exit 2)."""

    exit_code = 2


class ConfigError(UsageError):
    """The config file or a flag value is invalid."""


class ProbeLibraryError(UsageError):
    """A probe file is malformed or names an unknown taxonomy id."""


class ReportError(UsageError):
    """A report could not be read, or an emitter would produce an invalid document."""


class UndecidedError(ProbegateError):
    """The gate cannot be decided: non-authoritative scan or unjudgeable target (exit 3)."""

    exit_code = 3


class TargetError(UndecidedError):
    """The target could not be reached or judged at all."""


class InternalError(ProbegateError):
    """A bug in probegate (exit 4)."""

    exit_code = 4
