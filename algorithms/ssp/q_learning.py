"""Synchronous tabular Q-learning on a stochastic shortest path problem: the convergent baseline
the SSP actor-critic paper compares against (seed row 000#51; Guin & Bhatnagar 2025 name
Q-learning among "other well-known convergent RL algorithms" [V: abstract and summary]).

Algorithm (Tsitsiklis 1994; for SSP, boundedness and convergence by Yu & Bertsekas 2013 [V:
abstract]): every sweep n, every non-goal (s, a) draws ``s' ~ P(.|s, a)`` and
``Q(s, a) <- Q(s, a) + alpha_n (c(s, a) + min_b Q(s', b) - Q(s, a))`` with ``Q(goal, .) = 0`` and
``alpha_n = step_scale / (n + offset)^0.55``. The critic recorded is ``min_a Q``, the policy the
greedy one.

The SSP-specific difference from the two-timescale learners: Q-learning's greedy policy is
deterministic, so an iterate can be *improper*. From Q = 0 the greedy choice is the cheapest
one-step action -- on ``ssp-trap`` the improper trap cycle, infinite cost -- and an agent that
acted on it would never reach the goal (``tests/test_ssp.py`` shows the first iterates' cost is
infinite). The Boltzmann actor of ``ssp-ac``/``ssp-ca`` is proper at every iterate.
"""

from __future__ import annotations

import numpy as np

from theorylab.algorithms.registry import register
from theorylab.algorithms.ssp.two_timescale import CHUNK, FAST, SSPRun, _sample, record_grid


@register("ssp-q-learning", kind="ssp", problem="ssp-trap", papers=("000#51",))
def ssp_q_learning(problem, iterations, rngs, step_scale: float = 1.0,
                   offset: float = 100.0) -> SSPRun:  # fmt: skip
    """Synchronous Q-learning on an SSP (the baseline of Guin & Bhatnagar 2025): every (s, a)
    sampled each sweep; greedy policy recorded (may be improper early)."""
    for key, value in (("step_scale", step_scale), ("offset", offset)):
        if not (isinstance(value, (int, float)) and np.isfinite(value) and value > 0):
            raise ValueError(f"parameter {key} must be a finite number > 0, got {value!r}")
    if step_scale > 1:
        raise ValueError(f"parameter step_scale must be <= 1 (a step above 1 overshoots), got "
                         f"{step_scale}")  # fmt: skip
    B, S, A = len(rngs), problem.n_states, problem.n_actions
    grid = record_grid(iterations)
    P_cdf = np.cumsum(problem.P, axis=2)  # (S, A, S+1)
    Q = np.zeros((B, S + 1, A))  # (B, S+1, A), Q[:, S] = 0: the goal
    eye = np.eye(A)
    critic = np.empty((B, grid.size, S))
    policy = np.empty((B, grid.size, S, A))
    critic[:, 0], policy[:, 0] = Q[:, :S].min(axis=2), eye[Q[:, :S].argmin(axis=2)]
    rows = np.arange(B)[:, None, None]
    g = 1
    for n in range(1, iterations + 1):
        k = (n - 1) % CHUNK
        if k == 0:  # (B, CHUNK, S, A): per seed, its next CHUNK sweeps' uniforms
            U = np.stack([r.random((CHUNK, S, A)) for r in rngs])
        s_next = _sample(U[:, k], P_cdf)  # (B, S, A)
        target = problem.c + Q[rows, s_next].min(axis=-1)  # (B, S, A)
        Q[:, :S] += step_scale / (n + offset) ** FAST * (target - Q[:, :S])
        if n == grid[g]:
            critic[:, g], policy[:, g] = Q[:, :S].min(axis=2), eye[Q[:, :S].argmin(axis=2)]
            g += 1
    config = {"step_scale": step_scale, "offset": offset, "exponent": FAST}
    return SSPRun(grid=grid, critic=critic, policy=policy, config=config)
