"""`python -m pytest_autotune`: the same command line as the `pytest-autotune` script."""

from __future__ import annotations

import sys

from pytest_autotune.cli import main

if __name__ == "__main__":
    sys.exit(main())
