"""``mkdocs build --strict`` of the documentation site into a folder, as CI builds it (shared by
tests/test_docs_site.py and tests/test_docs_rendering.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def build_site(site_dir: Path) -> subprocess.CompletedProcess:
    """Build the site into ``site_dir``; the finished process (its output captured)."""
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    return subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site_dir)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
