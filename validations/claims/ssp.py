"""Stochastic shortest path: the tabular two-timescale actor-critic and critic-actor converge to
the optimal cost-to-go on SSPs with improper policies (seed row 000#51, Guin & Bhatnagar 2025;
reconstructed: ``algorithms/ssp/two_timescale.py``).

``ssp-two-timescale-convergence`` checks, on ``ssp-trap`` instances (the cheapest one-step
action at every state belongs to an improper cycle):

1. The exact answer, two ways: value iteration started from a proper policy
   (``ssp_value_iteration``) and the SSP linear program (HiGHS) agree to 1e-8; J* satisfies
   Bellman's equation to 1e-9; the all-trap policy is improper (infinite cost) and J*'s greedy
   policy is proper.
2. The tolerance can be met: the best Boltzmann policy in the actor's box [-C, C] is within
   tol / 10 of J* (tol = 0.04 max_s J*(s), set from the exact answer).
3. Convergence, for ``ssp-ac`` and ``ssp-ca``: after n sweeps the mean over seeds of
   ``max_s |J^{pi_n}(s) - J*(s)|`` (the exact cost of the current policy) and of
   ``max_s |V_n(s) - J*(s)|`` (the critic) are both <= tol.
4. At a measured rate: the final policy error is <= 5% of the uniform starting policy's, and the
   least-squares slope of log(mean error) against log n (n >= 100) is <= -0.25.

Controls that fail it: ``ssp-frozen-actor`` (null agent: the critic evaluates the uniform
policy), ``ssp-actor-ascends-cost`` (sign flip: the actor climbs towards the improper cycle),
``ssp-discounted-critic`` (the SSP treated as discounted, gamma = 0.9).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from theorylab.validations.claim import Check, Report, finished_report
from theorylab.validations.registry import register_validation

ALGORITHMS = ("ssp-ac", "ssp-ca")
TOL_FRACTION = 0.04  # tol = 0.04 max_s J*(s)
DROP = 0.05  # final policy error <= 5% of the starting one
SLOPE = -0.25  # mean error ~ n^slope, slope <= -0.25
BOX = 5.0  # the actors' C (their default)


def box_bias(problem, solution, C: float = BOX) -> float:
    """``max_s |J^{pi_C} - J*|`` for the best Boltzmann policy in [-C, C]: theta = C on J*'s
    greedy action, -C elsewhere."""
    theta = np.where(problem.deterministic(solution.policy) > 0, C, -C)  # (S, A)
    pi = np.exp(theta) / np.exp(theta).sum(axis=1, keepdims=True)
    return float(np.max(np.abs(problem.policy_cost(pi) - solution.J)))


@dataclass
class SSPTwoTimescaleConvergence:
    name: str = "ssp-two-timescale-convergence"
    statement: str = (
        "On SSP instances whose cheapest one-step actions form an improper cycle (ssp-trap, "
        "reconstructed), the tabular two-timescale actor-critic and critic-actor "
        "(reconstructed from Guin & Bhatnagar 2025) drive both the critic and the exact cost of "
        "the current policy to within 4% of max J* of the optimal cost-to-go, which value "
        "iteration from a proper policy and the SSP linear program agree on; the policy error "
        "falls to <= 5% of the uniform policy's at a measured rate of n^-0.25 or faster"
    )
    scales: dict[str, dict] = field(
        default_factory=lambda: {
            "quick": {"instances": [0], "iterations": 20_000, "seeds": 8},
            "full": {"instances": [0, 1, 2], "iterations": 50_000, "seeds": 8},
        }
    )

    def run(self, scale="quick", *, plot=None, progress=False, seed=0) -> Report:
        import theorylab as tl
        from theorylab.algorithms.planning.ssp import ssp_linear_program, ssp_value_iteration
        from theorylab.mdps import make

        t0 = time.perf_counter()
        cfg = self.scales[scale]
        checks: list[Check] = []
        exact_gap, residual, improper_ok, bias_ok, biases, tols = 0.0, 0.0, True, True, {}, {}
        problems = {}
        for inst in cfg["instances"]:
            p = make(f"ssp-trap:S=8,A=3,seed={inst}")
            vi, lp = ssp_value_iteration(p), ssp_linear_program(p)
            exact_gap = max(exact_gap, float(np.max(np.abs(vi.J - lp.J))))
            residual = max(residual, float(np.max(np.abs(p.bellman(vi.J).min(axis=1) - vi.J))))
            trap = p.deterministic(p.improper_policy)
            improper_ok &= (not p.is_proper(trap)) and bool(np.all(np.isinf(p.policy_cost(trap))))
            improper_ok &= p.is_proper(p.deterministic(vi.policy))
            tols[inst] = TOL_FRACTION * float(vi.J.max())
            biases[inst] = box_bias(p, vi)
            bias_ok &= biases[inst] <= tols[inst] / 10
            problems[inst] = p.name
        checks.append(Check(
            "exact J*: value iteration from a proper policy = SSP linear program",
            exact_gap <= 1e-8 and residual <= 1e-9 and improper_ok,
            f"max |J_VI - J_LP| = {exact_gap:.1e} (<= 1e-8), Bellman residual {residual:.1e} "
            f"(<= 1e-9); all-trap policy improper (infinite cost), J*'s greedy policy proper: "
            f"{improper_ok}", {"exact_gap": exact_gap, "residual": residual}))  # fmt: skip
        checks.append(Check(
            "the tolerance is reachable inside the actor's box", bias_ok,
            "best Boltzmann policy in [-5, 5]: |J - J*| = "
            + ", ".join(f"{b:.1e} (tol {tols[i]:.3f})" for i, b in biases.items())
            + " (<= tol / 10)", {"bias": biases, "tol": tols}))  # fmt: skip

        curves, finals, rates, drops, grid = {}, {}, {}, {}, None
        for name in ALGORITHMS:
            for inst in cfg["instances"]:
                r = tl.run(name, problems[inst], iterations=cfg["iterations"],
                           seeds=cfg["seeds"], seed=seed)  # fmt: skip
                pol = float(np.mean(r.policy_error[:, -1]))
                cri = float(np.mean(r.critic_error[:, -1]))
                finals[(name, inst)] = (pol, cri, tols[inst])
                drops[(name, inst)] = pol / float(np.mean(r.policy_error[:, 0]))
                rates[(name, inst)] = r.rate(start=100)
                if inst == cfg["instances"][0]:
                    grid = r.grid[1:]
                    curves[f"{name}: |J^pi_n - J*|"] = r.policy_error[:, 1:]
                    curves[f"{name}: |V_n - J*|"] = r.critic_error[:, 1:]
        ok = all(p <= t and c <= t for p, c, t in finals.values())
        checks.append(Check(
            "critic and policy converge to J* within tol", ok,
            "; ".join(f"{a} #{i}: |J^pi - J*| {p:.4f}, |V - J*| {c:.4f} (tol {t:.3f})"
                      for (a, i), (p, c, t) in finals.items()),
            {"final": {f"{a}#{i}": v for (a, i), v in finals.items()}}))  # fmt: skip
        ok = all(d <= DROP for d in drops.values()) and all(s <= SLOPE for s in rates.values())
        checks.append(Check(
            "the error falls at a measured rate", ok,
            "; ".join(f"{a} #{i}: final/start {drops[(a, i)]:.4f} (<= {DROP}), rate "
                      f"n^{rates[(a, i)]:.2f} (<= n^{SLOPE})" for (a, i) in drops),
            {"rate": {f"{a}#{i}": v for (a, i), v in rates.items()}}))  # fmt: skip

        if plot:
            from theorylab.plotting import plot_regret, save_figure

            inst = cfg["instances"][0]
            ax = plot_regret(curves, x=grid, xlabel="iteration n", ylabel="sup-norm error",
                             title=f"SSP AC / CA on ssp-trap seed {inst}", loglog=True,
                             references={"tol = 0.04 max J*": np.full(grid.size, tols[inst])},
                             )  # fmt: skip
            save_figure(ax.figure, plot)
        config = {**cfg, "tol_fraction": TOL_FRACTION, "seed": seed}
        return finished_report(self.name, self.statement, scale, checks, t0, config, figure=plot)


register_validation(
    SSPTwoTimescaleConvergence(),
    controls=("ssp-frozen-actor", "ssp-actor-ascends-cost", "ssp-discounted-critic"),
    targets={"ssp": ALGORITHMS},
    papers=("000#51",),
)
