"""Where and how much a scan says: text for people, or one JSON object for machines."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

from probegate.terminal import Style


@dataclass
class View:
    """The scan's two streams and how much goes on them; ``notes`` are kept for ``--json``."""

    out: TextIO
    err: TextIO
    quiet: bool = False
    verbose: bool = False
    as_json: bool = False
    notes: list[str] = field(default_factory=list)

    def note(self, text: str) -> None:
        """A line before the scan starts (what it cannot do, and why), on stderr."""
        self.notes.append(text)
        if not self.quiet:
            self.err.write(f"{Style(self.err)('note:', 'yellow')} {text}\n")


def shown(path: Path) -> str:
    """A path as the user would type it from here: relative when it is below the cwd."""
    try:
        return path.resolve().relative_to(Path.cwd().resolve()).as_posix()
    except (OSError, ValueError):
        return str(path)
