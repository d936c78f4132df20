"""argv -> one command -> exit code. No logic of its own.

Each subcommand lives in ``probegate.commands.<name>`` and exposes ``add_parser`` and ``run``;
:data:`COMMANDS` is the explicit registry (a test checks it against the README). Only the
command being run is imported: the others get a one-line placeholder parser, so `probegate
verify` does not pay for the scan engine's imports. ``main(argv)`` is what tests call;
``entry_point`` is the console script.

The global flags (:data:`GLOBAL_FLAGS`: ``--debug``, ``-q``, ``-v``, ``--json``) are accepted
anywhere on the line, before or after the command, because every parser probegate builds adds
them. Every command's ``--help`` ends with the exit-code table (:mod:`probegate.errors`).
SIGTERM (a CI job cancelled) is turned into the same clean stop as Ctrl-C.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import os
import signal
import sys
import threading
import traceback
from collections.abc import Iterator, Sequence
from types import FrameType, ModuleType
from typing import Any

from probegate import __version__
from probegate.errors import (
    COMMAND_EXITS,
    ExitCode,
    Interrupted,
    ProbegateError,
    exit_code_help,
)
from probegate.terminal import Style, clean

# name -> one-line help; the module is probegate.commands.<name>.
COMMANDS: dict[str, str] = {
    "init": "write a commented probegate.yml (and the workflow) to start from",
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


# (flags, dest, help): accepted by every parser, before or after the command.
GLOBAL_FLAGS: tuple[tuple[tuple[str, ...], str, str], ...] = (
    (("--debug",), "debug", "show the traceback of an internal error"),
    (("-q", "--quiet"), "quiet", "print only errors and what a gate decided"),
    (("-v", "--verbose"), "verbose", "print more: every finding, every unjudged reason"),
    (("--json",), "json", "machine-readable JSON on standard output (human text goes away)"),
)


class _HelpFormatter(argparse.HelpFormatter):
    """Wraps prose, keeps indented lines (the exit-code table, examples) as they are."""

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        blocks = []
        for block in text.split("\n\n"):
            if any(line.startswith("  ") for line in block.splitlines()):
                blocks.append("\n".join(indent + line for line in block.splitlines()))
            else:
                blocks.append(super()._fill_text(block, width, indent))
        return "\n\n".join(blocks)


class _Parser(argparse.ArgumentParser):
    """argparse that raises instead of exiting, so usage errors become exit 2 with one line.

    Every instance (the top parser, each command's, each action's) takes the global flags; a
    command's parser leaves them unset unless given, so a flag before the command still counts.
    Each help page ends with the exit codes.
    """

    def __init__(self, *args: Any, top: bool = False, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", _HelpFormatter)
        epilog = kwargs.get("epilog")
        exits = exit_code_help(_command_of(kwargs.get("prog")))
        kwargs["epilog"] = f"{epilog}\n\n{exits}" if epilog else exits
        super().__init__(*args, **kwargs)
        group = self.add_argument_group("global options (anywhere on the line)")
        for flags, dest, help_text in GLOBAL_FLAGS:
            group.add_argument(
                *flags,
                dest=dest,
                action="store_true",
                default=False if top else argparse.SUPPRESS,
                help=help_text,
            )

    def error(self, message: str) -> None:  # type: ignore[override]
        raise _ArgError(f"{self.prog}: {message}")

    def parse_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> argparse.Namespace:
        """argparse's, with a did-you-mean for each mistyped flag (``--fail-ob``)."""
        parsed, extras = self.parse_known_args(args, namespace)
        if extras:
            command = vars(parsed).get("command")
            prog = f"{self.prog} {command}" if command else self.prog
            hint = _flag_hint(extras, _long_flags(self))
            raise _ArgError(f"{prog}: unrecognized arguments: {' '.join(extras)}{hint}")
        return parsed

    def _check_value(self, action: argparse.Action, value: Any) -> None:
        """argparse's check of a choice, with a did-you-mean (``scna``, ``--mode fsat``)."""
        try:
            super()._check_value(action, value)
        except argparse.ArgumentError:
            from probegate.validation import did_you_mean  # only on the error path: pydantic

            choices = [str(c) for c in action.choices or ()]
            hint = did_you_mean(str(value), choices)
            shown = ", ".join(repr(c) for c in choices)
            raise argparse.ArgumentError(
                action, f"invalid choice: {value!r}{hint} (choose from {shown})"
            ) from None


