"""HUBL's blended Bellman operator and its bias--variance trade-off (issue 31, tier B, 000#44).

``hubl-blended-bellman-trade-off`` checks, against answers computed here without HUBL's code:

1. lambda = 0 is the base algorithm: HUBL equals ``naive-vi`` (certainty equivalence) and
   ``pessimistic-vi-hoeffding`` on the same data, to round-off.
2. The relabelled backups, computed another way: an episode-by-episode loop accumulates the
   blended targets' sums and the empirical model in dense arrays and runs backward induction;
   HUBL's Q matches for a constant lambda and for the return-scaled schedule.
3. The reshaped MDP's endpoints: its Q at lambda = 0 is Q* (the planning floor's backward
   induction), at lambda = 1 it is Q^{pi_b} (a policy evaluation written out here).
4. Consistency: HUBL's Q converges to the reshaped MDP's Q~ (the population limit; module
   docstring of ``algorithms/offline/hubl.py``) at the parametric rate: the data-weighted RMS
   error's log-log slope in N lies in [-0.65, -0.35] and its last value is small.
5. The variance side: with near-expert data and Hoeffding pessimism at the baseline's constant
   (c_h = 1), blending lowers the sub-optimality at a fixed N (lambda = 0.5 against lambda = 0,
   paired over seeds, the 95% interval of the mean difference below 0).
6. The bias side: on RiverSwim with uniform behaviour data, the reshaped MDP at lambda = 1 (one
   step of improvement on pi_b) has an exact sub-optimality above 0.5 while lambda = 0 has 0, and
   HUBL at lambda = 1 keeps a sub-optimality above 0.3 at the largest N, where lambda = 0's is
   below 0.01: blending buys its variance reduction with a bias towards the behaviour's values.

The control ``hubl-continuation-kept`` (rewards relabelled, bootstrap weight left at 1) fails 2
and 4.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from theorylab.validations.claim import Check, Report, finished_report
from theorylab.validations.registry import register_validation

BENIGN = "random:S=6,A=3,H=8,seed=1"  # reshaped greedy = pi* for every lambda (bias 0)
TRAP = "riverswim:S=5,H=10"  # uniform data: the lambda = 1 greedy swims left


def _dense_P(mdp, h: int) -> np.ndarray:
    P = mdp.P_flat(h)
    return np.asarray(P.todense() if hasattr(P, "todense") else P).reshape(mdp.S, mdp.A, mdp.S)


def blended_q_by_episodes(dataset, lam_tau: np.ndarray) -> np.ndarray:
    """The second implementation: ``Q (B, H, S, A)`` from a loop over episodes and stages.

    For every row (episode k, stage h): the sums of ``r_h + lam_k G_{h+1}`` and the counts of
    ``(h, s, a, s')`` go into dense arrays; then ``Q_h = rbar + (1 - lam) P_hat V_{h+1}``
    with the per-episode continuation folded into the next-state counts.
    """
    B, S, A, H = dataset.n_seeds, dataset.S, dataset.A, dataset.horizon
    K = dataset.N // H
    Q = np.zeros((B, H, S, A))
    for b in range(B):
        n = np.zeros((H, S, A))
        rsum = np.zeros((H, S, A))
        cnext = np.zeros((H, S, A, S))  # sum over samples of (1 - lam_k) 1{s' = .}
        for k in range(K):
            rows = slice(k * H, (k + 1) * H)
            s, a = dataset.states[b, rows], dataset.actions[b, rows]
            r, s2 = dataset.rewards[b, rows], dataset.next_states[b, rows]
            w = 1.0 if dataset.weights is None else dataset.weights[b, rows]
            w = np.broadcast_to(w, (H,))
            lam = lam_tau[b, k]
            for h in range(H):
                g_next = float(r[h + 1 :].sum())
                n[h, s[h], a[h]] += w[h]
                rsum[h, s[h], a[h]] += w[h] * (r[h] + lam * g_next)
                cnext[h, s[h], a[h], s2[h]] += w[h] * (1.0 - lam)
        V = np.zeros(S)
        for h in range(H - 1, -1, -1):
            safe = np.where(n[h] > 0, n[h], 1.0)
            Q[b, h] = np.where(n[h] > 0, (rsum[h] + cnext[h] @ V) / safe, 0.0)
            V = Q[b, h].max(axis=-1)
    return Q


def behaviour_q(mdp, behaviour: np.ndarray) -> np.ndarray:
    """``Q^{pi_b} (H, S, A)`` by policy evaluation on dense arrays, written out here."""
    H = mdp.horizon
    Q = np.zeros((H, mdp.S, mdp.A))
    V = np.zeros(mdp.S)
    for h in range(H - 1, -1, -1):
        Q[h] = np.asarray(mdp.reward(h), dtype=float) + _dense_P(mdp, h) @ V
        V = (behaviour[h] * Q[h]).sum(axis=-1)
    return Q


@dataclass
class HublTradeOff:
    name: str = "hubl-blended-bellman-trade-off"
    statement: str = (
        "HUBL (Geng et al. 2024; trajectory data relabelled with r + lambda G_{h+1} and "
        "continuation 1 - lambda): at lambda = 0 it is the base algorithm (naive VI, Hoeffding "
        "pessimistic VI) to 1e-12; its backups equal an episode-by-episode recomputation to "
        "1e-10; its Q converges to the reshaped MDP's Q~ (reward r + lambda P V^{pi_b}, "
        "continuation 1 - lambda; Q* at lambda = 0, Q^{pi_b} at lambda = 1) at slope -1/2 in N; "
        "on near-expert data with Hoeffding pessimism (c_h = 1) lambda = 0.5 has lower "
        "sub-optimality than lambda = 0; on RiverSwim with uniform data lambda = 1 keeps the "
        "reshaped MDP's bias (> 0.3) where lambda = 0 reaches pi*"
    )
    scales: dict[str, dict] = field(
        default_factory=lambda: {
            "quick": {
                "episodes": [250, 1000, 4000],
                "seeds": 8,
                "variance_episodes": 4000,
                "variance_seeds": 32,
                "trap_episodes": 20000,
                "trap_seeds": 8,
            },
            "full": {
                "episodes": [250, 1000, 4000, 16000, 64000],
                "seeds": 16,
                "variance_episodes": 4000,
                "variance_seeds": 128,
                "trap_episodes": 100000,
                "trap_seeds": 16,
            },
        }  # fmt: skip
    )

    def run(self, scale="quick", *, plot=None, progress=False, seed=0) -> Report:
        from theorylab.algorithms.offline.baselines import naive_vi
        from theorylab.algorithms.offline.coverage import optimal_solution
        from theorylab.algorithms.offline.dataset import behaviour_policy, make_dataset
        from theorylab.algorithms.offline.hubl import hubl, reshaped_q, trajectory_lambdas
        from theorylab.algorithms.offline.pessimistic_vi import pessimistic_vi
        from theorylab.algorithms.offline.scoring import suboptimality
        from theorylab.algorithms.planning.finite_horizon import backward_induction
        from theorylab.mdps import make

        t0 = time.perf_counter()
        cfg = self.scales[scale]
        mdp = make(BENIGN)
        H = mdp.horizon
        checks: list[Check] = []

        # 1-2: identities on one small dataset per behaviour
        base_err = second_err = 0.0
        for cov in (0.0, 0.7):
            ds = make_dataset(mdp, 60 * H, coverage=cov, seeds=4, seed=seed)
            a, b = hubl(ds, lam=0.0), naive_vi(ds)
            base_err = max(base_err, float(np.abs(a.Q - b.Q).max()))
            a = hubl(ds, lam=0.0, penalty="hoeffding")
            b = pessimistic_vi(ds, penalty="hoeffding")
            base_err = max(base_err, float(np.abs(a.Q - b.Q).max()))
            for lam, schedule in ((0.5, "constant"), (1.0, "constant"), (0.8, "return")):
                got = hubl(ds, lam=lam, lam_schedule=schedule).Q
                G = ds.rewards.reshape(ds.n_seeds, -1, H).sum(axis=2)  # (B, K) episode returns
                want = blended_q_by_episodes(ds, trajectory_lambdas(G, lam, schedule))
                second_err = max(second_err, float(np.abs(got - want).max()))
        checks.append(Check(
            "lambda = 0 is the base algorithm", base_err <= 1e-12,
            f"max |Q_HUBL - Q_base| = {base_err:.1e} (naive-vi, pessimistic-vi-hoeffding; "
            "<= 1e-12)", {"max_error": base_err}))  # fmt: skip
        checks.append(Check(
            "backups = an episode-by-episode recomputation", second_err <= 1e-10,
            f"max |Q_HUBL - Q_loop| = {second_err:.1e} over lambda 0.5, 1, return-scaled 0.8 "
            "(<= 1e-10)", {"max_error": second_err}))  # fmt: skip

        # 3: the reshaped MDP's endpoints against independent solvers
        beh = behaviour_policy(mdp, 0.5, "uniform")
        q_star = backward_induction(mdp).Q
        end_err = max(
            float(np.abs(reshaped_q(mdp, beh, 0.0) - q_star).max()),
            float(np.abs(reshaped_q(mdp, beh, 1.0) - behaviour_q(mdp, beh)).max()),
        )
        checks.append(Check(
            "reshaped MDP: Q* at lambda = 0, Q^{pi_b} at lambda = 1", end_err <= 1e-12,
            f"max error {end_err:.1e} (<= 1e-12)", {"max_error": end_err}))  # fmt: skip

        # 4: consistency with the reshaped MDP (population limit), lambda = 0.5 and 1
        Ks = np.asarray(cfg["episodes"])
        curves, worst_slope, last = {}, [], []
        for lam in (0.5, 1.0):
            q_t = reshaped_q(mdp, beh, lam)  # (H, S, A)
            errs = []
            for K in Ks:
                ds = make_dataset(mdp, int(K) * H, coverage=0.5, seeds=cfg["seeds"], seed=seed)
                w = ds.data_distribution  # (H, S, A)
                e = hubl(ds, lam=lam).Q - q_t[None]
                errs.append(float(np.median(np.sqrt((w * e**2).sum(axis=(1, 2, 3)) / w.sum()))))
            slope = float(np.polyfit(np.log(Ks), np.log(errs), 1)[0])
            worst_slope.append(slope)
            last.append(errs[-1])
            curves[f"lambda = {lam}: RMS |Q_HUBL - Q~|"] = np.asarray(errs)
        ok = all(-0.65 <= s <= -0.35 for s in worst_slope) and max(last) <= 0.1
        checks.append(Check(
            "Q_HUBL -> the reshaped MDP's Q~ at rate N^{-1/2}", ok,
            "slopes " + ", ".join(f"{s:.3f}" for s in worst_slope)
            + " (in [-0.65, -0.35]); last RMS errors " + ", ".join(f"{x:.4f}" for x in last)
            + " (<= 0.1)", {"slopes": worst_slope, "last_errors": last}))  # fmt: skip

        # 5: the variance side -- blending reduces what pessimism costs
        v_star = optimal_solution(mdp).value
        ds = make_dataset(mdp, cfg["variance_episodes"] * H, coverage=0.7,
                          seeds=cfg["variance_seeds"], seed=seed + 1)  # fmt: skip
        sub = {lam: suboptimality(mdp, hubl(ds, lam=lam, penalty="hoeffding").policy, v_star)
               for lam in (0.0, 0.5)}  # fmt: skip
        diff = sub[0.5] - sub[0.0]
        hi = float(diff.mean() + 1.96 * diff.std(ddof=1) / np.sqrt(diff.size))
        checks.append(Check(
            "variance side: lambda = 0.5 beats lambda = 0 under pessimism", hi < 0.0,
            f"mean sub-optimality {sub[0.0].mean():.3f} (lambda 0) -> {sub[0.5].mean():.3f} "
            f"(lambda 0.5); paired difference {diff.mean():.3f}, 95% upper {hi:.3f} (< 0)",
            {"lambda0": float(sub[0.0].mean()), "lambda05": float(sub[0.5].mean()),
             "upper": hi}))  # fmt: skip

        # 6: the bias side -- the reshaped MDP at lambda = 1 is not the original
        trap = make(TRAP)
        v_trap = optimal_solution(trap).value
        beh_t = behaviour_policy(trap, 0.0, "uniform")
        bias = {lam: float(suboptimality(trap, reshaped_q(trap, beh_t, lam).argmax(-1)[None],
                                         v_trap)[0]) for lam in (0.0, 1.0)}  # fmt: skip
        ds = make_dataset(trap, cfg["trap_episodes"] * trap.horizon, coverage=0.0,
                          seeds=cfg["trap_seeds"], seed=seed + 2)  # fmt: skip
        med = {lam: float(np.median(suboptimality(trap, hubl(ds, lam=lam).policy, v_trap)))
               for lam in (0.0, 1.0)}  # fmt: skip
        ok = bias[1.0] > 0.5 and bias[0.0] <= 1e-12 and med[1.0] > 0.3 and med[0.0] < 0.01
        checks.append(Check(
            "bias side: lambda = 1 keeps the reshaped MDP's bias", ok,
            f"exact bias {bias[0.0]:.3f} (lambda 0) / {bias[1.0]:.3f} (lambda 1, > 0.5); HUBL's "
            f"median sub-optimality at K = {cfg['trap_episodes']}: {med[0.0]:.4f} (< 0.01) / "
            f"{med[1.0]:.3f} (> 0.3)", {"bias": bias, "median": med}))  # fmt: skip

        if plot:
            from theorylab.plotting import plot_lines

            plot_lines(Ks, curves, xlabel="episodes K", ylabel="data-weighted RMS error",
                       title="HUBL converges to the reshaped MDP", logx=True, logy=True,
                       path=plot)  # fmt: skip
        config = {**cfg, "mdp": BENIGN, "trap": TRAP, "seed": seed}
        return finished_report(self.name, self.statement, scale, checks, t0, config, figure=plot)


register_validation(
    HublTradeOff(),
    controls=("hubl-continuation-kept",),
    targets={"offline": ("hubl",)},
    papers=("000#44",),
)
