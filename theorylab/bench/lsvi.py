"""Benchmark: LSVI-UCB throughput and memory, against rlberry-scool's LSVIUCBAgent.

Problem (the reference's): the TabulaRL/rlberry chain with one-hot features, ``onehot:base=chain``
with L = 10 states (d = S A = 20) and L = 50 states (d = 100), H = 20, K in {300, 2000}, with 1 and
32 seeds batched (quick: d = 20, K = 300 only). Each configuration is one full
``theorylab.run("lsvi-ucb", ...)`` -- so exact regret and rollouts are inside the timing -- with
c = 0.05, in both regression modes of theorylab.algorithms.linear.lsvi:

* ``history``: the paper's organisation (all past samples' targets re-summed every episode from
  the stored indices; O(k) per step on top of the O(S A d^2) policy table);
* ``statistics``: the same sums through the (d, S) statistics M_h (O(d S) per step whatever k);
  what ``targets="auto"`` picks here (S <= K).

Reported per row: seed-episodes per second (B K / wall seconds; for B = 1 this is the per-seed
rate), batch episodes per second (K / wall), the speed-up over the reference's 2 episodes/s, the
peak memory traced during a second, identical run (``tracemalloc``: numpy arrays and Python
objects allocated by the run), and the agent's own state (``memory_bytes``: history, Gram
matrices, statistics).

Reference (the brief; not measured here): rlberry-scool 0.7.3's LSVIUCBAgent with one-hot
features on Chain(L=10) (d = 20), K = 300, H = 20 took 148 s (about 2 episodes/s) on a 2-core
machine. ``measure_rlberry(python)`` re-measures it when a Python with rlberry-scool is given (a
separate virtual environment; rlberry is not a dependency of theorylab).
"""

from __future__ import annotations

import json
import subprocess
import time
import tracemalloc
from collections.abc import Sequence

from theorylab.table import left, render, right

RLBERRY_REFERENCE = {
    "problem": "Chain(L=10), one-hot, d=20, K=300, H=20",
    "seconds": 148.0,
    "episodes_per_second": 2.0,
}
CHAIN_L = {20: 10, 100: 50}  # d -> chain length (one-hot d = 2 L)
H = 20
C = 0.05


def _mdp(d: int):
    from theorylab.mdps import make

    return make(f"onehot:base=chain;S={CHAIN_L[d]};H={H}")


def _agent_memory(mdp, B: int, K: int, targets: str) -> int:
    from theorylab.algorithms.online.lsvi_ucb import LSVIUCB
    from theorylab.experiment import env_spec
    from theorylab.seeding import AGENT_STREAM, generators

    agent = LSVIUCB(
        env_spec(mdp), B, generators(0, range(B), AGENT_STREAM), episodes=K, c=C, targets=targets
    )
    return agent.memory_bytes


def bench_one(
    d: int,
    K: int,
    B: int,
    targets: str,
    *,
    memory: bool = True,
    backend: str = "numpy",
    device: str = "cpu",
) -> dict:
    """Time one ``theorylab.run`` of LSVI-UCB (and trace its peak memory in a second run).

    backend, device: ``theorylab.run``'s (the agent's Sherman-Morrison and width kernels, the
    exact regret and the rollouts); a 3-episode run first compiles / warms the backend."""
    import theorylab as tl

    mdp = _mdp(d)
    kw = {"c": C, "targets": targets, "backend": backend, "device": device}
    tl.run("lsvi-ucb", mdp, 3, B, **kw)  # warm-up: numba's cached kernels, torch's first call
    t0 = time.perf_counter()
    res = tl.run("lsvi-ucb", mdp, K, B, **kw)
    wall = time.perf_counter() - t0
    row = {
        "problem": f"onehot chain L={CHAIN_L[d]}",
        "d": d,
        "K": K,
        "H": H,
        "seeds": B,
        "targets": targets,
        "backend": backend + ("" if device == "cpu" else f"[{device}]"),
        "seconds": wall,
        "batch_episodes_per_s": K / wall,
        "seed_episodes_per_s": B * K / wall,
        "speedup_vs_rlberry": B * K / wall / RLBERRY_REFERENCE["episodes_per_second"],
        "final_regret_mean": float(res.cumulative_regret[:, -1].mean()),
        "agent_state_mib": _agent_memory(mdp, B, K, targets) / 2**20,
    }
    if memory:
        tracemalloc.start()
        tl.run("lsvi-ucb", mdp, K, B, **kw)
        row["peak_traced_mib"] = tracemalloc.get_traced_memory()[1] / 2**20
        tracemalloc.stop()
    return row


