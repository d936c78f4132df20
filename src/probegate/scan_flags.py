"""The flags of ``probegate scan`` that set scan settings: one :class:`ScanFlag` row each.

Everything else about a scan flag derives from its row: the argparse argument and its group
(``commands/flags.py``), the ``scan:`` key of the config file and its ``-``/``_`` spellings,
the ``--flag`` named in an error about the setting, whether it is a path (resolved where the
user stands when given as a flag, against the config file when written there), and whether a
scan's stored invocation keeps it for ``--resume SCAN_ID`` (``config.py``,
``commands/scan.py``). The setting itself, its type, default and validation, is the
:class:`~probegate.config.ScanConfig` field the row names. Adding a scan flag is one row here
and its field there; tests/commands/test_scan_flag_table.py sets every row's flag and finds it
in the config, from the command line and from a config file.

The flags that describe the target are the target kinds' own (``TargetFlag``, targets/base.py);
``--config`` and ``--allow-outside-config`` say how to read the config file itself, and the
global flags (``--json``, ``--verbose``...) belong to every command (cli.py). None of them is a
row here, but ``--quiet``, a global flag that is also a ``scan:`` setting.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from probegate.models.report import Mode
from probegate.models.taxonomy import Severity


class Group(Enum):
    """Where a flag is listed in ``probegate scan --help``, in this order."""

    SCAN = "scan"
    MCP = "probegate's MCP server (docs/agent-service.md)"
    A2A = "probegate's A2A peers (docs/scan-your-agent/a2a.md)"
    OUTPUT = "output and gates"
    # A global flag (cli.py adds it to every command); a row only because it is a setting.
    GLOBAL = "global options"


class Form(Enum):
    """How the flag is written on the command line."""

    VALUE = "value"  # --flag VALUE
    LIST = "list"  # --flag A,B --flag C: repeatable, each a comma list or one value
    SWITCH = "switch"  # --flag sets True; not given leaves the file's setting
    OFF = "off"  # --no-thing sets False; not given leaves the file's setting
    TOGGLE = "toggle"  # --thing sets True, --no-thing False


class PathRule(Enum):
    """Whether the setting names a file or directory, and how a flag's value is kept."""

    NONE = "none"
    # Resolved where the user stands, at once (a file read or a directory kept).
    RESOLVED = "resolved"
    # Kept as typed, relative to where the user stands: where the scan writes, which its
    # closing lines show as the user typed it.
    AS_TYPED = "as typed"


@dataclass(frozen=True)
class ScanFlag:
    """One scan flag: the ScanConfig field it sets and how it is written."""

    flag: str  # "--max-wait"
    field: str  # the ScanConfig field it sets ("max_wait")
    help: str  # the help line; "(default: X)" is added from ScanConfig when show_default
    group: Group = Group.SCAN
    form: Form = Form.VALUE
    metavar: str | None = None
    type: type[int] | type[float] | None = None  # None: the text as given
    choices: tuple[str, ...] = ()  # accepted in any case
    path: PathRule = PathRule.NONE
    # Kept in the scan's stored invocation: every flag that shapes the scan, none that only
    # runs it once (--resume, --dry-run).
    stored: bool = True
    show_default: bool = False
    # The long name, when it is not the field's (``--probe-dir`` sets ``probe_dirs``): also
    # the argparse dest, the stored invocation's key and a second name in the config file.
    name: str | None = None
    off_help: str = ""  # the help of a TOGGLE's ``--no-`` flag

    @property
    def key(self) -> str:
        """The argparse dest and the stored invocation's key."""
        return self.name or self.field

    @property
    def off_flag(self) -> str:
        """``--no-sign`` beside ``--sign`` (TOGGLE only)."""
        return "--no-" + self.flag.removeprefix("--")


_MODES = tuple(str(m) for m in Mode)
_SEVERITIES = tuple(str(s) for s in Severity)

