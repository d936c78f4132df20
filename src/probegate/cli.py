"""argv -> one command -> exit code. No logic of its own.

Each subcommand lives in ``probegate.commands.<name>`` and exposes ``add_parser`` and ``run``;
:data:`COMMANDS` is the explicit registry (a test checks it against the docs). ``main(argv)``
is what tests call; ``entry_point`` is the console script.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import traceback
from collections.abc import Sequence
from types import ModuleType

from probegate import __version__
from probegate.commands import compare, keys, merge, probes, report, run, scan, verify
from probegate.errors import ProbegateError

COMMANDS: dict[str, ModuleType] = {
    "scan": scan,
    "report": report,
    "verify": verify,
    "compare": compare,
    "merge": merge,
    "probes": probes,
    "keys": keys,
    "run": run,
}


class _Parser(argparse.ArgumentParser):
    """argparse that raises instead of exiting, so usage errors become exit 2 with one line."""

    def error(self, message: str) -> None:  # type: ignore[override]
        raise _ArgError(f"{self.prog}: {message}")


class _ArgError(Exception):
    pass


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="probegate",
        description="Red-team AI agents in CI with evidence-judged attack probes.",
    )
    parser.add_argument("--version", action="version", version=f"probegate {__version__}")
    parser.add_argument("--debug", action="store_true", help="show tracebacks for internal errors")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    for module in COMMANDS.values():
        module.add_parser(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command and return its exit code (PRODUCT.md section 2)."""
    args_list = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in args_list or bool(os.environ.get("PROBEGATE_DEBUG"))
    parser = build_parser()
    try:
        args = parser.parse_args(args_list)
    except _ArgError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except SystemExit as exc:  # --help / --version
        return int(exc.code or 0)
    if not args.command:
        parser.print_help(sys.stderr)
        return 2
    try:
        code: int = COMMANDS[args.command].run(args)
        return code
    except ProbegateError as exc:
        print(f"error: {exc.message}", file=sys.stderr)
        if debug and exc.exit_code == 4:
            traceback.print_exc()
        return exc.exit_code
    except BrokenPipeError:
        # The reader went away (`probegate probes list | head`): not a bug, nothing to say.
        with contextlib.suppress(OSError):
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
        return 141
    except KeyboardInterrupt:
        print("error: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:
        if debug:
            traceback.print_exc()
        print(
            f"error: internal error: {type(exc).__name__}: {exc}\n"
            "hint: this is a bug in probegate; rerun with --debug for the traceback",
            file=sys.stderr,
        )
        return 4


def entry_point() -> None:
    sys.exit(main())
