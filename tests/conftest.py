"""Shared pytest configuration.

* Puts tests/ on ``sys.path`` so test files can ``from strategies import ...`` whatever pytest's
  import mode (prepend, append or importlib).
* Registers and loads a hypothesis profile ``theorylab`` with ``deadline=None``: the machines that
  run the suite are shared, so wall-clock deadlines would make tests flaky without testing anything.
  Each test sets its own ``max_examples``. ``HYPOTHESIS_PROFILE=ci`` selects a profile that also
  prints the reproduction blob of a failure.
"""

from __future__ import annotations

import os
import sys

from hypothesis import settings

TESTS_DIR = os.path.dirname(os.path.abspath(__file__))
if TESTS_DIR not in sys.path:
    sys.path.insert(0, TESTS_DIR)

settings.register_profile("theorylab", deadline=None)
settings.register_profile("ci", deadline=None, print_blob=True)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "theorylab"))
