"""A global agent with many local agents: SUBSAMPLE-Q's optimality gap against the number k of
sub-sampled agents (seed row 001#3, Anand & Qu 2024; reconstructed:
``algorithms/multiagent/subsample_q.py``).

``subsample-q-gap-vs-k`` checks, on ``local-agents:instance=demand`` (gamma = 0.9):

1. The oracle: V* of the count chain equals V* of the joint chain on (g, s_1..s_n) (n = 6, 384
   states, policy iteration) to 1e-8; and the deployed policy's value from the hypergeometric
   formula equals the joint chain's value of the policy written here by enumerating all C(n, k)
   subsets (k = 3) to 1e-8.
2. The rate, both sides: with the exact Bellman operator (eps_{k,m} = 0), the slope of
   log max_s [V*(s) - V^{pi_k}(s)] on log k has its 95% interval inside [-1, -0.3] (the paper's
   O~(1/sqrt(k)): slope -1/2 up to log factors; a gap that does not shrink, or vanishes, fails).
3. Flat in n: the learner never reads n (the learned Q is bit-identical for every n, with the
   same seed and m draws) and the sup gap at k = 16 varies by at most a factor 1.5 over n.
4. The floor set by m: at k = 32 the mean sup gap over seeds with m = 5 draws exceeds the exact
   operator's gap (95% bootstrap interval of the difference above 0) and decreases with m; the
   measured Bellman noise ||Q_hat - Q*_k|| falls as m^-1/2 (slope in [-0.75, -0.3]).

The control ``subsample-q-fixed-subset`` (the same k agents observed at every step, no
re-sampling at deployment) fails 2: its worst-case gap does not shrink with k.
"""

from __future__ import annotations

import itertools
import math
import time
from dataclasses import dataclass, field

import numpy as np
from scipy import stats

from theorylab.validations.claim import Check, Report, finished_report
from theorylab.validations.registry import register_validation

SPEC = "local-agents:n={n},instance=demand,gamma=0.9"
SLOPE_RANGE = (-1.0, -0.3)
FLAT_RATIO = 1.5
K_FLAT = 16
K_FLOOR = 32


def slope_ci(k: np.ndarray, gap: np.ndarray, confidence: float = 0.95):
    """OLS slope of log gap on log k and its t interval from the residuals (the gaps of the
    exact operator are deterministic, so the interval is over the k's, not over seeds)."""
    fit = stats.linregress(np.log(k), np.log(gap))
    t = stats.t.ppf((1 + confidence) / 2, len(k) - 2)
    return float(fit.slope), float(fit.slope - t * fit.stderr), float(fit.slope + t * fit.stderr)


def subset_policy_on_joint_chain(problem, greedy: np.ndarray, k: int) -> np.ndarray:
    """``pi (G 2^n, A)`` on the joint chain: the average over all C(n, k) subsets of agents of
    the one-hot greedy action of the subset's count (written without hypergeometric weights)."""
    n, G, A = problem.n, problem.G, problem.A
    X = 2**n
    x = np.arange(X)
    pi = np.zeros((G, X, A))
    subsets = list(itertools.combinations(range(n), k))
    for sub in subsets:
        mask = sum(1 << i for i in sub)
        j = np.array([bin(v & mask).count("1") for v in x])  # (X,)
        for g in range(G):
            pi[g, x, greedy[g, j]] += 1.0
    return (pi / len(subsets)).reshape(G * X, A)


def oracle_errors(seed: int = 0) -> tuple[float, float]:
    """(|V*_count - V*_joint|_inf, |V^pi deployed (count) - V^pi (joint)|_inf) at n = 6, k = 3."""
    from theorylab.algorithms.multiagent import subsample_q as sq
    from theorylab.algorithms.planning.evaluation import evaluate_discounted
    from theorylab.algorithms.planning.value_iteration import policy_iteration
    from theorylab.mdps import make

    p = make(SPEC.format(n=6))
    joint = p.joint_mdp()
    pop = np.array([bin(v).count("1") for v in range(2**p.n)])  # (2^n,)
    v_count = policy_iteration(p.count_mdp()).V.reshape(p.G, p.n + 1)[:, pop]  # (G, 2^n)
    v_joint = policy_iteration(joint).V.reshape(p.G, -1)
    learned = sq.learn(p, 3, None, np.random.default_rng(seed))
    d_count = sq.deployed_values(p, learned)[:, pop]
    d_joint = evaluate_discounted(joint, subset_policy_on_joint_chain(p, learned.greedy(), 3))
    return (float(np.abs(v_count - v_joint).max()),
            float(np.abs(d_count - d_joint.reshape(p.G, -1)).max()))  # fmt: skip


