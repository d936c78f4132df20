"""An agent whose import takes 30 s (a model loaded at import): probegate's wait for it ends."""

from __future__ import annotations

import time

time.sleep(30)


def run(input: str) -> str:
    return input
