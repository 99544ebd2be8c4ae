r"""Evaluation errors eps_k (S, A) injected into approximate value iteration (md-vi's errors).

Every pattern has sup-norm at most ``noise`` except ``gaussian``. With q* the optimal q, a* the
optimal actions (q*(s, a) within 1e-9 of max_a q*(s, a)) and k = 1, 2, ... the iteration:

* ``gaussian``: i.i.d. N(0, noise^2) per (s, a, k) (the catalogue's noisy evaluations; unbounded);
* ``rademacher``: i.i.d. +-noise per (s, a, k);
* ``stationary``: eps(s, a) = -noise on optimal actions, +noise on the others, every iteration --
  the constant pattern that favours the suboptimal actions (errors that do not average out);
* ``alternating``: eps_k(s, a) = noise sigma_k(s) (+1 on optimal actions, -1 on the others) with
  sigma_k(s) = +1 when (k - depth(s)) mod period < period / 2, else -1, where depth(s) is the number
  of optimal moves from s to a state that an optimal action keeps (deterministic transitions
  only). ``period = 2`` is the sign pattern under which AVI's errors add up along every optimal
  path with one sign on even diagonals and the other on odd ones (the ``avi-tight`` family's
  construction): the greedy policy alternates and loses 2 gamma noise / (1 - gamma)^2;
* ``first-order``: eps_k(s, a) = +noise where A^{pi_k}(s, a) < 0 and -noise elsewhere, with pi_k
  the policy of the k-th backup and A^{pi_k} its exact advantage (a linear solve each iteration):
  an adaptive adversary, the sign of the first-order change of every state's next value.
  For a softmax step pi' ∝ pi exp(q / lam), d v^{pi'}(x) / d q(s, b) = d_x(s) pi(b|s) A(s, b) / lam
  with d_x the discounted occupancy from x, so lowering the good actions and raising the bad ones
  lowers every value at first order [A].
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

ERROR_PATTERNS = ("gaussian", "rademacher", "stationary", "alternating", "first-order")


def optimal_actions(q_star: np.ndarray) -> np.ndarray:
    """(S, A) bool: the actions within 1e-9 (relative) of max_a q*(s, a)."""
    tol = 1e-9 * max(1.0, float(np.abs(q_star).max()))
    return q_star >= q_star.max(axis=1, keepdims=True) - tol


def optimal_depth(mdp, best: np.ndarray) -> np.ndarray:
    """depth (S,) int: optimal moves from s to a state an optimal action keeps (deterministic
    transitions; a ValueError naming the state otherwise)."""
    S, A = mdp.S, mdp.A
    M = mdp.P_flat(0)  # (S*A, S)
    dense = M.toarray() if hasattr(M, "toarray") else np.asarray(M)
    nxt = dense.argmax(axis=1).reshape(S, A)  # (S, A)
    if not np.allclose(dense.max(axis=1), 1.0):
        bad = int(np.argmin(dense.max(axis=1))) // A
        raise ValueError(
            "md-vi: errors='alternating' needs deterministic transitions; state "
            f"{bad} of {getattr(mdp, 'name', 'the MDP')} has a random next state"
        )
    depth = np.full(S, -1)
    depth[(best & (nxt == np.arange(S)[:, None])).any(axis=1)] = 0
    for d in range(1, S + 1):
        new = (depth < 0) & (best & (depth[nxt] == d - 1)).any(axis=1)
        if not new.any():
            break
        depth[new] = d
    if (depth < 0).any():
        raise ValueError(
            "md-vi: errors='alternating' needs every state to reach a state that an optimal "
            f"action keeps; state {int(np.argmax(depth < 0))} does not"
        )
    return depth


def error_pattern(
    name: str, mdp, q_star: np.ndarray, noise: float, *, seed: int = 0, period: int = 2
) -> Callable[[int, np.ndarray], np.ndarray]:
    """eps_k = pattern(k, pi_k) (S, A), pi_k (S, A) the policy of the k-th backup."""
    if name not in ERROR_PATTERNS:
        raise ValueError(f"md-vi: errors must be one of {', '.join(ERROR_PATTERNS)}, got {name!r}")
    if isinstance(period, bool) or not isinstance(period, (int, np.integer)) or period < 2:
        raise ValueError(f"md-vi: period must be an integer >= 2, got period={period!r}")
    shape = q_star.shape
    rng = np.random.default_rng(seed)
    best = optimal_actions(q_star)
    favour = np.where(best, 1.0, -1.0)  # (S, A) +1 on optimal actions
    if name == "gaussian":
        return lambda k, pi: noise * rng.standard_normal(shape)
    if name == "rademacher":
        return lambda k, pi: noise * rng.choice((-1.0, 1.0), size=shape)
    if name == "stationary":
        return lambda k, pi: -noise * favour
    if name == "alternating":
        depth = optimal_depth(mdp, best)

        def alternating(k: int, pi: np.ndarray) -> np.ndarray:
            sigma = np.where((k - depth) % period < period / 2, 1.0, -1.0)  # (S,)
            return noise * sigma[:, None] * favour

        return alternating
    from theorylab.algorithms.planning.evaluation import evaluate_discounted

    def first_order(k: int, pi: np.ndarray) -> np.ndarray:
        v = evaluate_discounted(mdp, pi)  # (S,)
        adv = mdp.reward(0) + mdp.gamma * mdp.expected_next(v) - v[:, None]  # (S, A)
        tol = 1e-12 * max(1.0, float(np.abs(v).max()))
        return np.where(adv < -tol, noise, -noise)

    return first_order
