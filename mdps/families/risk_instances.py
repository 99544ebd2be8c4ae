"""MDP families for risk-sensitive RL: Du et al.'s iterated-CVaR lower-bound instance and a
safe-versus-risky instance whose CVaR-optimal policy differs from the risk-neutral one.

``icvar-lower-bound`` -- Du, Wang, Huang, "Provably Efficient Risk-Sensitive RL: Iterated CVaR and
Worst Path", ICLR 2023 (arXiv:2206.02678), section 4.2, Figure 1 (theory.md section 4.3 [V]); the
instance behind Theorem 2's first lower bound (bounds registry:
``du2023-icvar-lower-visitation``; here w_min = alpha^(n-1), the probability of reaching s_n).

* States (0-based): regular ``s_1..s_n`` are ``0..n-1``; absorbing ``x_1, x_2, x_3`` are ``n, n+1,
  n+2``. Rewards depend only on the state: 0 at regular states; 1, 0.8, 0.2 at x_1, x_2, x_3 (every
  step spent there). Start at s_1.
* Under every action, s_1 moves to (s_2, x_1, x_2, x_3) with probabilities
  (alpha, 1 - 3 alpha, alpha, alpha), and s_i (2 <= i <= n-1) to (s_{i+1}, x_1) with
  (alpha, 1 - alpha).
* The bandit state s_n: the optimal action moves to (x_2, x_3) with (1 - alpha + eta, alpha - eta),
  the other actions with (1 - alpha, alpha).
* Parameters: n >= 2, 0 < alpha <= 1/3, 0 <= eta <= alpha (``eta`` is Du et al.'s gap, not a
  reward grid), A >= 1, H >= 1 (the paper takes H >> n). ``optimal_action`` (default -1, the last
  action, so that smallest-index tie-breaking does not find it by luck; the paper draws it at
  random).

Closed form at the bandit state (checked by a test): at 0-based stage h with ``m = H - h - 1``
steps left after it, the optimal action's iterated CVaR^alpha is
``m * ((alpha - eta) * 0.2 + eta * 0.8) / alpha = m * (0.2 + 0.6 eta / alpha)`` and every other
action's is ``0.2 m``: a gap of ``0.6 m eta / alpha``.

``cvar-safe-risky`` -- constructed here (no paper). From the start state, action 0 (RISKY) moves to
``good`` (reward 1 per step) with probability ``1 - p_bad`` or to ``bad`` (reward 0) with
``p_bad``; action 1 (SAFE) moves to ``safe`` (reward ``safe_reward`` per step). All three are
absorbing; the start pays 0. With ``m = H - 1`` paying steps, the return is ``safe_reward * m``
(SAFE) or ``m`` w.p. ``1 - p_bad`` and 0 w.p. ``p_bad`` (RISKY), so

    E[Z] :        RISKY (1 - p_bad) m  vs  SAFE safe_reward * m,
    CVaR_tau[Z] : RISKY max(0, tau - p_bad) m / tau  vs  SAFE safe_reward * m.

Defaults (p_bad = 0.2, safe_reward = 0.5): the risk-neutral optimum is RISKY (0.8 m > 0.5 m); for
tau < 0.4 the CVaR optimum is SAFE (at tau = 0.25: RISKY 0.2 m < SAFE 0.5 m). The iterated
CVaR^alpha objective ranks them the same way (one random transition).
"""

from __future__ import annotations

import numpy as np

from theorylab.errors import InvalidMDPError
from theorylab.mdps.registry import register
from theorylab.mdps.tabular import TabularMDP

RISKY, SAFE = 0, 1


@register("icvar-lower-bound")
def icvar_lower_bound(
    n: int = 3,
    alpha: float = 0.2,
    eta: float = 0.05,
    A: int = 2,
    H: int = 10,
    optimal_action: int = -1,
) -> TabularMDP:
    """Du et al. (ICLR 2023) Figure 1: the iterated-CVaR lower-bound instance."""
    if n < 2:
        raise InvalidMDPError(f"icvar-lower-bound needs n >= 2 regular states, got n={n}")
    if not (0.0 < alpha <= 1.0 / 3.0):
        raise InvalidMDPError(f"icvar-lower-bound needs 0 < alpha <= 1/3, got alpha={alpha}")
    if not (0.0 <= eta <= alpha):
        raise InvalidMDPError(f"icvar-lower-bound needs 0 <= eta <= alpha, got eta={eta}")
    if A < 1 or H < 1:
        raise InvalidMDPError(f"icvar-lower-bound needs A >= 1 and H >= 1, got A={A}, H={H}")
    a_star = optimal_action % A if optimal_action < 0 else optimal_action
    if not 0 <= a_star < A:
        raise InvalidMDPError(f"optimal_action must be in 0..{A - 1} (or negative), got {a_star}")
    S = n + 3
    x1, x2, x3 = n, n + 1, n + 2
    P = np.zeros((S, A, S))
    R = np.zeros((S, A))
    P[0, :, 1], P[0, :, x1], P[0, :, x2], P[0, :, x3] = alpha, 1 - 3 * alpha, alpha, alpha
    for i in range(1, n - 1):
        P[i, :, i + 1], P[i, :, x1] = alpha, 1 - alpha
    P[n - 1, :, x2], P[n - 1, :, x3] = 1 - alpha, alpha
    P[n - 1, a_star, x2], P[n - 1, a_star, x3] = 1 - alpha + eta, alpha - eta
    for x, r in ((x1, 1.0), (x2, 0.8), (x3, 0.2)):
        P[x, :, x] = 1.0
        R[x, :] = r
    names = [f"s{i + 1}" for i in range(n)] + ["x1", "x2", "x3"]
    return TabularMDP(
        P,
        R,
        horizon=H,
        name=f"icvar-lower-bound:n={n},alpha={alpha},eta={eta},A={A},H={H}",
        state_names=names,
    )


@register("cvar-safe-risky")
def cvar_safe_risky(
    p_bad: float = 0.2,
    safe_reward: float = 0.5,
    H: int = 2,
    reward_model: str = "deterministic",
) -> TabularMDP:
    """A certain moderate reward (SAFE) against a higher-mean gamble (RISKY)."""
    if H < 2:
        raise InvalidMDPError(f"cvar-safe-risky needs H >= 2 (one decision, then payment), got {H}")
    if not (0.0 <= p_bad <= 1.0):
        raise InvalidMDPError(f"p_bad must lie in [0, 1], got {p_bad}")
    start, safe, good, bad = 0, 1, 2, 3
    P = np.zeros((4, 2, 4))
    R = np.zeros((4, 2))
    P[start, RISKY, good], P[start, RISKY, bad] = 1 - p_bad, p_bad
    P[start, SAFE, safe] = 1.0
    for x, r in ((safe, safe_reward), (good, 1.0), (bad, 0.0)):
        P[x, :, x] = 1.0
        R[x, :] = r
    return TabularMDP(
        P,
        R,
        horizon=H,
        reward_model=reward_model,
        name=f"cvar-safe-risky:p_bad={p_bad},safe_reward={safe_reward},H={H}",
        state_names=["start", "safe", "good", "bad"],
    )
