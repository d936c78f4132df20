"""``python -m probegate.github COMMAND``: the entrypoint's calls, parsed and dispatched.

Only ``entrypoint.sh`` calls this, so bad arguments are a bug in the Action (exit 4), while a
bad Action input is the user's (exit 2). Either way the message goes out as an escaped
workflow command: inputs are echoed back in it.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from probegate.errors import ExitCode
from probegate.github.inputs import (
    COMMANDS,
    ActionError,
    check_locations,
    check_packages,
    fork_pull_request,
    split_args,
    target_notice,
)
from probegate.github.workflow import stop_commands_token, workflow_command


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
    w = sub.add_parser("check-locations", help="refuse output and store paths via symlinks")
    w.add_argument("--output-dir", type=Path, required=True)
    w.add_argument("--store", type=Path, default=Path(".probegate"))
    w.add_argument("--error-file", type=Path, default=None, help="write the refusal here")
    r = sub.add_parser("check-run", help="a fork's pull request to skip, a deprecated input")
    r.add_argument("--command", dest="probegate_command", choices=COMMANDS, default="scan")
    r.add_argument("--target", default="")
    r.add_argument("--fork-pull-requests", choices=("skip", "scan"), default="skip")
    r.add_argument("--skip-file", type=Path, required=True, help="why the run is skipped")
    r.add_argument("--notice-file", type=Path, required=True, help="a deprecation notice")
    r.add_argument("--error-file", type=Path, default=None, help="write the refusal here")
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
    f.add_argument("--skipped", default="", help="why nothing ran (a fork's pull request)")
    f.add_argument("--notice", action="append", default=[], help="a notice to publish")
    return parser


# The entrypoint's checks of the user's inputs: each refuses with an ActionError, which goes to
# --error-file when one is given (see main), else out as a workflow command.
_CHECKS = ("split-args", "check-packages", "check-locations", "check-run")


def _check(args: argparse.Namespace, environ: Mapping[str, str]) -> None:
    if args.command == "split-args":
        words = split_args(environ.get("PG_ARGS", ""))
        sys.stdout.buffer.write(b"".join(w.encode("utf-8") + b"\0" for w in words))
        sys.stdout.flush()
    elif args.command == "check-packages":
        check_packages(args.packages)
    elif args.command == "check-run":
        skip = fork_pull_request(environ) if args.fork_pull_requests == "skip" else None
        args.skip_file.write_text(skip or "", encoding="utf-8")
        scan = args.probegate_command == "scan"
        notice = target_notice(args.target) if scan else None
        args.notice_file.write_text(notice or "", encoding="utf-8")
    else:
        check_locations(args.output_dir, args.store)


def main(argv: Sequence[str] | None = None, env: Mapping[str, str] | None = None) -> int:
    environ = os.environ if env is None else env
    try:
        args = _parser().parse_args(argv)
        if args.command == "token":
            print(stop_commands_token())
            return ExitCode.PASSED
        if args.command in _CHECKS:
            try:
                _check(args, environ)
            except ActionError as exc:
                if args.error_file is None:
                    raise
                # Plain text for the entrypoint, which hands it to `finish` to print escaped.
                args.error_file.write_text(str(exc), encoding="utf-8")
                return ExitCode.USAGE
            return ExitCode.PASSED
        # Imported here: the reports and their models take a second to import, and the
        # entrypoint's other calls (token, split-args, the checks) need none of them.
        from probegate.github.finish import FinishOptions, finish

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
            skipped=args.skipped,
            notices=tuple(n for n in args.notice if n),
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
        return ExitCode.USAGE
    except Exception as exc:  # _ParseError included: only the entrypoint calls this module
        message = f"internal error in the Action: {type(exc).__name__}: {exc}"
        print(workflow_command("error", message, {"title": "probegate action"}), file=sys.stderr)
        return ExitCode.INTERNAL
