r"""IWOCS: a robust MDP solved as a sequence of static problems, on a finite uncertainty set.

Seed row ``seed-catalogue-002-004.md#D1``: A. Zouitine, M. Geist, E. Rachelson, "Solving robust
MDPs as a sequence of static RL problems" (arXiv:2410.06212, 2024).

What was read [V] (the abstract and a public summary of sections 3-4, through the search tool):
the static model (one kernel per episode) against the dynamic one (the kernel may change every
step); for stationary policies and (s, a)-rectangular sets the two robust values coincide, and
there is no duality gap (max_pi min_T V^pi_T = min_T max_pi V^pi_T), so the robust value is the
minimum over models of their optimal values; IWOCS ("Incremental Worst-Case Search") keeps a
growing discrete set of worst-case models, each iteration solving a standard (non-robust)
problem on it and searching for the model on which the current policy does worst.

Reconstructed [A] (the exact tabular version the catalogue row asks for, not the paper's deep
SAC + CMA-ES version): the full set is finite, {P_1..P_m} (:mod:`.finite_sets`); W_0 = {P_1}
(the nominal kernel). Iteration i:

    pi_i   = argmax_pi min_{P in W_i} V^pi_P(mu0)          (policy step, two forms below)
    P_next = argmin_{P in full set} V^{pi_i}_P(mu0)          (worst-case search, exact)
    stop if P_next in W_i, else W_{i+1} = W_i + {P_next}.

``policy_step="maxmin"`` (default) solves the static problem on W_i exactly, by enumeration of
the deterministic stationary policies; then at termination min_full V^{pi} = min_W V^{pi} =
max_pi min_W >= max_pi min_full, so IWOCS returns the brute-force max-min value, after at most
m iterations (W grows by one model per iteration). ``policy_step="qmin"`` is the paper's
cheaper step [A from the summary]: pi_i greedy for min_{P in W_i} Q*_P (one standard MDP per
model), exact where the no-duality-gap identity holds (rectangular sets), a heuristic
otherwise. Only deterministic stationary policies are searched (the catalogue's brute force);
on a non-rectangular set a stochastic policy can do better, which this does not claim.

Registered as ``iwocs`` (kind ``policy-optimization``): the problem's kernel is the nominal
model; ``models``, ``spread`` and ``kernel_seed`` build the finite set
(:func:`.finite_sets.perturbed_models`), or ``uncertainty="rectangular"`` the product of the
nominal rows and one perturbed row per (s, a) (2^(S A) kernels). The path's objective is the
worst-case value over the full set of every iterate pi_0..pi_k, ``regularised`` the value on
W_i (IWOCS's own estimate, an upper bound), ``target_value`` the brute-force max-min.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from theorylab.algorithms.planning.value_iteration import value_iteration
from theorylab.algorithms.policy_optimization.path import PolicyPath
from theorylab.algorithms.registry import register
from theorylab.algorithms.robust.finite_sets import (
    all_deterministic_policies,
    brute_force_maxmin,
    perturbed_models,
    rectangular_product,
    static_values,
)

PAPERS = ("002-004#D1",)
POLICY_STEPS = ("maxmin", "qmin")


@dataclass(frozen=True)
class IWOCSRun:
    """policies (k+1, S); worst_case (k+1,) min over the full set; on_working_set (k+1,) min
    over W_i; added: the indices of the models in W, in the order added; terminated: whether
    the worst-case search returned a model already in W."""

    policies: np.ndarray
    worst_case: np.ndarray
    on_working_set: np.ndarray
    added: list[int]
    terminated: bool


def worst_model(mdp, models: np.ndarray, policy: np.ndarray) -> tuple[int, float]:
    """argmin_i V^pi_{P_i}(mu0) and its value (the exact worst-case search)."""
    v = static_values(mdp, models, policy[None])[0]
    i = int(np.argmin(v))
    return i, float(v[i])


def policy_step(mdp, models: np.ndarray, working: list[int], how: str) -> np.ndarray:
    """pi_i from the working set W (indices into models): (S,) int."""
    if how == "maxmin":
        pols = all_deterministic_policies(mdp.S, mdp.A)
        vals = static_values(mdp, models[working], pols).min(axis=1)
        return pols[int(np.argmax(vals))]
    Qs = []
    for i in working:
        model = mdp.with_objective(gamma=mdp.gamma, horizon=None)
        sol = value_iteration(_with_kernel(model, models[i]), gamma=mdp.gamma, tol=1e-12)
        Qs.append(sol.Q)
    return np.min(Qs, axis=0).argmax(axis=1)


def _with_kernel(mdp, P: np.ndarray):
    return mdp._replace(P=P)


def iwocs(mdp, models: np.ndarray, max_rounds: int, how: str = "maxmin") -> IWOCSRun:
    """IWOCS from W_0 = {models[0]} for at most max_rounds worst-case searches."""
    working = [0]
    pols, worst, on_w = [], [], []
    terminated = False
    for _ in range(int(max_rounds)):
        pi = policy_step(mdp, models, working, how)
        i, v = worst_model(mdp, models, pi)
        pols.append(pi)
        worst.append(v)
        on_w.append(float(static_values(mdp, models[working], pi[None])[0].min()))
        if i in working:
            terminated = True
            break
        working.append(i)
    return IWOCSRun(np.stack(pols), np.array(worst), np.array(on_w), working, terminated)


def finite_set(mdp, uncertainty: str, models: int, spread: float, seed: int) -> np.ndarray:
    """The finite uncertainty set of the registration (module docstring)."""
    if uncertainty == "random":
        return perturbed_models(mdp, models, spread, seed)
    rows = perturbed_models(mdp, 2, spread, seed)
    return rectangular_product(rows)


@register("iwocs", kind="policy-optimization", problem="tabular-discounted", papers=PAPERS)
def iwocs_policy_path(
    problem,
    iterations,
    models: int = 6,
    spread: float = 0.5,
    uncertainty: str = "random",
    policy_step: str = "maxmin",
    kernel_seed: int = 0,
):
    """IWOCS (Zouitine, Geist & Rachelson 2024) on a finite set of kernels around the problem's."""
    if isinstance(models, bool) or not isinstance(models, (int, np.integer)) or models < 1:
        raise ValueError(f"iwocs: models must be a positive integer, got {models!r}")
    if not (isinstance(spread, (int, float)) and 0 <= spread <= 1):
        raise ValueError(f"iwocs: spread must be a number in [0, 1], got {spread!r}")
    if uncertainty not in ("random", "rectangular"):
        raise ValueError(f"iwocs: uncertainty must be random or rectangular, got {uncertainty!r}")
    if policy_step not in POLICY_STEPS:
        raise ValueError(f"iwocs: policy_step must be maxmin or qmin, got {policy_step!r}")
    if problem.A**problem.S > 1 << 14:
        raise ValueError(
            f"iwocs enumerates the A^S = {problem.A}^{problem.S} deterministic policies; give a "
            "model with A^S <= 16384"
        )
    kernels = finite_set(problem, uncertainty, int(models), float(spread), int(kernel_seed))
    run = iwocs(problem, kernels, int(iterations), policy_step)
    target, _ = brute_force_maxmin(problem, kernels)
    zeros = np.zeros(run.worst_case.size)
    return PolicyPath(
        objective=run.worst_case,
        regularised=run.on_working_set,
        entropy=zeros,
        target_gap=target - run.worst_case,
        target_value=target,
        policies=run.policies,
        config={
            "models": int(kernels.shape[0]),
            "uncertainty": uncertainty,
            "spread": float(spread),
            "policy_step": policy_step,
            "added": run.added,
            "terminated": run.terminated,
            "kernel_seed": int(kernel_seed),
            "gamma": float(problem.gamma),
        },
    )
