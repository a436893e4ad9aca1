"""``python -m kafkabatch``: the command line (see :mod:`kafkabatch.cli`)."""

from __future__ import annotations

import sys

from kafkabatch.cli import main

__all__ = ["main"]

if __name__ == "__main__":
    sys.exit(main())
