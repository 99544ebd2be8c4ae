"""Discounted value iteration and policy iteration (AJKS sections 1.4.1-1.4.2).

Value iteration:  V_{k+1}(s) = max_a [ r(s, a) + gamma sum_{s'} P(s'|s, a) V_k(s') ],  V_0 = 0.

Stopping rules (documented; the attained error is returned). ``stopping="sup"``, the
contraction rule: stop at the first k with
``||V_{k+1} - V_k||_inf <= tol * (1 - gamma) / gamma``. The Bellman operator T is a
gamma-contraction, so then ``||V_{k+1} - V*||_inf <= gamma / (1 - gamma) ||V_{k+1} - V_k||_inf
<= tol``. The returned V is ``T V_{k+1}`` (so that ``V = max_a Q``), within gamma times that:
the certified bound ``info["error_bound"]``. The greedy policy of a V with
``||V - V*||_inf <= eps`` is ``2 gamma eps / (1 - gamma)``-optimal (the greedy-policy lemma of
AJKS Ch. 1). Each sweep costs O(nnz(P)).

``stopping="span"`` (the default) uses MacQueen's bounds instead (Puterman 1994, Theorem
6.6.3): with
``D = V_{k+1} - V_k`` and ``c = gamma / (1 - gamma)``,
``V_{k+1} + c min D <= V* <= V_{k+1} + c max D``, so the midpoint
``V_{k+1} + c (max D + min D) / 2`` is within ``c (max D - min D) / 2`` of V*; stop when that is
``<= tol``. Same certificate, but the span of D contracts as fast as the chain mixes
(random-sparse, gamma = 0.99, tol = 1e-6: 23 sweeps instead of 1812; docs/benchmarks.md).

Why span is the default: the iterates of the two rules are the same until one stops, a sweep
costs the same (one max and one min of D instead of one max of |D|), and
``(max D - min D) / 2 <= max |D|``, so the span rule certifies ``tol`` at the same sweep or
earlier, never later (tests/test_planning.py::
test_span_rule_never_needs_more_sweeps_than_the_sup_rule).
Measured on pymdptoolbox's forest (S = 2000, gamma = 0.96, tol = 1e-10): 176 sweeps instead of
591 (docs/benchmarks.md, "Your own MDP: the forest"). The only difference in what is
returned: the span rule's V is the MacQueen midpoint, a constant shift of the last iterate (the
greedy policy is the same).
"""

from __future__ import annotations

import time

import numpy as np

from theorylab.algorithms.planning.evaluation import evaluate_discounted
from theorylab.algorithms.planning.greedy import greedy_actions
from theorylab.algorithms.planning.solution import Solution

IMPROVEMENT_MARGIN = 1e-12
"""Policy iteration switches action only where another is better by this fraction of the size of
the terms of Q(s, a) (|r(s, a)| + gamma (P|V|)(s, a)): far above the round-off of an S-term sum,
and zero when every term is zero (then only a strict improvement counts)."""


def _gamma(mdp, gamma):
    g = gamma if gamma is not None else mdp.gamma
    if g is None:
        raise ValueError(f"{mdp!r} has no discount: pass gamma= (in [0, 1))")
    if not 0.0 <= g < 1.0:
        raise ValueError(f"gamma must lie in [0, 1), got {g}")
    if mdp.stage_dependent or mdp.reward_stage_dependent:
        raise ValueError("discounted planning needs a stationary (not stage-dependent) MDP")
    return float(g)


def bellman_optimality(mdp, V: np.ndarray, gamma: float) -> np.ndarray:
    """``Q(s, a) = r(s, a) + gamma (P V)(s, a)``, ``(S, A)``: one sweep, O(nnz)."""
    return mdp.reward(0) + gamma * mdp.expected_next(V, 0)


