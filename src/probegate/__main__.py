"""``python -m probegate``."""

from probegate.cli import entry_point

entry_point()
