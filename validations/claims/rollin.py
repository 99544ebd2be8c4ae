"""ROLLIN's complexity gain (Li, Zhai, Ma & Levine 2023; seed rows 000#7, 001#11).

Single-task RL on a goal chain (:mod:`theorylab.mdps.goal_chain`) by exact softmax policy
gradient: total iterations to reach eps-optimality on the target task as the goal distance N
grows, from scratch vs through the curriculum of goals 1..N (``rollin``,
:mod:`theorylab.algorithms.policy_optimization.rollin`). Ground truth: exact values (policy
iteration, checked against the closed form gamma^k / (1 - gamma)) and exact gradients (checked
against finite differences of the library's policy evaluation).

Controls (``validations/curriculum_mutations.py``): ``rollin-target-only`` (the task list holds
the target alone: the curriculum is never run, i.e. learning from scratch) and
``rollin-no-carry-over`` (every task restarts from theta = 0 on rho: neither the policy nor the
roll-in distribution is passed on). Both must FAIL the polynomial check.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from theorylab.validations.claim import Check, ScaledClaim, save_claim_figure
from theorylab.validations.registry import register_validation

PAPERS = ("000#7", "001#11")
GROWTH_MIN = 1.5  # scratch: iterations multiply by >= 1.5 per unit of goal distance [A]
DEGREE_MAX = 3.0  # curriculum: fitted log-log degree <= 3 over the upper half of the grid [A]


def upper_half(x: np.ndarray) -> slice:
    """The points fitted: the upper half of the grid (at least 3 points)."""
    return slice(min(len(x) // 2, len(x) - 3), None)


def growth_factor(N: np.ndarray, T: np.ndarray) -> float:
    """exp(b) of the least-squares fit log T = a + b N (per unit of goal distance)."""
    return float(np.exp(np.polyfit(N, np.log(T), 1)[0]))


def poly_degree(N: np.ndarray, T: np.ndarray) -> float:
    """p of the least-squares fit log T = a + p log N."""
    return float(np.polyfit(np.log(N), np.log(T), 1)[0])


def finite_difference_gap(mdp, theta: np.ndarray, mu: np.ndarray, h: float = 1e-6) -> float:
    """max |grad - central FD| / max |FD| of V^{pi_theta}(mu), the FD by the library's evaluation
    (:func:`evaluate_discounted`), the gradient by :func:`softmax_gradient`."""
    from theorylab.algorithms.planning.evaluation import evaluate_discounted
    from theorylab.algorithms.planning.softmax_gradient import softmax_gradient, softmax_policy

    grad, _ = softmax_gradient(mdp, theta, mu)
    fd = np.zeros_like(theta)
    for idx in np.ndindex(*theta.shape):
        e = np.zeros_like(theta)
        e[idx] = h
        up = evaluate_discounted(mdp, softmax_policy(theta + e)) @ mu
        down = evaluate_discounted(mdp, softmax_policy(theta - e)) @ mu
        fd[idx] = (up - down) / (2 * h)
    return float(np.abs(grad - fd).max() / np.abs(fd).max())


@dataclass(frozen=True)
class RollinComplexityGain(ScaledClaim):
    name: str = "rollin-curriculum-complexity"
    statement: str = (
        "ROLLIN (Li, Zhai, Ma & Levine 2023; rollin through tl.run): on goal chains "
        "(goal-chain:N, gamma = 0.9; task k rewards standing on state k, start state 0), exact "
        "softmax PG (eta = 1) run until V*(rho) - V(rho) <= 0.1 V*(rho) needs, from scratch, a "
        "number of iterations growing exponentially in the goal distance N (fitted factor per "
        f"unit of N >= {GROWTH_MIN} over the upper half of the grid), while the curriculum of "
        "goals 1..N -- each task warm-started at the previous one's logits and learnt from "
        "mu_k = 0.5 d^{pi_{k-1}}_rho + 0.5 rho -- needs in total a number growing polynomially "
        f"(fitted log-log degree <= {DEGREE_MAX} there); the curriculum wins at the largest N and "
        "its advantage grows with N; every run is eps-optimal within its budget. Ground truth: "
        "V*_k(0) by policy iteration equals gamma^k / (1 - gamma) for every task; the exact "
        "gradient matches central finite differences (relative error <= 1e-5). Reported (INFO): "
        "the two ablations, warm start without mixing (beta = 0) and mixing with a cold start. "
        "Quick: N in 4..12 (step 2); full: N in 4..16."
    )
    scales: dict[str, dict[str, Any]] = field(
        default_factory=lambda: {
            "quick": {"N": (4, 6, 8, 10, 12), "budget": 20_000},
            "full": {"N": (4, 6, 8, 10, 12, 14, 16), "budget": 200_000},
        }
    )
    gamma: float = 0.9
    eps: float = 0.1
    beta: float = 0.5

    def _run(self, cfg: dict, seed: int, plot: str | None, rep) -> None:
        import theorylab as tl
        from theorylab.algorithms.planning.value_iteration import policy_iteration
        from theorylab.mdps.goal_chain import GoalCurriculum

        Ns = np.asarray(cfg["N"], dtype=np.float64)
        variants = {
            "curriculum": {"beta": self.beta},
            "scratch": {"schedule": "scratch"},
            "warm start only (beta = 0)": {"beta": 0.0},
            "mixing only (cold start)": {"beta": self.beta, "warm_start": False},
        }
        totals = {v: [] for v in variants}
        unsolved = []
        for N in cfg["N"]:
            spec = f"goal-chain:N={N},gamma={self.gamma}"
            for label, kw in variants.items():
                res = tl.run("rollin", spec, iterations=cfg["budget"], eps=self.eps, **kw)
                totals[label].append(res.config["total_iterations"])
                if not res.config["solved"]:
                    unsolved.append(f"{label} at N={N}")
        T = {k: np.asarray(v, dtype=np.float64) for k, v in totals.items()}
        hi = upper_half(Ns)
        growth = growth_factor(Ns[hi], T["scratch"][hi])
        degree = poly_degree(Ns[hi], T["curriculum"][hi])
        scratch_degree = poly_degree(Ns[hi], T["scratch"][hi])
        ratio = T["scratch"] / T["curriculum"]

        # ground truth: V*_k(0) against its closed form; the gradient against finite differences
        big = GoalCurriculum(int(Ns[-1]), self.gamma)
        v_err = max(
            abs(float(policy_iteration(task).V[0]) - self.gamma**k / (1 - self.gamma))
            for k, task in enumerate(big.tasks, start=1)
        )
        rng = np.random.default_rng(seed + 7)
        small = GoalCurriculum(int(Ns[0]), self.gamma)
        mu = rng.dirichlet(np.ones(small.target.S))
        fd_gap = max(
            finite_difference_gap(small.target, theta, mu)
            for theta in (np.zeros((small.target.S, 3)), rng.standard_normal((small.target.S, 3)))
        )
        fmt = {k: v.astype(int).tolist() for k, v in T.items()}
        checks = [
            Check(
                "V*_k(0) = gamma^k / (1 - gamma) for every task (policy iteration)",
                v_err <= 1e-9,
                f"max error {v_err:.2e} over the {big.N} tasks of N = {big.N} (tolerance 1e-9)",
                {"max_error": v_err},
            ),
            Check(
                "exact softmax gradient = central finite differences",
                fd_gap <= 1e-5,
                f"max relative error {fd_gap:.2e} at theta = 0 and a random theta, random mu "
                "(tolerance 1e-5)",
                {"relative_error": fd_gap},
            ),
            Check(
                "every run eps-optimal within its budget",
                not unsolved,
                f"budget {cfg['budget']} iterations; unsolved: {unsolved or 'none'}",
                {"unsolved": unsolved},
            ),
            Check(
                "from scratch: exponential in the goal distance",
                growth >= GROWTH_MIN,
                f"iterations {fmt['scratch']} at N = {Ns.astype(int).tolist()}: factor "
                f"{growth:.2f} per unit of N over N >= {int(Ns[hi][0])} (needs >= {GROWTH_MIN}; "
                f"a power-law fit there would need degree {scratch_degree:.1f})",
                {"growth": growth, "scratch_degree": scratch_degree, "iterations": fmt["scratch"]},
            ),
            Check(
                "curriculum: polynomial in the goal distance",
                degree <= DEGREE_MAX,
                f"total iterations {fmt['curriculum']}: fitted degree {degree:.2f} over "
                f"N >= {int(Ns[hi][0])} (needs <= {DEGREE_MAX})",
                {"degree": degree, "iterations": fmt["curriculum"]},
            ),
            Check(
                "the curriculum wins at the largest N and its advantage grows",
                bool(ratio[-1] > 1.0 and np.all(np.diff(ratio[hi]) > 0)),
                f"scratch / curriculum = {np.round(ratio, 2).tolist()}",
                {"ratio": ratio.tolist()},
            ),
        ]
        for label in ("warm start only (beta = 0)", "mixing only (cold start)"):
            d = poly_degree(Ns[hi], T[label][hi])
            checks.append(
                Check(
                    f"ablation: {label}",
                    True,
                    f"total iterations {fmt[label]}: fitted degree {d:.2f} (reported, not tested)",
                    {"degree": d, "iterations": fmt[label]},
                    status="INFO",
                )
            )
        if plot:
            from theorylab.plotting import plot_lines

            ax = plot_lines(
                Ns,
                T,
                xlabel="goal distance N (target task)",
                ylabel="PG iterations to eps-optimality (exact)",
                title="ROLLIN: curriculum vs from scratch (goal chain, gamma = 0.9)",
                logy=True,
            )
            save_claim_figure(ax, plot)
        rep.checks.extend(checks)


register_validation(
    RollinComplexityGain(),
    controls=("rollin-target-only", "rollin-no-carry-over"),
    papers=PAPERS,
)
