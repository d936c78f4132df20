"""argv -> one command -> exit code. No logic of its own.

Each subcommand lives in ``probegate.commands.<name>`` and exposes ``add_parser`` and ``run``;
:data:`COMMANDS` is the explicit registry (a test checks it against the README). Only the
command being run is imported: the others get a one-line placeholder parser, so `probegate
verify` does not pay for the scan engine's imports. ``main(argv)`` is what tests call;
``entry_point`` is the console script.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import os
import signal
import sys
import traceback
from collections.abc import Sequence
from types import ModuleType

from probegate import __version__
from probegate.errors import ExitCode, ProbegateError, exit_code_help

# name -> one-line help; the module is probegate.commands.<name>.
COMMANDS: dict[str, str] = {
    "scan": "run a scan against an agent",
    "report": "re-emit any format from a stored scan",
    "verify": "check schema, HMAC-SHA256, Ed25519 and trust anchor of a signed report",
    "compare": "new / fixed / persisting findings and score deltas; exit 1 on regression",
    "merge": "combine shard reports of one scan into one report",
    "probes": "browse the probe library",
    "keys": "manage Ed25519 signing keys",
    "run": "run scenario suites against your agent",
}


def command_module(name: str) -> ModuleType:
    return importlib.import_module(f"probegate.commands.{name}")


class _Parser(argparse.ArgumentParser):
    """argparse that raises instead of exiting, so usage errors become exit 2 with one line."""

    def error(self, message: str) -> None:  # type: ignore[override]
        raise _ArgError(f"{self.prog}: {message}")


class _ArgError(Exception):
    pass


class Terminated(BaseException):
    """SIGTERM, raised in the main thread so every ``finally`` runs (see :func:`entry_point`)."""


def _terminate(signum: int, frame: object) -> None:
    raise Terminated()


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The full parser, or (``only``) one real subparser plus placeholders for the rest."""
    parser = _Parser(
        prog="probegate",
        description="Red-team AI agents in CI with evidence-judged attack probes.",
        epilog=exit_code_help(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"probegate {__version__}")
    parser.add_argument("--debug", action="store_true", help="show tracebacks for internal errors")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    for name, help_text in COMMANDS.items():
        if only is None or name == only:
            command_module(name).add_parser(sub)
        else:
            sub.add_parser(name, help=help_text)
    return parser


def _command_in(args: list[str]) -> str | None:
    """The subcommand named on the command line (the first word that is one), if any."""
    for arg in args:
        if arg in COMMANDS:
            return arg
        if not arg.startswith("-"):
            return None
    return None


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command and return its exit code (:data:`probegate.errors.EXIT_CODES`)."""
    args_list = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in args_list or bool(os.environ.get("PROBEGATE_DEBUG"))
    parser = build_parser(only=_command_in(args_list) or "")
    try:
        args = parser.parse_args(args_list)
    except _ArgError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return ExitCode.USAGE
    except SystemExit as exc:  # --help / --version
        return int(exc.code or 0)
    if not args.command:
        parser.print_help(sys.stderr)
        return ExitCode.USAGE
    try:
        code: int = command_module(args.command).run(args)
        return code
    except ProbegateError as exc:
        print(f"error: {exc.message}", file=sys.stderr)
        if debug and exc.exit_code == ExitCode.INTERNAL:
            traceback.print_exc()
        return exc.exit_code
    except BrokenPipeError:
        # The reader went away (`probegate probes list | head`): not a bug, nothing to say.
        with contextlib.suppress(OSError):
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
        return ExitCode.CLOSED_PIPE
    except KeyboardInterrupt:
        print("error: interrupted", file=sys.stderr)
        return ExitCode.INTERRUPTED
    except Terminated:
        print("error: terminated", file=sys.stderr)
        return ExitCode.TERMINATED
    except Exception as exc:
        if debug:
            traceback.print_exc()
        print(
            f"error: internal error: {type(exc).__name__}: {exc}\n"
            "hint: this is a bug in probegate; rerun with --debug for the traceback",
            file=sys.stderr,
        )
        return ExitCode.INTERNAL


def entry_point() -> None:
    # SIGTERM (a cancelled CI job, `docker stop`) ends a scan the way Ctrl-C does: the journal
    # is closed and the servers a scan started (probegate's MCP server) stop before the exit,
    # instead of the interpreter dying with them open.
    signal.signal(signal.SIGTERM, _terminate)
    sys.exit(main())