@dataclass
class SubsampleQGapVsK:
    name: str = "subsample-q-gap-vs-k"
    statement: str = (
        "SUBSAMPLE-Q on a demand-response instance (2 tariffs, n binary local agents, gamma = "
        "0.9; reconstructed, not the paper's instance): the exact count chain equals the joint "
        "chain; with the exact Bellman operator the worst-case optimality gap of the deployed "
        "(re-sampling) policy falls as k^a with the 95% interval of a inside [-1, -0.3] "
        "(paper: O~(1/sqrt(k))); learning does not read n and the gap varies by at most 1.5x "
        "over n; with m draws per update the gap has a floor above the exact gap that falls with "
        "m, and the Bellman noise falls as m^-1/2"
    )
    scales: dict[str, dict] = field(
        default_factory=lambda: {
            "quick": {"n": 256, "k": [4, 8, 16, 32], "ns": [64, 256], "m": [5, 50],
                      "seeds": 4},
            "full": {"n": 512, "k": [4, 8, 16, 32, 64], "ns": [64, 256, 1024],
                     "m": [5, 50, 500], "seeds": 6},
        }
    )  # fmt: skip

    def run(self, scale="quick", *, plot=None, progress=False, seed=0) -> Report:
        import theorylab as tl
        from theorylab.algorithms.multiagent import subsample_q as sq
        from theorylab.mdps import make

        t0 = time.perf_counter()
        cfg = self.scales[scale]
        checks: list[Check] = []

        e_star, e_pi = oracle_errors(seed)
        checks.append(Check(
            "count chain = joint chain (V*, deployed policy)", max(e_star, e_pi) <= 1e-8,
            f"n = 6: |V*_count - V*_joint| = {e_star:.1e}, |V^pi_hypergeometric - "
            f"V^pi_all-subsets| = {e_pi:.1e} (k = 3; <= 1e-8)",
            {"v_star": e_star, "deployed": e_pi}))  # fmt: skip

        ks = np.asarray(cfg["k"])
        r = tl.run("subsample-q", SPEC.format(n=cfg["n"]), k=list(ks), seeds=1, seed=seed)
        gap = r.sup_gap[0]  # (M,)
        if np.all(gap > 0):
            slope, lo, hi = slope_ci(ks, gap)
            ok = SLOPE_RANGE[0] <= lo and hi <= SLOPE_RANGE[1]
            pts = ", ".join(f"k={k}: {g:.4f}" for k, g in zip(ks, gap, strict=True))
            detail = f"slope {slope:.3f} [{lo:.3f}, {hi:.3f}] (95%, inside {SLOPE_RANGE}); {pts}"
        else:
            slope, lo, hi, ok = math.nan, math.nan, math.nan, False
            detail = f"a gap is <= 0 (no log-log fit): {gap.tolist()}"
        checks.append(Check(
            f"gap ~ k^-1/2 (exact operator, n = {cfg['n']})", ok, detail,
            {"slope": slope, "ci": [lo, hi], "gap": gap.tolist()}))  # fmt: skip

        qs, gaps_n = [], {}
        for n in cfg["ns"]:
            p = make(SPEC.format(n=n))
            qs.append(sq.subsample_q(p, K_FLAT, 10, np.random.default_rng(seed)).Q)
            gaps_n[n] = float(tl.run("subsample-q", p, k=K_FLAT, seeds=1, seed=seed).sup_gap[0, 0])
        same = all(np.array_equal(qs[0], q) for q in qs[1:])
        ratio = max(gaps_n.values()) / min(gaps_n.values())
        checks.append(Check(
            "flat in n", same and ratio <= FLAT_RATIO,
            f"learned Q identical over n = {cfg['ns']}: {same}; sup gap at k = {K_FLAT}: "
            + ", ".join(f"n={n}: {g:.4f}" for n, g in gaps_n.items())
            + f" (max/min {ratio:.3f} <= {FLAT_RATIO})",
            {"gaps": gaps_n, "ratio": ratio}))  # fmt: skip

        exact = float(gap[list(ks).index(K_FLOOR)])
        ms = np.asarray(cfg["m"])
        per_m, noise = [], []
        for m in ms:
            rm = tl.run("subsample-q", SPEC.format(n=cfg["n"]), k=K_FLOOR, samples=int(m),
                        seeds=cfg["seeds"], seed=seed)  # fmt: skip
            per_m.append(rm.sup_gap[:, 0])
            noise.append(float(rm.bellman_noise.mean()))
        means = [float(g.mean()) for g in per_m]
        rng = np.random.default_rng(seed)
        boot = rng.choice(per_m[0], size=(2000, per_m[0].size)).mean(axis=1) - exact
        floor_lo = float(np.percentile(boot, 2.5))
        n_slope = float(stats.linregress(np.log(ms), np.log(noise)).slope)
        ok = (
            floor_lo > 0
            and all(b < a for a, b in zip(means, means[1:], strict=False))
            and -0.75 <= n_slope <= -0.3
        )
        checks.append(Check(
            f"floor set by m (k = {K_FLOOR})", ok,
            "mean sup gap " + ", ".join(f"m={m}: {g:.4f}" for m, g in zip(ms, means, strict=True))
            + f" vs exact {exact:.4f} (m={ms[0]} excess 95% low {floor_lo:.4f} > 0, decreasing);"
            " Bellman noise " + ", ".join(f"m={m}: {e:.4f}" for m, e in zip(ms, noise, strict=True))
            + f" (slope {n_slope:.3f} in [-0.75, -0.3])",
            {"means": means, "exact": exact, "noise": noise, "noise_slope": n_slope}))  # fmt: skip

        if plot:
            from theorylab.plotting import plot_regret, save_figure

            ref = gap[0] * np.sqrt(ks[0] / ks)
            ax = plot_regret({"subsample-q (exact operator)": gap[None]}, x=ks,
                             xlabel="sub-sampled agents k", ylabel="max_s V*(s) - V^pi(s)",
                             title=f"subsample-q, n = {cfg['n']}",
                             references={"k^-1/2 (from the first k)": ref})  # fmt: skip
            ax.set_xscale("log")
            ax.set_yscale("log")
            save_figure(ax.figure, plot)
        config = {**cfg, "seed": seed, "spec": SPEC}
        return finished_report(self.name, self.statement, scale, checks, t0, config, figure=plot)


register_validation(
    SubsampleQGapVsK(),
    controls=("subsample-q-fixed-subset",),
    targets={"local-agents": ("subsample-q",)},
    papers=("001#3",),
)
