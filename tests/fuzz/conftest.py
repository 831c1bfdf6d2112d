"""tests/fuzz: schemathesis against the real API (see run_fuzz.py)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))  # run_fuzz, fuzz_hooks