SCAN_FLAGS: tuple[ScanFlag, ...] = (
    ScanFlag(
        "--mode",
        "mode",
        "fast: every applicable probe once; smart: then mutated variants where the agent "
        "resisted; full: every probe x every mutator x --repeat (the only authoritative mode)",
        choices=_MODES,
        show_default=True,
    ),
    ScanFlag(
        "--asi",
        "asi",
        "only these ASI categories, comma list or repeated: ASI01,ASI03 (default: all)",
        form=Form.LIST,
        metavar="LIST",
    ),
    ScanFlag(
        "--probes",
        "probes",
        "only probes whose id matches this glob, e.g. 'asi01*' (repeatable; default: all)",
        form=Form.LIST,
        metavar="GLOB",
    ),
    ScanFlag(
        "--suite",
        "suite",
        "run AgentDojo's task pairs instead of the probe library: agentdojo (its four "
        "suites) or agentdojo:banking,slack,travel,workspace; each attempt is also checked by "
        "AgentDojo's own security check and the report states the agreement (needs "
        "pip install 'probegate[agentdojo]'; docs/agentdojo.md)",
        metavar="agentdojo[:SUITE]",
    ),
    ScanFlag(
        "--probe-dir",
        "probe_dirs",
        "extra directory of your own probe YAML files (repeatable; docs/custom-probes.md)",
        form=Form.LIST,
        metavar="DIR",
        path=PathRule.RESOLVED,
        name="probe_dir",
    ),
    ScanFlag(
        "--variant",
        "variant",
        "only this variant of each probe: seed or a mutator's name, as a finding's "
        "reproducer runs it (default: every variant the mode plans)",
        metavar="NAME",
    ),
    ScanFlag(
        "--concurrency",
        "concurrency",
        "attempts in flight at once against an agent that waits on a network or a model "
        "(the demo agents and replays only compute: one at a time)",
        metavar="N",
        type=int,
        show_default=True,
    ),
    ScanFlag(
        "--rps",
        "rps",
        "max requests per second to the target (default: no limit)",
        metavar="N",
        type=float,
    ),
    ScanFlag(
        "--timeout",
        "timeout",
        "per-request timeout",
        metavar="SECONDS",
        type=float,
        show_default=True,
    ),
    ScanFlag(
        "--retries",
        "retries",
        "retries of a failed request, with backoff that honours Retry-After",
        metavar="N",
        type=int,
        show_default=True,
    ),
    ScanFlag(
        "--deadline",
        "deadline",
        "stop the scan after this many seconds and write its report (default: none)",
        metavar="SECONDS",
        type=float,
    ),
    ScanFlag(
        "--max-wait",
        "max_wait",
        "most seconds the whole scan pauses for Retry-After",
        metavar="SECONDS",
        type=float,
        show_default=True,
    ),
    ScanFlag(
        "--repeat",
        "repeat",
        "runs of each variant (default: 3 in full mode, else 1)",
        metavar="N",
        type=int,
    ),
    ScanFlag(
        "--seed",
        "seed",
        "seed of the mutators and planted canaries: same seed, same scan",
        metavar="N",
        type=int,
        show_default=True,
    ),
    ScanFlag(
        "--budget-usd",
        "budget_usd",
        "stop starting attempts at 80%% of this many dollars, never exceed it (default: no cap)",
        metavar="X",
        type=float,
    ),
    ScanFlag(
        "--allow-unpriced",
        "allow_unpriced",
        "run with --budget-usd although a model has no price in target.prices, so the "
        "dollar cap counts nothing for it (default: such a scan is refused)",
        form=Form.SWITCH,
    ),
    ScanFlag(
        "--max-requests",
        "max_requests",
        "stop after this many requests to the target and judge (default: no cap)",
        metavar="N",
        type=int,
    ),
    ScanFlag(
        "--judge",
        "judge",
        "LLM judge for probes oracles cannot decide, e.g. openai:gpt-4o-mini "
        "(default: none; evidence oracles only)",
        metavar="SPEC",
    ),
    ScanFlag(
        "--no-controls",
        "controls",
        "do not re-run vulnerable attempts without the attack to check the attack caused "
        "them (faster; the scan is then not authoritative; default: controls run)",
        form=Form.OFF,
    ),
    ScanFlag(
        "--dry-run",
        "dry_run",
        "print the plan and its estimated requests and cost; send nothing",
        form=Form.SWITCH,
        stored=False,
    ),
    ScanFlag(
        "--resume",
        "resume",
        "continue an interrupted scan from its journal; needs no other flag "
        "(the scan's settings are stored with it)",
        metavar="SCAN_ID",
        stored=False,
    ),
    ScanFlag(
        "--record",
        "record",
        "write every attempt's transcript here, for --replay DIR (default: none)",
        metavar="DIR",
        path=PathRule.RESOLVED,
    ),
    ScanFlag(
        "--shard",
        "shard",
        "run the K-th of N parts of the plan; join them with 'probegate merge' "
        "(default: the whole plan)",
        metavar="K/N",
    ),
    ScanFlag(
        "--store",
        "store",
        "where each scan's journal, transcripts, report and reproducers are kept",
        metavar="DIR",
        path=PathRule.AS_TYPED,
        show_default=True,
    ),
    ScanFlag(
        "--mcp-listen",
        "mcp_listen",
        "where the MCP server listens when the agent takes its tools from it "
        "(default 127.0.0.1 on a free port)",
        group=Group.MCP,
        metavar="HOST:PORT",
    ),
    ScanFlag(
        "--mcp-advertise",
        "mcp_advertise",
        "the base URL the agent is given for the MCP server, when it reaches probegate "
        "across a network, e.g. from a container (default: the listen address)",
        group=Group.MCP,
        metavar="URL",
    ),
    ScanFlag(
        "--a2a-listen",
        "a2a_listen",
        "where the A2A peers listen when the agent calls other agents through them "
        "(default 127.0.0.1 on a free port)",
        group=Group.A2A,
        metavar="HOST:PORT",
    ),
    ScanFlag(
        "--a2a-advertise",
        "a2a_advertise",
        "the base URL the agent is given for the A2A peers, when it reaches probegate "
        "across a network, e.g. from a container (default: the listen address)",
        group=Group.A2A,
        metavar="URL",
    ),
    ScanFlag(
        "--output",
        "output",
        # The formats of reports.FORMATS follow (commands/flags.py): the registry sits above
        # this table, so the command that builds the parser adds them.
        "report formats, a comma list or repeated",
        group=Group.OUTPUT,
        form=Form.LIST,
        metavar="FORMATS",
    ),
    ScanFlag(
        "--output-dir",
        "output_dir",
        "where the report files go (files of formats not asked for this time are removed, "
        "so the folder is one scan's)",
        group=Group.OUTPUT,
        metavar="DIR",
        path=PathRule.AS_TYPED,
        show_default=True,
    ),
    ScanFlag(
        "--fail-under",
        "fail_under",
        "exit 1 when the score (0-100) is below SCORE; exit 3 on a scan that is not "
        "authoritative (default: no score gate)",
        group=Group.OUTPUT,
        metavar="SCORE",
        type=float,
    ),
    ScanFlag(
        "--fail-on",
        "fail_on",
        "exit 1 on an unsuppressed finding at or above: critical, high, medium, low "
        "(default: no severity gate)",
        group=Group.OUTPUT,
        metavar="SEVERITY",
        choices=_SEVERITIES,
    ),
    ScanFlag(
        "--baseline",
        "baseline",
        "baseline scan JSON; exit 1 on a new finding or a score drop (default: none)",
        group=Group.OUTPUT,
        metavar="FILE",
        path=PathRule.RESOLVED,
    ),
    ScanFlag(
        "--tolerance",
        "tolerance",
        "score points the baseline comparison allows to drop",
        group=Group.OUTPUT,
        metavar="X",
        type=float,
        show_default=True,
    ),
    ScanFlag(
        "--allow-mismatch",
        "allow_mismatch",
        "compare with a baseline of another library version or mode (common probes only)",
        group=Group.OUTPUT,
        form=Form.SWITCH,
    ),
    ScanFlag(
        "--confirm",
        "confirm",
        "with --baseline: before the gate decides, run the probes of the findings the "
        "baseline lacked (or held less often) N more times, their controls too, and decide on "
        "the pooled counts (0-10; docs/gating.md)",
        group=Group.OUTPUT,
        metavar="N",
        type=int,
        show_default=True,
    ),
    ScanFlag(
        "--suppressions",
        "suppressions",
        "accepted findings (default: .probegate-suppressions.yml when it exists)",
        group=Group.OUTPUT,
        metavar="FILE",
        path=PathRule.RESOLVED,
    ),
    ScanFlag(
        "--sign",
        "sign",
        "require signing (default: sign when PROBEGATE_SIGNING_SECRET or a key is set)",
        group=Group.OUTPUT,
        form=Form.TOGGLE,
        off_help="never sign",
    ),
    ScanFlag(
        "--signing-key",
        "signing_key",
        "Ed25519 private key, PEM (default: $PROBEGATE_SIGNING_KEY)",
        group=Group.OUTPUT,
        metavar="FILE",
        path=PathRule.RESOLVED,
    ),
    ScanFlag(
        "--quiet",
        "quiet",
        "print only errors and what a gate decided",
        group=Group.GLOBAL,
        form=Form.SWITCH,
    ),
)

BY_FIELD: dict[str, ScanFlag] = {row.field: row for row in SCAN_FLAGS}
# The rows ``probegate merge`` shares: its merged report is gated and signed like a scan's.
GATE_FLAGS = (BY_FIELD["fail_under"], BY_FIELD["fail_on"])
SIGNING_FLAGS = (BY_FIELD["sign"], BY_FIELD["signing_key"])


def path_fields() -> tuple[str, ...]:
    """The fields that name a file or directory (resolved against the config file there)."""
    return tuple(row.field for row in SCAN_FLAGS if row.path is not PathRule.NONE)