def _command_of(prog: object) -> str | None:
    """``probes lint`` for the parser ``probegate probes lint``, whose exit table is its own;
    the command alone when its action has none (``probes list``)."""
    words = str(prog or "").split()[1:]
    for size in (2, 1):
        if len(words) >= size and " ".join(words[:size]) in COMMAND_EXITS:
            return " ".join(words[:size])
    return None


class _ArgError(Exception):
    pass


def _long_flags(parser: argparse.ArgumentParser) -> set[str]:
    """Every ``--flag`` of the parser and of the commands and actions under it."""
    flags: set[str] = set()
    for action in parser._actions:
        flags.update(s for s in action.option_strings if s.startswith("--"))
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                flags |= _long_flags(sub)
    return flags


def _flag_hint(extras: Sequence[str], flags: set[str]) -> str:
    """`` (did you mean '--fail-on'?)`` for the mistyped flags among ``extras``."""
    from probegate.validation import closest  # only on the error path: it imports pydantic

    guesses = []
    for arg in extras:
        word = arg.split("=", 1)[0]
        if word.startswith("--") and (guess := closest(word, flags)) is not None:
            guesses.append((word, guess))
    if not guesses:
        return ""
    if len(guesses) == 1:
        return f" (did you mean {guesses[0][1]!r}?)"
    return " (did you mean " + ", ".join(f"{g!r} for {w}" for w, g in guesses) + "?)"


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The full parser, or (``only``) one real subparser plus placeholders for the rest."""
    parser = _Parser(
        prog="probegate",
        description="Red-team AI agents in CI with evidence-judged attack probes.",
        top=True,
    )
    parser.add_argument("--version", action="version", version=f"probegate {__version__}")
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


def _error(message: str) -> None:
    """One ``error:`` line; messages quote what the user or the target wrote, so cleaned."""
    style = Style(sys.stderr)
    print(f"{style('error:', 'bold', 'red')} {clean(message)}", file=sys.stderr)


@contextlib.contextmanager
def _sigterm_interrupts() -> Iterator[None]:
    """SIGTERM raises :class:`Interrupted` in the main thread, as Ctrl-C does, while we run."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def stop(signum: int, frame: FrameType | None) -> None:
        raise Interrupted(signum)

    previous = signal.signal(signal.SIGTERM, stop)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous if previous is not None else signal.SIG_DFL)


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command and return its exit code (:data:`probegate.errors.EXIT_CODES`)."""
    args_list = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in args_list or bool(os.environ.get("PROBEGATE_DEBUG"))
    parser = build_parser(only=_command_in(args_list) or "")
    try:
        args = parser.parse_args(args_list)
    except _ArgError as exc:
        _error(str(exc))
        return ExitCode.USAGE
    except SystemExit as exc:  # --help / --version
        return int(exc.code or 0)
    if not args.command:
        parser.print_help(sys.stderr)
        return ExitCode.USAGE
    try:
        with _sigterm_interrupts():
            code: int = command_module(args.command).run(args)
        return code
    except ProbegateError as exc:
        _error(exc.message)
        if debug and exc.exit_code == ExitCode.INTERNAL:
            traceback.print_exc()
        return exc.exit_code
    except BrokenPipeError:
        # The reader went away (`probegate probes list | head`): not a bug, nothing to say.
        with contextlib.suppress(OSError):
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
        return ExitCode.CLOSED_PIPE
    except KeyboardInterrupt as exc:
        stopped = exc if isinstance(exc, Interrupted) else Interrupted(signal.SIGINT)
        _error(f"interrupted by {stopped.what}")
        return stopped.exit_code
    except Exception as exc:
        if debug:
            traceback.print_exc()
        print(
            f"error: internal error: {type(exc).__name__}: {clean(str(exc))}\n"
            "hint: this is a bug in probegate; rerun with --debug for the traceback",
            file=sys.stderr,
        )
        return ExitCode.INTERNAL


def entry_point() -> None:
    # SIGTERM (a cancelled CI job, `docker stop`) ends a scan the way Ctrl-C does (``main``
    # turns it into an interrupt): the journal is closed, the partial report written and the
    # servers a scan started (probegate's MCP server) stop before the exit.
    sys.exit(main())
