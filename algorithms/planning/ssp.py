"""Exact solutions of a stochastic shortest path problem (:class:`theorylab.mdps.ssp.SSPProblem`),
two ways that must agree (Bertsekas & Tsitsiklis, *Neuro-Dynamic Programming*, section 2.2).

* :func:`ssp_value_iteration` -- value iteration started from the cost ``J_mu`` of a proper
  policy mu. Then ``T J_mu <= J_mu``, so the iterates decrease monotonically to J* (monotonicity
  of T; NDP Prop. 2.2 gives convergence from any start under the SSP assumptions). Once the
  greedy policy of an iterate is proper and its exact cost (a linear solve) satisfies Bellman's
  equation to ``tol``, that cost is returned: policy iteration's stopping test, so the answer is
  a policy's exact cost, not a truncated iterate.
* :func:`ssp_linear_program` -- ``max sum_s J(s)`` subject to
  ``J(s) <= c(s, a) + sum_{s' < S} P[s, a, s'] J(s')`` for all (s, a) (NDP section 2.2.4): every
  feasible J satisfies ``J <= T^k J -> J*``, and J* is feasible, so J* is the unique maximiser.
  Solved by HiGHS (``scipy.optimize.linprog``); shares no code with value iteration.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.optimize import linprog

from theorylab.errors import InvalidMDPError


@dataclass(frozen=True)
class SSPSolution:
    """J ``(S,)`` the optimal cost-to-go; Q ``(S, A)`` = c + P J; policy ``(S,)`` a greedy
    deterministic optimal policy; iterations: backups (value iteration) or 0 (LP)."""

    J: np.ndarray
    Q: np.ndarray
    policy: np.ndarray
    iterations: int


def ssp_value_iteration(problem, tol: float = 1e-10, max_iter: int = 100_000) -> SSPSolution:
    """J* by value iteration from the instance's proper policy (module docstring)."""
    J = problem.policy_cost(problem.deterministic(problem.proper_policy))  # (S,)
    for k in range(1, max_iter + 1):
        Q = problem.bellman(J)  # (S, A)
        J_new = Q.min(axis=1)
        greedy = Q.argmin(axis=1)
        J_greedy = problem.policy_cost(problem.deterministic(greedy))
        if np.all(np.isfinite(J_greedy)):
            residual = np.max(np.abs(problem.bellman(J_greedy).min(axis=1) - J_greedy))
            if residual <= tol:
                return SSPSolution(J_greedy, problem.bellman(J_greedy), greedy, k)
        J = J_new
    raise InvalidMDPError(f"{problem.name}: SSP value iteration did not converge in {max_iter}")


def ssp_linear_program(problem) -> SSPSolution:
    """J* as the maximiser of the SSP linear program (module docstring)."""
    S, A = problem.n_states, problem.n_actions
    # constraint rows (s, a): J(s) - sum_{s'} P[s, a, s'] J(s') <= c(s, a)
    E = np.repeat(np.eye(S), A, axis=0)  # (S*A, S)
    M = E - problem.P[:, :, :S].reshape(S * A, S)  # (S*A, S)
    res = linprog(-np.ones(S), A_ub=M, b_ub=problem.c.reshape(-1), bounds=[(None, None)] * S,
                  method="highs")  # fmt: skip
    if res.status != 0:
        raise InvalidMDPError(f"{problem.name}: the SSP linear program failed ({res.message})")
    J = np.asarray(res.x, dtype=np.float64)
    Q = problem.bellman(J)
    return SSPSolution(J, Q, Q.argmin(axis=1), 0)
