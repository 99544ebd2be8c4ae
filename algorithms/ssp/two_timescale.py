"""Tabular two-timescale actor-critic (AC) and critic-actor (CA) for the stochastic shortest path
problem (seed row 000#51, ``seed-catalogue-000.md#51``).

Paper: S. Guin and S. Bhatnagar, "Convergent Reinforcement Learning Algorithms for Stochastic
Shortest Path Problem", arXiv:2508.13963 (2025). Abstract [V]: two tabular algorithms and one
function-approximation algorithm for SSP, "asymptotic almost-sure convergence for all our
algorithms". A public summary of the paper [V: sciencestack.ai page of 2508.13963, TL;DR only]
names the tabular pair "AC and CA", two-timescale stochastic approximations analysed by the ODE
method. The paper body, its equations and constants were NOT read (not reachable here); what
follows is reconstructed [A] from that summary and from the authors' earlier tabular critic-actor
paper (Bhatnagar, Borkar & Guin 2023, arXiv:2210.04470, abstract [V]: "value function computed
on a faster time-scale and policy computed on a slower time-scale ... emulates policy iteration
... reversal of the time scales will in fact emulate value iteration").

Algorithm [A] (both variants; ``S`` non-goal states, goal value fixed at 0):

* actor: Boltzmann policy ``pi_theta(a|s) = exp theta(s, a) / sum_b exp theta(s, b)``, theta
  projected onto the box ``[-C, C]^(S x A)`` (the operator Gamma of Bhatnagar's tabular
  algorithms). Every bounded theta gives every action positive probability, so -- a proper
  policy existing -- every policy the actor can hold is proper and the critic's targets are
  finite: this is why the scheme converges on SSPs that contain improper policies.
* sampling (synchronous, generative model) [A]: at iteration n every non-goal state s draws
  ``a ~ pi_theta(.|s)`` and ``s' ~ P(.|s, a)``; TD error ``delta(s) = c(s, a) + V(s') - V(s)``
  with ``V(goal) = 0``.
* critic: ``V(s) <- V(s) + alpha_n delta(s)``.
* actor (likelihood-ratio gradient of the cost, TD error as advantage):
  ``theta(s, .) <- Gamma_C(theta(s, .) - beta_n delta(s) (e_a - pi_theta(.|s)))``.
* timescales: AC (emulates policy iteration): critic fast ``alpha_n = 1/(n+100)^0.55``, actor
  slow ``beta_n = actor_scale/(n+100)^0.75``; CA (emulates value iteration): the exponents
  swapped (actor fast, critic slow). Both pairs satisfy sum = inf, sum of squares < inf and
  slow/fast -> 0, the two-timescale conditions of Borkar's theorem.

Constants [M] (measured here, not the paper's): C = 5 (the best policy in the box is within
5e-4 of J* on ``ssp-trap:S=8,A=3``), actor_scale 20 (AC) and 5 (CA), step offset 100,
exponents 0.55 / 0.75, V = 0 and theta = 0 (uniform policy) at the start.

Measured on ``ssp-trap:S=8,A=3``, instances 0-2, 8 seeds, n = 20,000 (sup-norm error of the
exact cost of the current policy; J* max about 1.7): AC 0.004-0.009 per seed, CA 0.003-0.013.
Without the offset (steps 1/(n+1)^e) the early TD errors, large while the critic is still near
0, drive some states' preferences to a wrong corner of the box where the softmax gradient
vanishes: AC with actor_scale 5 left 2 of 8 seeds at error 0.29-0.30 after 20,000 sweeps; so did
CA with actor_scale 20 even with the offset. The softmax actor saturates slowly, so the error
falls roughly like n^-0.5 to n^-0.7 (measured slopes), not geometrically.

Deviations [A]: synchronous sampling of every state per iteration (the paper's sampling scheme
was not read); the FA algorithm (AC-FA) is not implemented.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from theorylab.algorithms.planning.softmax_gradient import softmax_policy
from theorylab.algorithms.registry import register
from theorylab.mdps.ssp import SSPProblem

TIMESCALES = ("actor-critic", "critic-actor")
FAST, SLOW = 0.55, 0.75


@dataclass
class SSPRun:
    """grid ``(M,)`` the iterations n recorded (log-spaced, the last = iterations; 0 = start);
    critic ``(B, M, S)`` V_n; policy ``(B, M, S, A)`` pi_theta_n; config: the parameters."""

    grid: np.ndarray
    critic: np.ndarray
    policy: np.ndarray
    config: dict[str, Any] = field(default_factory=dict)


def record_grid(iterations: int, points: int = 40) -> np.ndarray:
    """``(M,)`` 0, then up to ``points`` log-spaced iterations in [1, iterations], increasing."""
    return np.unique(np.concatenate([[0], np.geomspace(1, iterations, points).astype(np.int64),
                                     [iterations]]))  # fmt: skip


def critic_target(cost: np.ndarray, V_next: np.ndarray) -> np.ndarray:
    """The undiscounted SSP target ``c(s, a) + V(s')`` (``V(goal) = 0``)."""
    return cost + V_next


def actor_step(theta, pi, onehot, delta, step: float, C: float) -> np.ndarray:
    """``Gamma_C(theta - step * delta * (e_a - pi))``: descend the cost; ``(B, S, A)``."""
    return np.clip(theta - step * delta[..., None] * (onehot - pi), -C, C)


def _sample(u: np.ndarray, cdf: np.ndarray) -> np.ndarray:
    """One index per row of the cumulative distributions ``cdf (..., K)``, by inversion of the
    uniforms ``u (...)``."""
    return np.minimum((u[..., None] > cdf).sum(axis=-1), cdf.shape[-1] - 1)


CHUNK = 512  # iterations of uniforms drawn at once per seed (each seed keeps its own stream)


def two_timescale(problem: SSPProblem, iterations: int, rngs, *, timescale: str,
                  C: float = 5.0, actor_scale: float = 5.0, critic_scale: float = 1.0,
                  offset: float = 100.0) -> SSPRun:  # fmt: skip
    """Run AC or CA (module docstring) for ``iterations`` synchronous sweeps on every seed."""
    if timescale not in TIMESCALES:
        raise ValueError(f"timescale must be one of {', '.join(TIMESCALES)}, got {timescale!r}")
    for key, value in (
        ("C", C),
        ("actor_scale", actor_scale),
        ("critic_scale", critic_scale),
        ("offset", offset),
    ):
        if not (isinstance(value, (int, float)) and np.isfinite(value) and value > 0):
            raise ValueError(f"parameter {key} must be a finite number > 0, got {value!r}")
    if critic_scale > 1:
        raise ValueError(
            f"parameter critic_scale must be <= 1 (a TD step above 1 overshoots), got "
            f"{critic_scale}"
        )
    B, S, A = len(rngs), problem.n_states, problem.n_actions
    grid = record_grid(iterations)
    P_cdf = np.cumsum(problem.P, axis=2)  # (S, A, S+1)
    states = np.arange(S)
    V = np.zeros((B, S + 1))  # (B, S+1), V[:, S] = 0: the goal
    theta = np.zeros((B, S, A))
    eye = np.eye(A)
    critic = np.empty((B, grid.size, S))
    policy = np.empty((B, grid.size, S, A))
    critic[:, 0], policy[:, 0] = V[:, :S], softmax_policy(theta)
    rows = np.arange(B)[:, None]
    g = 1
    for n in range(1, iterations + 1):
        k = (n - 1) % CHUNK
        if k == 0:  # (B, CHUNK, 2, S): per seed, its next CHUNK sweeps' uniforms
            U = np.stack([r.random((CHUNK, 2, S)) for r in rngs])
        pi = softmax_policy(theta)  # (B, S, A)
        a = _sample(U[:, k, 0], np.cumsum(pi, axis=-1))  # (B, S)
        s_next = _sample(U[:, k, 1], P_cdf[states, a])  # (B, S)
        delta = critic_target(problem.c[states, a], V[rows, s_next]) - V[:, :S]  # (B, S)
        fast, slow = 1.0 / (n + offset) ** FAST, 1.0 / (n + offset) ** SLOW
        critic_step, step = (fast, slow) if timescale == "actor-critic" else (slow, fast)
        V[:, :S] += critic_scale * critic_step * delta
        theta = actor_step(theta, pi, eye[a], delta, actor_scale * step, C)
        if n == grid[g]:
            critic[:, g], policy[:, g] = V[:, :S], softmax_policy(theta)
            g += 1
    config = {"timescale": timescale, "C": C, "actor_scale": actor_scale,
              "critic_scale": critic_scale, "offset": offset,
              "exponents": (FAST, SLOW)}  # fmt: skip
    return SSPRun(grid=grid, critic=critic, policy=policy, config=config)


def _registered(name: str, timescale: str, default_actor_scale: float, doc: str):
    """Register the ``timescale`` variant as ``name`` (its own default actor scale)."""

    def learner(problem, iterations, rngs, C: float = 5.0,
                actor_scale: float = default_actor_scale, critic_scale: float = 1.0,
                offset: float = 100.0) -> SSPRun:  # fmt: skip
        return two_timescale(problem, iterations, rngs, timescale=timescale, C=C,
                             actor_scale=actor_scale, critic_scale=critic_scale,
                             offset=offset)  # fmt: skip

    learner.__name__ = learner.__qualname__ = name.replace("-", "_")
    learner.__doc__ = doc
    return register(name, kind="ssp", problem="ssp-trap", papers=("000#51",))(learner)


ssp_actor_critic = _registered(
    "ssp-ac", "actor-critic", 20.0,
    "SSP actor-critic (Guin & Bhatnagar 2025, tabular AC; reconstructed): critic fast, actor "
    "slow (emulates policy iteration).",
)  # fmt: skip
ssp_critic_actor = _registered(
    "ssp-ca", "critic-actor", 5.0,
    "SSP critic-actor (Guin & Bhatnagar 2025, tabular CA; reconstructed): actor fast, critic "
    "slow (emulates value iteration).",
)  # fmt: skip
