"""A tiny deterministic agent for the sweep tests (a module of its own so that process-pool
workers can import it by reference: they receive the parent's sys.path)."""

from __future__ import annotations

from pathlib import Path

import numpy as np


class RandomPolicyAgent:
    """Plays a uniformly random deterministic policy drawn from each seed's own generator.

    fail_flag: if this path exists when the agent is built, raise (simulates a failing cell).
    counter: a file that gets one line per construction (counts cell computations, across
    processes).
    """

    def __init__(self, env, n_seeds, rngs, fail_flag: str = "", counter: str = "") -> None:
        if counter:
            with open(counter, "a", encoding="utf-8") as fh:
                fh.write("built\n")
        if fail_flag and Path(fail_flag).exists():
            raise RuntimeError(f"simulated failure: {fail_flag} exists")
        self.env, self.n_seeds, self.rngs = env, n_seeds, rngs

    def policy(self) -> np.ndarray:
        # (B, H, S) int
        return np.stack(
            [r.integers(0, self.env.A, size=(self.env.H, self.env.S)) for r in self.rngs]
        )

    def update(self, traj) -> None:
        pass
