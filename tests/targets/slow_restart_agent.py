"""An agent that crashes on ``crash`` and, started again after that, takes 2 s to import (a
model loaded at import): a conversation for another child must not wait for it."""

from __future__ import annotations

import os
import time
from pathlib import Path

_MARK = Path(os.environ["PG_TEST_CRASHED"])
if _MARK.exists():
    time.sleep(2)


def run(input: str) -> str:
    if input == "crash":
        _MARK.touch()
        os._exit(3)
    return f"alive: {input}"