def bench_lsvi(
    quick: bool = False,
    *,
    dims: Sequence[int] | None = None,
    episodes: Sequence[int] | None = None,
    seeds: Sequence[int] = (1, 32),
    targets: Sequence[str] = ("statistics", "history"),
    memory: bool = True,
    backend: str | None = None,
    device: str = "cpu",
) -> list[dict]:
    """Rows of the LSVI-UCB table (module docstring); quick: d = 20, K = 300 only.

    backend: run LSVI-UCB on this backend (``theorylab bench lsvi --backend numba``); None:
    numpy, ``theorylab.run``'s default."""
    dims = dims or ((20,) if quick else (20, 100))
    episodes = episodes or ((300,) if quick else (300, 2000))
    rows = []
    for d in dims:
        for K in episodes:
            for B in seeds:
                for mode in targets:
                    rows.append(
                        bench_one(
                            d, K, B, mode, memory=memory, backend=backend or "numpy", device=device
                        )
                    )
    return rows


def format_table(rows: list[dict]) -> str:
    """One line per run; the rlberry-scool reference (the brief) under the table."""
    columns = [
        left("problem"),
        *map(right, ("d", "K", "B")),
        left("targets"),
        left("backend"),
        *map(right, ("seconds", "seed-ep/s", "batch-ep/s", "x rlberry", "peak MiB", "state MiB")),
    ]
    body = [
        [
            r["problem"],
            str(r["d"]),
            str(r["K"]),
            str(r["seeds"]),
            r["targets"],
            r.get("backend", "numpy"),
            f"{r['seconds']:.2f}",
            f"{r['seed_episodes_per_s']:.0f}",
            f"{r['batch_episodes_per_s']:.1f}",
            f"{r['speedup_vs_rlberry']:.0f}",
            f"{r.get('peak_traced_mib', float('nan')):.1f}",
            f"{r['agent_state_mib']:.2f}",
        ]
        for r in rows
    ]
    reference = (
        f"reference: rlberry-scool 0.7.3 LSVIUCBAgent, {RLBERRY_REFERENCE['problem']}: "
        f"{RLBERRY_REFERENCE['seconds']:.0f} s ({RLBERRY_REFERENCE['episodes_per_second']:g} "
        "episodes/s), 2-core machine (the brief)"
    )
    return render(columns, body, notes=[reference])


RLBERRY_SCRIPT = r"""
import json, sys, time
import numpy as np
from rlberry_scool.agents.linear import LSVIUCBAgent
from rlberry_scool.envs import Chain
from rlberry_scool.agents.features import FeatureMap

L, K, H = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])

class OneHot(FeatureMap):
    def __init__(self, S, A):
        self.S, self.A, self.shape = S, A, (S * A,)
    def map(self, observation, action):
        f = np.zeros(self.S * self.A)
        f[observation * self.A + action] = 1.0
        return f

env = Chain(L=L, fail_prob=0.0)
agent = LSVIUCBAgent(env, horizon=H, feature_map_fn=lambda e: OneHot(L, 2), gamma=1.0,
                     bonus_scale_factor=1.0, reg_factor=1.0)
t0 = time.perf_counter()
agent.fit(budget=K)
print(json.dumps({"seconds": time.perf_counter() - t0, "episodes": K}))
"""


def measure_rlberry(python: str, L: int = 10, K: int = 300, H: int = H) -> dict:
    """Time rlberry-scool's LSVIUCBAgent in another interpreter (``python`` has rlberry-scool)."""
    out = subprocess.run(
        [python, "-c", RLBERRY_SCRIPT, str(L), str(K), str(H)],
        capture_output=True,
        text=True,
        check=True,
    )
    res = json.loads(out.stdout.strip().splitlines()[-1])
    res["episodes_per_second"] = res["episodes"] / res["seconds"]
    return res
