"""Multi-batch policy evaluation: error against the number of batches K on a hidden-chain
instance (seed row 001#25, Johnson, Pike-Burke & Rebeschini 2023; illustrative, reconstructed:
``algorithms/linear/multi_batch.py``).

``multi-batch-error-vs-batches`` checks, with n = 4 d^2 queries (poly(d)) on
``pointer-chase:d,H=8``:

1. The exact value: the chain sum ``V = H * sign`` equals backward induction over all 2^d states
   at every stage (d = 8, written out here with the model's successor function) to 1e-12.
2. One batch fails: at K = 1 the mean |V_hat - V| over seeds is >= H/2 at every d.
3. Error against K, both sides: for every K < H the mean |error| lies within 0.5 of H - K - 1
   (the number of stages whose chain state no K-batch learner can have seen; K > 1 is not
   enough); at K = H it is <= 0.5 (the noise level).
4. The sanity side: with an exponential budget (n = 4 H 2^d, d = 6) one batch suffices:
   ``batch-exhaustive-pe`` has mean |error| <= 0.5.

The control ``multi-batch-frozen-frontier`` (each batch chosen without the previous batches'
answers: the frontier never moves) fails 3.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from theorylab.validations.claim import Check, Report, finished_report
from theorylab.validations.registry import register_validation

H = 8
TOL = 0.5
NOISE = 0.25  # reward noise sd: the K >= H error is about 0.15, a third of TOL


def value_by_enumeration(problem) -> float:
    """V(chain[0]) by backward induction over every state at every stage (the model's exact
    rewards and successor function; no use of the chain list but its start)."""
    states = np.arange(problem.n_states)
    V = np.zeros(problem.n_states)  # V_{h+1}
    for h in range(problem.H - 1, -1, -1):
        nxt = problem.successor(h, states)
        cont = np.where(nxt >= 0, V[np.maximum(nxt, 0)], 0.0)
        V = problem.reward(states) + cont
    return float(V[problem.start])


@dataclass
class MultiBatchErrorVsBatches:
    name: str = "multi-batch-error-vs-batches"
    statement: str = (
        "K-batch policy evaluation with n = 4 d^2 queries on a hidden-chain linear instance "
        "(H = 8, 2^d states per stage, reward noise sd 0.25; reconstructed, not the paper's "
        "instance): at K = 1 the error is >= H/2; for K < H it equals H - K - 1 (+- 0.5: the "
        "stages no K-batch learner can have reached); at K = H it is <= 0.5; with an "
        "exponential budget (n = 4 H 2^d) one batch suffices (error <= 0.5); the exact value "
        "matches backward induction over all states"
    )
    scales: dict[str, dict] = field(
        default_factory=lambda: {
            "quick": {"d": [8, 16], "batches": [1, 2, 4, 8], "seeds": 8},
            "full": {"d": [8, 16, 32], "batches": [1, 2, 3, 4, 6, 8, 16], "seeds": 32},
        }
    )

    def run(self, scale="quick", *, plot=None, progress=False, seed=0) -> Report:
        import theorylab as tl
        from theorylab.mdps import make

        t0 = time.perf_counter()
        cfg = self.scales[scale]
        checks: list[Check] = []

        p = make(f"pointer-chase:d=8,H={H},seed={seed}")
        err = abs(value_by_enumeration(p) - p.value) + abs(p.value - H * p.sign)
        checks.append(Check(
            "exact value = backward induction over all states", err <= 1e-12,
            f"|V_chain - V_enumeration| + |V - H sign| = {err:.1e} (<= 1e-12)",
            {"error": err}))  # fmt: skip

        Ks = np.asarray(cfg["batches"])
        curves, one, worst, last = {}, {}, 0.0, {}
        for d in cfg["d"]:
            spec = f"pointer-chase:d={d},H={H},noise={NOISE},seed={seed}"
            r = tl.run("multi-batch-pe", spec, queries=4 * d * d, batches=list(Ks),
                       seeds=cfg["seeds"], seed=seed)  # fmt: skip
            mae = r.mean_abs_error()  # (M,)
            curves[f"d = {d}, n = {4 * d * d}"] = np.abs(r.errors)
            one[d] = float(mae[0])
            below = Ks < H
            gap = np.abs(mae[below] - (H - Ks[below] - 1))
            worst = max(worst, float(gap.max()))
            last[d] = float(mae[Ks >= H].max())
        ok = all(v >= H / 2 for v in one.values())
        checks.append(Check(
            "one batch of poly(d) queries fails", ok,
            "mean |error| at K = 1: " + ", ".join(f"d={d}: {v:.3f}" for d, v in one.items())
            + f" (>= H/2 = {H / 2})", {"K1": one}))  # fmt: skip
        ok = worst <= TOL and max(last.values()) <= TOL
        checks.append(Check(
            "error = H - K - 1 for K < H, noise level at K >= H", ok,
            f"max_K<H |mean|error| - (H - K - 1)| = {worst:.3f} (<= {TOL}); mean |error| at "
            "K >= H: " + ", ".join(f"d={d}: {v:.3f}" for d, v in last.items()) + f" (<= {TOL})",
            {"worst_gap": worst, "at_H": last}))  # fmt: skip

        d_s = 6
        spec = f"pointer-chase:d={d_s},H={H},noise={NOISE},seed={seed}"
        r = tl.run("batch-exhaustive-pe", spec,
                   queries=4 * H * 2**d_s, batches=1, seeds=cfg["seeds"], seed=seed)  # fmt: skip
        ex = float(r.mean_abs_error()[0])
        checks.append(Check(
            "exponential budget: one batch suffices", ex <= TOL,
            f"batch-exhaustive-pe, d = {d_s}, n = {4 * H * 2**d_s}: mean |error| {ex:.3f} "
            f"(<= {TOL})", {"exhaustive": ex}))  # fmt: skip

        if plot:
            from theorylab.plotting import plot_regret, save_figure

            ax = plot_regret(curves, x=Ks, xlabel="batches K", ylabel="|V_hat - V|",
                             title=f"multi-batch-pe, H = {H}, n = 4 d^2",
                             references={"H - K - 1": np.maximum(H - Ks - 1, 0).astype(float)},
                             )  # fmt: skip
            save_figure(ax.figure, plot)
        config = {**cfg, "H": H, "seed": seed}
        return finished_report(self.name, self.statement, scale, checks, t0, config, figure=plot)


register_validation(
    MultiBatchErrorVsBatches(),
    controls=("multi-batch-frozen-frontier",),
    targets={"multi-batch": ("multi-batch-pe",)},
    papers=("001#25",),
)
