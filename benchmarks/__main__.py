"""``python -m benchmarks``: fasteval against its peers, side by side (``benchmarks/run.py`` says what it runs)."""
import sys

from .run import main

sys.exit(main())
