"""``python -m probegate.github COMMAND``: what ``entrypoint.sh`` runs."""

import sys

from probegate.github.cli import main

sys.exit(main())