def value_iteration(
    mdp,
    *,
    gamma: float | None = None,
    tol: float = 1e-10,
    max_iter: int = 1_000_000,
    V0=None,
    stopping: str = "span",
) -> Solution:
    """Discounted value iteration with a certified stopping rule (see the module docstring).

    stopping: "span" (MacQueen's bounds, default: the same certificate as "sup", never more
        sweeps, usually far fewer) or "sup" (the contraction rule).
    Returns a :class:`Solution` with ``V (S,)``, ``Q (S, A)``, ``policy (S,)``; ``info`` has
    ``iterations``, ``error_bound`` (certified ``||V - V*||_inf``), ``converged``, ``stopping``
    and ``seconds``.
    """
    g = _gamma(mdp, gamma)
    if stopping not in ("sup", "span"):
        raise ValueError(f"stopping must be 'sup' or 'span', got {stopping!r}")
    if not (isinstance(tol, (int, float, np.floating)) and np.isfinite(tol) and tol > 0):
        raise ValueError(f"tol must be a positive number (the certified error), got {tol!r}")
    if isinstance(max_iter, bool) or int(max_iter) != max_iter or max_iter < 1:
        raise ValueError(f"max_iter must be a positive integer, got {max_iter!r}")
    t0 = time.perf_counter()
    V = np.zeros(mdp.S) if V0 is None else np.array(V0, dtype=np.float64)
    threshold = tol * (1 - g) / g if g > 0 else np.inf
    c = g / (1 - g)
    bound = np.inf  # certified ||V - V*||_inf of the V below
    it = 0
    if mdp.sparse:  # fused numba CSR sweep: the same iterates bit for bit (tests/test_kernels)
        from theorylab.kernels.bellman import value_iteration_csr

        res = value_iteration_csr(
            mdp.P_flat(0), mdp.reward(0), g, tol=tol, max_iter=max_iter, V0=V, stopping=stopping
        )
        V, it, bound, converged = res.V, res.iterations, res.error_bound, res.converged
    else:
        converged = False
        for it in range(1, max_iter + 1):
            Q = bellman_optimality(mdp, V, g)
            V_new = Q.max(axis=1)
            D = V_new - V  # (S,)
            V = V_new
            if stopping == "sup":
                delta = float(np.max(np.abs(D)))
                bound = c * delta
                converged = delta <= threshold  # the kernel's expression, so the same sweep count
            else:
                d_max, d_min = float(D.max()), float(D.min())
                bound = c * (d_max - d_min) / 2
                converged = bound <= tol
                if converged:
                    V = V + c * (d_max + d_min) / 2  # the MacQueen midpoint
            if converged:
                break
    # One more application of T: V = max_a Q (so V and Q agree), and ||T V - V*|| <= g ||V - V*||.
    Q = bellman_optimality(mdp, V, g)
    V = Q.max(axis=1)
    error_bound = g * bound if g > 0 else 0.0
    return Solution(
        V=V,
        Q=Q,
        policy=greedy_actions(Q),
        value=float(V @ mdp.mu0),
        info={
            "method": "value_iteration",
            "iterations": it,
            "error_bound": error_bound,
            "converged": bool(converged),
            "stopping": stopping,
            "tol": tol,
            "seconds": time.perf_counter() - t0,
        },
    )


def policy_iteration(mdp, *, gamma: float | None = None, max_iter: int = 10_000) -> Solution:
    """Howard's policy iteration with exact evaluation. Returns an optimal stationary policy.

    An action changes only where another's Q is larger by more than round-off
    (:data:`IMPROVEMENT_MARGIN` relative to the size of Q's terms), so PI stops rather than cycle
    between tied actions, yet still sees improvements of any absolute size.
    """
    g = _gamma(mdp, gamma)
    t0 = time.perf_counter()
    S = mdp.S
    pi = np.zeros(S, dtype=np.int64)
    for it in range(1, max_iter + 1):
        V = evaluate_discounted(mdp, pi, gamma=g)
        Q = bellman_optimality(mdp, V, g)
        best = Q.max(axis=1)
        # Keep the current action unless another is better by more than round-off. Round-off in
        # Q(s, a) = r + gamma sum_s' P V is relative to the size of the terms summed, |r| +
        # gamma P|V|, not to 1: an absolute floor (the former 1e-12 (1 + |best|)) hid every
        # improvement smaller than 1e-12, so PI returned V = 0 where V* = 2e-12
        # (tests/test_planning.py::test_policy_iteration_sees_improvements_below_1e12).
        scale = np.abs(mdp.reward(0)) + g * mdp.expected_next(np.abs(V), 0)  # (S, A)
        margin = IMPROVEMENT_MARGIN * scale.max(axis=1)  # (S,)
        improve = best > Q[np.arange(S), pi] + margin
        if not improve.any():
            break
        # the smallest action within the same margin of the best (greedy_actions' tie rule has an
        # absolute floor of 1e-12, which would pick the current action back)
        near_best = np.argmax(Q >= (best - margin)[:, None], axis=1)
        pi = np.where(improve, near_best, pi)
    return Solution(
        V=V,
        Q=Q,
        policy=pi,
        value=float(V @ mdp.mu0),
        info={
            "method": "policy_iteration",
            "iterations": it,
            "converged": not improve.any(),
            "error_bound": 0.0 if not improve.any() else float("nan"),
            "seconds": time.perf_counter() - t0,
        },
    )
