"""GORL's guided per-sample constraint weights, tabular (issue 31, tier B, 000#9).

``gorl-guided-beats-best-fixed-weight`` runs ``gorl`` (``algorithms/offline/gorl.py``) on a random
MDP (S = 8, A = 5, H = 8) with mixed-quality data (10 episodes of ``0.3 pi* + 0.7 adversarial``)
and 3 expert demonstrations per seed, the critic's unseen pairs at the optimistic H - h (the
extrapolation error a policy constraint guards against). It checks, against answers computed
here:

1. The actor's step is the maximiser of the per-sample objective
   ``sum_i (1 - w_i) <pi, q> - alpha w_i ||pi - e_{a_i}||^2`` over the simplex: cvxpy, given the
   samples one by one, agrees to 1e-6 on random instances (random weights, q, alpha).
2. Its endpoints are the library's baselines: w = 1 everywhere is ``behaviour-cloning``'s policy
   and w = 0 (unseen pairs at 0) has ``naive-vi``'s values, to 1e-12.
3. Adaptive beats the best fixed weight: the exact value of guided GORL minus that of the
   constant weight best on average over the grid w = 0, 0.1, ..., 1 (chosen on the same seeds, in
   the baseline's favour) has a 95% lower bound above 0.
4. The weights go constraint-heavy on expert samples: the mean weight of samples whose action is
   pi*'s exceeds that of the others by at least 0.3.

The control ``gorl-weights-inverted`` (w_i -> 1 - w_i) fails 3 and 4.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from theorylab.validations.claim import Check, Report, finished_report
from theorylab.validations.registry import register_validation

MDP = "random:S=8,A=5,H=8,seed=1"
GRID = tuple(round(0.1 * k, 1) for k in range(11))


def _ci(x: np.ndarray) -> tuple[float, float]:
    return float(x.mean()), float(1.96 * x.std(ddof=1) / np.sqrt(x.size))


def actor_by_cvxpy(q: np.ndarray, actions: np.ndarray, w: np.ndarray, alpha: float) -> np.ndarray:
    """The per-sample objective written out sample by sample and maximised by cvxpy."""
    import cvxpy as cp

    A = q.size
    pi = cp.Variable(A)
    terms = [(1 - wi) * (q @ pi) - alpha * wi * cp.sum_squares(pi - np.eye(A)[a])
             for a, wi in zip(actions, w, strict=True)]  # fmt: skip
    cp.Problem(cp.Maximize(cp.sum(terms)), [pi >= 0, cp.sum(pi) == 1]).solve()
    return np.asarray(pi.value)


@dataclass
class GorlGuided:
    name: str = "gorl-guided-beats-best-fixed-weight"
    statement: str = (
        "GORL (Yang et al. 2023), tabular: per-sample weights between Q-maximisation and a "
        "behaviour-cloning constraint, set by 3 expert demonstrations. Its actor step equals "
        "cvxpy's maximiser to 1e-6 and its endpoints are behaviour cloning and naive VI to "
        "1e-12; on mixed-quality data its exact value exceeds that of the best fixed weight "
        "(95% lower bound > 0); expert-action samples get weights at least 0.3 above the others"
    )
    scales: dict[str, dict] = field(
        default_factory=lambda: {
            "quick": {"seeds": 200, "episodes": 10, "coverage": 0.3, "demos": 3, "alpha": 1.0},
            "full": {"seeds": 2000, "episodes": 10, "coverage": 0.3, "demos": 3, "alpha": 1.0},
        }  # fmt: skip
    )

    def run(self, scale="quick", *, plot=None, progress=False, seed=0) -> Report:
        from theorylab.algorithms.offline.baselines import behaviour_cloning, naive_vi
        from theorylab.algorithms.offline.coverage import optimal_solution
        from theorylab.algorithms.offline.dataset import make_dataset
        from theorylab.algorithms.offline.gorl import gorl, gorl_actor
        from theorylab.algorithms.offline.scoring import policy_values
        from theorylab.mdps import make

        t0 = time.perf_counter()
        cfg = self.scales[scale]
        mdp = make(MDP)
        H, B, alpha = mdp.horizon, cfg["seeds"], cfg["alpha"]
        checks: list[Check] = []

        # 1: the actor against cvxpy
        rng = np.random.default_rng(seed)
        err = 0.0
        for _ in range(6):
            n_i = int(rng.integers(1, 6))
            acts, w = rng.integers(0, 5, n_i), rng.random(n_i)
            q, a_ = rng.random(5) * 3, float(rng.choice([0.3, 1.0, 3.0]))
            c = np.bincount(acts, weights=w, minlength=5)
            got = gorl_actor(q, c, np.array(n_i - w.sum()), np.array(w.sum()), a_)
            err = max(err, float(np.abs(got - actor_by_cvxpy(q, acts, w, a_)).max()))
        checks.append(Check(
            "actor step = cvxpy's maximiser of the per-sample objective", err <= 1e-6,
            f"max |pi - pi_cvxpy| = {err:.1e} over 6 random instances (<= 1e-6)",
            {"max_error": err}))  # fmt: skip

        # 2: endpoints
        ds = make_dataset(mdp, cfg["episodes"] * H, coverage=cfg["coverage"],
                          other="adversarial", seeds=B, seed=seed)  # fmt: skip
        demos = make_dataset(mdp, cfg["demos"] * H, coverage=1.0, seeds=B, seed=seed + 1)
        bc_err = float(np.abs(gorl(ds, weights="constant", w=1.0).policy
                              - behaviour_cloning(ds).policy).max())  # fmt: skip
        nv_err = float(np.abs(gorl(ds, weights="constant", w=0.0, unseen="zero").V
                              - naive_vi(ds).V).max())  # fmt: skip
        checks.append(Check(
            "w = 1 is behaviour cloning, w = 0 is naive VI", max(bc_err, nv_err) <= 1e-12,
            f"policy error vs behaviour-cloning {bc_err:.1e}; value error vs naive-vi "
            f"{nv_err:.1e} (<= 1e-12)", {"bc": bc_err, "naive": nv_err}))  # fmt: skip

        # 3: guided vs the best fixed weight
        fixed = {w: policy_values(mdp, gorl(ds, weights="constant", w=w, alpha=alpha).policy)
                 for w in GRID}  # fmt: skip
        best = max(GRID, key=lambda w: fixed[w].mean())
        res = gorl(ds, demos=demos, alpha=alpha)
        guided = policy_values(mdp, res.policy)
        m, h = _ci(guided - fixed[best])
        v_star = optimal_solution(mdp).value
        checks.append(Check(
            "guided weights beat the best fixed weight", m - h > 0,
            f"V(guided) = {guided.mean():.4f}, best fixed w = {best}: {fixed[best].mean():.4f} "
            f"(V* = {v_star:.4f}); paired difference {m:.4f}, 95% lower {m - h:.4f} (> 0)",
            {"guided": float(guided.mean()), "best_w": best, "best": float(fixed[best].mean()),
             "lower": m - h}))  # fmt: skip

        # 4: constraint-heavy on expert samples
        wi = res.info["sample_weights"]  # (B, N)
        pi_star = np.asarray(optimal_solution(mdp).policy)  # (H, S)
        expert = pi_star[ds.stages, ds.states] == ds.actions
        gap = float(wi[expert].mean() - wi[~expert].mean())
        checks.append(Check(
            "weights constraint-heavy on expert-action samples", gap >= 0.3,
            f"mean w: {wi[expert].mean():.3f} on pi*-action samples, {wi[~expert].mean():.3f} "
            f"on the others (gap {gap:.3f} >= 0.3)", {"gap": gap}))  # fmt: skip

        if plot:
            from theorylab.plotting import plot_lines

            x = np.asarray(GRID)
            plot_lines(x, {"fixed weight w": np.array([fixed[w].mean() for w in GRID]),
                           "guided (GORL)": np.full(x.size, guided.mean()),
                           "V*": np.full(x.size, v_star)},
                       xlabel="constant constraint weight w",
                       ylabel="exact value (mean over seeds)",
                       title="GORL: guided per-sample weights vs every fixed weight",
                       path=plot)  # fmt: skip
        config = {**cfg, "mdp": MDP, "grid": list(GRID), "seed": seed}
        return finished_report(self.name, self.statement, scale, checks, t0, config, figure=plot)


register_validation(
    GorlGuided(),
    controls=("gorl-weights-inverted",),
    targets={"offline": ("gorl",)},
    papers=("000#9",),
)
