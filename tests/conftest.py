"""Shared pytest configuration.

* Puts tests/ on ``sys.path`` so test files can ``from strategies import ...`` whatever pytest's
  import mode (prepend, append or importlib).
* Registers and loads a hypothesis profile ``theorylab`` with ``deadline=None``: the machines that
  run the suite are shared, so wall-clock deadlines would make tests flaky without testing anything.
  Each test sets its own ``max_examples``. Locally the example database is kept
  (``.hypothesis/``), so a failure found once is replayed first on the next run.
* In CI (the ``CI`` environment variable set to anything but ``""``, ``0`` or ``false``, as GitHub
  Actions, GitLab and ``.ci/run`` do) the ``ci`` profile is loaded instead: ``derandomize=True``
  (the examples are a fixed function of the test, so a CI run passes or fails the same way every
  time), no example database (nothing to replay from a previous machine), and the reproduction
  blob of a failure printed. ``HYPOTHESIS_PROFILE=NAME`` overrides both choices.
"""

from __future__ import annotations

import os
import sys

from hypothesis import settings
from hypothesis.database import DirectoryBasedExampleDatabase

TESTS_DIR = os.path.dirname(os.path.abspath(__file__))
if TESTS_DIR not in sys.path:
    sys.path.insert(0, TESTS_DIR)
EXAMPLES_DIR = os.path.join(os.path.dirname(TESTS_DIR), ".hypothesis", "examples")  # gitignored

# Both profiles are explicit, so neither depends on what hypothesis itself guesses about CI.
settings.register_profile(
    "theorylab",
    deadline=None,
    derandomize=False,
    database=DirectoryBasedExampleDatabase(EXAMPLES_DIR),
)
settings.register_profile("ci", deadline=None, print_blob=True, derandomize=True, database=None)


def hypothesis_profile(environ=os.environ) -> str:
    """``HYPOTHESIS_PROFILE`` if set, else ``ci`` under CI, else ``theorylab``."""
    if environ.get("HYPOTHESIS_PROFILE"):
        return environ["HYPOTHESIS_PROFILE"]
    ci = environ.get("CI", "").strip().lower()
    return "ci" if ci not in ("", "0", "false", "no") else "theorylab"


settings.load_profile(hypothesis_profile())
