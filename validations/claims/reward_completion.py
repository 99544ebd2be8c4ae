"""PAMC's low-rank reward completion and its conformal sets (issue 31, tier B, 001#32).

``pamc-completion-phase-transition`` checks ``algorithms/offline/pamc.py`` against the truth it
completes (the full rank-r matrix ``R = U V^T``, known here) and against order statistics:

1. Two solvers agree with the truth: on a noiseless rank-2 ``12 x 10`` instance with 70% of the
   entries observed, rank-r ALS and the minimum nuclear-norm interpolant (cvxpy, an SDP) both
   recover every entry (max error <= 1e-4).
2. The phase transition under a policy-induced mask: m distinct entries drawn without replacement
   from a policy's occupancy ``d(s, a) = d_S(s) pi(a | s)`` (Dirichlet(5) state and action
   weights), noiseless ``30 x 20`` rank-2 matrices. No recovery (relative error <= 1e-4) at any
   m <= r (S + A - r), the number of degrees of freedom of a rank-r matrix (below it the rank-r
   fit is not identifiable); recovery in >= 90% of draws at some m <= 0.75 S A; the median error
   falls by at least 1e3 between two neighbouring m on the grid (sharp); and the unstructured
   estimator (observed entries kept, the rest filled with the observed mean) still has relative
   error >= 0.15 where rank r recovers: it needs all S A entries.
3. Split-conformal coverage, two-sided: Gaussian noise ``y = R(s, a) + N(0, 0.05^2)``; a rank-r
   completion from 400 noisy policy-sampled entries; n calibration draws ``(s, a) ~ d`` with
   fresh noise. The coverage of a fresh draw given the fit and the calibration set is computed
   exactly (the Gaussian CDF summed over d); over many calibration sets its mean must equal
   ``k / (n + 1)``, ``k = ceil((n + 1)(1 - alpha))``, within 4 standard errors, and that value
   lies in ``[1 - alpha, 1 - alpha + 1 / (n + 1))``: not below 1 - alpha, not far above it.
4. Graceful decay under approximate rank: ``R_eps = R + eps E`` (E Gaussian, RMS 1, full rank);
   rank-r ALS from 450 of the 600 entries. The RMS error on the unobserved entries is below 1e-4
   at eps = 0 and between 0.5 eps and 2 eps for eps in {1e-3, 1e-2, 1e-1} (log-log slope in
   [0.9, 1.1]): it grows linearly with the distance from rank r, without a cliff.

Controls: ``pamc-conformal-uncorrected`` (the plain empirical (1 - alpha)-quantile, no
finite-sample correction) under-covers and fails 3; ``pamc-rank-misspecified`` (ALS at rank
r - 1 = 1) fails 1, 2 and 4.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import numpy as np
from scipy.stats import norm

from theorylab.validations.claim import Check, Report, finished_report
from theorylab.validations.registry import register_validation

S, A, RANK = 30, 20, 2
NOISE_SD = 0.05
ALPHA = 0.1


def low_rank_matrix(rng: np.random.Generator, S: int, A: int, r: int) -> np.ndarray:
    """``U V^T (S, A)`` as the ``lowrank-reward`` family draws it (U rows on the simplex)."""
    from theorylab.mdps.lowrank import random_simplex

    return random_simplex(rng, (S,), r) @ rng.random((A, r)).T


def policy_occupancy(rng: np.random.Generator, S: int, A: int) -> np.ndarray:
    """``d (S * A,)``: ``d_S(s) pi(a | s)`` with Dirichlet(5) state weights and policy rows."""
    d_s = rng.dirichlet(np.full(S, 5.0))  # (S,)
    pi = rng.dirichlet(np.full(A, 5.0), size=S)  # (S, A)
    return (d_s[:, None] * pi).ravel()


def policy_mask(rng: np.random.Generator, d: np.ndarray, m: int, shape) -> np.ndarray:
    """m distinct entries drawn without replacement with probabilities d -> bool ``shape``."""
    mask = np.zeros(d.size, dtype=bool)
    mask[rng.choice(d.size, size=m, replace=False, p=d)] = True
    return mask.reshape(shape)


def relative_error(X: np.ndarray, M: np.ndarray) -> float:
    return float(np.linalg.norm(X - M) / np.linalg.norm(M))


@dataclass
class PamcPhaseTransition:
    name: str = "pamc-completion-phase-transition"
    statement: str = (
        "PAMC (Shihab et al. 2025; rank-r completion of a reward matrix observed on a "
        "policy-induced mask, split-conformal sets): ALS and nuclear-norm completion recover an "
        "exact instance (<= 1e-4); no recovery at m <= r(S + A - r) observed entries, recovery in "
        ">= 90% of draws at some m <= 0.75 SA with a >= 1e3 drop of the median error between "
        "neighbouring m, where the unstructured estimator's error is still >= 0.15; conformal "
        "coverage has mean k/(n+1) in [1 - alpha, 1 - alpha + 1/(n+1)) (within 4 SE); under "
        "approximate rank the error is between 0.5 eps and 2 eps (slope in [0.9, 1.1])"
    )
    scales: dict[str, dict] = field(
        default_factory=lambda: {
            "quick": {
                "grid": [48, 96, 150, 200, 250, 300, 400, 450],
                "trials": 12,
                "fits": 4,
                "calibration_sets": 250,
                "n_cal": [24],
                "decay_trials": 3,
            },
            "full": {
                "grid": [48, 72, 96, 120, 150, 175, 200, 225, 250, 300, 350, 400, 450],
                "trials": 60,
                "fits": 20,
                "calibration_sets": 500,
                "n_cal": [9, 24, 99],
                "decay_trials": 15,
            },
        }  # fmt: skip
    )

    def run(self, scale="quick", *, plot=None, progress=False, seed=0) -> Report:
        from theorylab.algorithms.offline import pamc as P

        t0 = time.perf_counter()
        cfg = self.scales[scale]
        rng = np.random.default_rng([seed, 32])
        checks: list[Check] = []

        # 1: two solvers, one truth
        M = low_rank_matrix(rng, 12, 10, RANK)
        mask = rng.random(M.shape) < 0.7
        err_als = float(np.abs(P.complete_als(M, mask.astype(float), RANK) - M).max())
        err_nuc = float(np.abs(P.complete_nuclear(M, mask) - M).max())
        checks.append(Check(
            "exact recovery by ALS and by nuclear-norm minimisation",
            max(err_als, err_nuc) <= 1e-4,
            f"max entry error: ALS {err_als:.1e}, nuclear norm {err_nuc:.1e} (<= 1e-4)",
            {"als": err_als, "nuclear": err_nuc}))  # fmt: skip

        # 2: the phase transition under a policy-induced mask
        grid = np.asarray(cfg["grid"])
        dof = RANK * (S + A - RANK)
        rate, med, unstructured = [], [], []
        for m in grid:
            errs, uerr = [], []
            for _ in range(cfg["trials"]):
                M = low_rank_matrix(rng, S, A, RANK)
                mask = policy_mask(rng, policy_occupancy(rng, S, A), int(m), M.shape)
                errs.append(relative_error(P.complete_als(M, mask.astype(float), RANK), M))
                uerr.append(relative_error(np.where(mask, M, M[mask].mean()), M))
            errs = np.asarray(errs)
            rate.append(float((errs <= 1e-4).mean()))
            med.append(float(np.median(errs)))
            unstructured.append(float(np.median(uerr)))
        rate_a, med_a = np.asarray(rate), np.asarray(med)
        below = float(rate_a[grid <= dof].max())
        good = np.flatnonzero((rate_a >= 0.9) & (grid <= 0.75 * S * A))
        m_star = int(grid[good[0]]) if good.size else None
        u_star = unstructured[good[0]] if good.size else math.nan
        drop = float(np.max(med_a[:-1] / np.maximum(med_a[1:], 1e-300)))
        ok = below == 0.0 and m_star is not None and drop >= 1e3 and u_star >= 0.15
        checks.append(Check(
            "phase transition in the number of observed entries", ok,
            f"recovery rate {below:.2f} at m <= r(S + A - r) = {dof} (must be 0); first m with "
            f">= 90% recovery: {m_star} (<= {0.75 * S * A:.0f}); largest drop of the median "
            f"error between neighbours {drop:.1e} (>= 1e3); unstructured error there "
            f"{u_star:.3f} (>= 0.15)",
            {"grid": grid.tolist(), "rate": rate, "median_error": med,
             "unstructured": unstructured, "m_star": m_star, "drop": drop}))  # fmt: skip

        # 3: split-conformal coverage, exact given the fit, averaged over calibration sets
        cover_detail, cover_ok = {}, True
        for n in cfg["n_cal"]:
            k = math.ceil((n + 1) * (1 - ALPHA))
            target = k / (n + 1)
            cov = []
            for _ in range(cfg["fits"]):
                M = low_rank_matrix(rng, S, A, RANK)
                d = policy_occupancy(rng, S, A)
                mask = policy_mask(rng, d, 400, M.shape)
                Y = M + NOISE_SD * rng.standard_normal(M.shape)
                gap = (M - P.complete_als(Y, mask.astype(float), RANK)).ravel()  # (S * A,)
                for _ in range(cfg["calibration_sets"]):
                    idx = rng.choice(d.size, size=n, p=d)
                    scores = np.abs(gap[idx] + NOISE_SD * rng.standard_normal(n))
                    q = P.conformal_quantile(scores, ALPHA)
                    inside = norm.cdf((q - gap) / NOISE_SD) - norm.cdf((-q - gap) / NOISE_SD)
                    cov.append(float(d @ inside))
            cov = np.asarray(cov)
            mean, se = float(cov.mean()), float(cov.std(ddof=1) / np.sqrt(cov.size))
            in_band = 1 - ALPHA <= target < 1 - ALPHA + 1 / (n + 1)
            ok_n = in_band and abs(mean - target) <= 4 * se
            cover_ok &= ok_n
            cover_detail[n] = {"mean": mean, "se": se, "target": target}
        checks.append(Check(
            "conformal coverage: k/(n+1) in [1 - alpha, 1 - alpha + 1/(n+1))", cover_ok,
            "; ".join(f"n = {n}: mean coverage {v['mean']:.4f} +- {v['se']:.4f} vs "
                      f"k/(n+1) = {v['target']:.4f}" for n, v in cover_detail.items())
            + f" (alpha = {ALPHA}; within 4 SE)", {"coverage": cover_detail}))  # fmt: skip

        # 4: graceful decay under approximate rank
        epsilons = (0.0, 1e-3, 1e-2, 1e-1)
        rmse = {e: [] for e in epsilons}
        for _ in range(cfg["decay_trials"]):
            M = low_rank_matrix(rng, S, A, RANK)
            E = rng.standard_normal(M.shape)
            E /= np.sqrt((E**2).mean())
            mask = np.zeros(S * A, dtype=bool)
            mask[rng.choice(S * A, size=450, replace=False)] = True
            mask = mask.reshape(S, A)
            for e in epsilons:
                Y = M + e * E
                X = P.complete_als(Y, mask.astype(float), RANK)
                rmse[e].append(float(np.sqrt(((X - Y)[~mask] ** 2).mean())))
        med_e = {e: float(np.median(v)) for e, v in rmse.items()}
        pos = [e for e in epsilons if e > 0]
        slope = float(np.polyfit(np.log(pos), np.log([med_e[e] for e in pos]), 1)[0])
        ratios = [med_e[e] / e for e in pos]
        ok = med_e[0.0] <= 1e-4 and all(0.5 <= x <= 2.0 for x in ratios) and 0.9 <= slope <= 1.1
        checks.append(Check(
            "graceful decay under approximate rank", ok,
            f"RMS error {med_e[0.0]:.1e} at eps = 0 (<= 1e-4); error / eps "
            + ", ".join(f"{x:.2f}" for x in ratios) + f" (in [0.5, 2]); slope {slope:.3f} "
            "(in [0.9, 1.1])", {"median_rmse": med_e, "slope": slope}))  # fmt: skip

        if plot:
            from theorylab.plotting import plot_lines

            curves = {
                "rank-2 ALS (median relative error)": np.maximum(med_a, 1e-12),
                "unstructured fill (median relative error)": np.asarray(unstructured),
            }
            plot_lines(grid, curves,
                       xlabel="observed entries m", ylabel="relative Frobenius error",
                       title=f"PAMC: completion phase transition (S={S}, A={A}, r={RANK})",
                       logy=True, path=plot)  # fmt: skip
        config = {**cfg, "S": S, "A": A, "rank": RANK, "alpha": ALPHA, "noise_sd": NOISE_SD,
                  "seed": seed}  # fmt: skip
        return finished_report(self.name, self.statement, scale, checks, t0, config, figure=plot)


register_validation(
    PamcPhaseTransition(),
    controls=("pamc-conformal-uncorrected", "pamc-rank-misspecified"),
    targets={"offline": ("pamc",)},
    papers=("001#32",),
)
