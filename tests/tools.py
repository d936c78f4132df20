"""External tools some tests need (shellcheck, zizmor, the SARIF Multitool, ...).

A developer without one gets a skip that says how to install it; under CI (the ``CI``
environment variable, which `.ci/run` and GitHub Actions set) a missing tool is a failure, so a
check can never silently stop running where it matters.
"""

from __future__ import annotations

import os
from typing import NoReturn

import pytest


def tool_missing(message: str) -> NoReturn:
    """Skip on a developer's machine; fail under CI, where `.ci/run` installs every tool."""
    if os.environ.get("CI"):
        pytest.fail(f"{message} (CI must install it: see .ci/run)")
    pytest.skip(message)
