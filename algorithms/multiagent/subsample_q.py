"""SUBSAMPLE-Q: a global agent learns on k sub-sampled local agents and deploys a randomised
policy that re-samples k of the n agents every step (seed row 001#3:
``seed-catalogue-001.md#3``).

Paper: E. Anand, G. Qu, "Efficient Reinforcement Learning for Global Decision Making in the
Presence of Local Agents at Scale", arXiv:2403.00222 (2024). What was read [V]: the abstract
(v3 and the arXiv listing): the global agent sub-samples k <= n local agents to compute a policy
in time polynomial (the listing says exponential) in k; the learned policy converges to the
optimal one as ``O~(1/sqrt(k) + eps_{k,m})``, eps_{k,m} the Bellman noise of the m-sample
updates, by a Dvoretzky-Kiefer-Wolfowitz inequality for sampling without replacement; the
simulations are demand response and queueing. The algorithm box, the theorem's constants and the
exact model assumptions were **not** read (time-boxed search: only abstracts were reachable).

Reconstructed [A] (the model of ``theorylab.mdps.local_agents``): a global state g moved by the
global action, n exchangeable local agents with binary states moved given g, reward
``r_g(g, a) + (1/n) sum_i r_l(g, s_i)``. For such agents the empirical distribution of a
k-subset's states is its count j in [0, k], so:

1. Learning (:func:`learn`): Q-learning on the k-agent system over the states ``(g, j)``, with a
   generative model: each of T iterations draws, for every ``(g, j, a)``, m next states of the
   k-agent system and sets ``Q_{t+1}(g, j, a) = r_k(g, j, a) + gamma/m sum_l max_a'
   Q_t(g'_l, j'_l, a')`` (``samples=None``: the exact Bellman operator, eps_{k,m} = 0). The cost
   is ``T G (k+1) A m`` draws: polynomial in k and independent of n (the learner never sees n).
2. Deployment (:func:`deployed_policy`): at every step the global agent draws k of the n agents
   uniformly without replacement, reads their count j and plays ``argmax_a Q(g, j, a)``. On the
   n-agent system in state (g, c) the count of the subset is hypergeometric, so the deployed
   policy is the stochastic policy ``pi(a | g, c) = sum_j Hyp(j; n, c, k) 1[a = argmax Q(g, j,
   .)]`` on the count chain, evaluated exactly (:func:`deployed_values`).

Constants: T = ceil(log(1 / ((1 - gamma) tol)) / (1 - gamma)) iterations with tol = 1e-4 (the
exact operator's error gamma^T / (1 - gamma) <= tol); greedy ties go to the lowest action.
Deviations: binary local states and a global-only action (the paper's local agents may act);
Q-learning with fresh m draws per iteration and pair (the paper's update rule not read); the
rate's constant is not the paper's (not read): the claim fits the exponent and checks the
measured gap against ``sqrt(1/k)`` times a constant fitted at the smallest k, see
``validations/claims/multiagent.py``.

Measured (claim ``subsample-q-gap-vs-k``, quick scale, demand instance, gamma = 0.9, n = 256,
exact operator): worst-case gap 0.291 / 0.201 / 0.124 / 0.077 at k = 4 / 8 / 16 / 32, slope
-0.644 [-0.765, -0.524]; at k = 32 with m = 5 / 50 draws the gap is 0.109 / 0.079 (exact 0.077)
and the Bellman noise 0.158 / 0.048. Without re-sampling at deployment (the control) the
worst-case gap is 3.01 / 2.91 / 2.90 / 2.67 (slope -0.05). Full scale (n = 512, k = 4..64, 6
seeds): gap 0.293 / 0.202 / 0.126 / 0.080 / 0.053, slope -0.629 [-0.672, -0.585]; at k = 16 the
gap is 0.112 / 0.124 / 0.127 for n = 64 / 256 / 1024; at k = 32, m = 5 / 50 / 500 gives gap
0.140 / 0.086 / 0.080 (exact 0.080) and Bellman noise 0.160 / 0.046 / 0.016 (slope -0.505).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.stats import hypergeom

from theorylab.algorithms.registry import register
from theorylab.mdps.local_agents import LocalAgentsProblem, count_transition

TOL = 1e-4  # learning iterations: gamma^T / (1 - gamma) <= TOL for the exact operator


def iterations(gamma: float, tol: float = TOL) -> int:
    """T with ``gamma^T / (1 - gamma) <= tol`` (at least 1)."""
    if gamma == 0.0:
        return 1
    return max(1, math.ceil(math.log(1.0 / ((1.0 - gamma) * tol)) / -math.log(gamma)))


@dataclass(frozen=True)
class SubsampleQ:
    """What SUBSAMPLE-Q learned: ``Q (G, k+1, A)`` on the k-agent system; draws: the number of
    generative-model draws used (0 for the exact operator); sweeps: the Bellman iterations."""

    Q: np.ndarray
    k: int
    samples: int | None
    draws: int
    sweeps: int

    def greedy(self) -> np.ndarray:
        """``(G, k+1)`` the action played when the sub-sample's count is j."""
        return np.argmax(self.Q, axis=-1)

    def deployed_values(self, problem: LocalAgentsProblem) -> np.ndarray:
        """``(G, n+1)`` the exact values of the deployed policy on the n-agent system, the worst
        over which agents are in state 1 when c are (:func:`deployed_values`)."""
        return deployed_values(problem, self)


def _check(problem, k: int, samples) -> None:
    if not isinstance(problem, LocalAgentsProblem):
        raise ValueError(
            "subsample-q runs on a local-agents problem (e.g. local-agents:n=64), got "
            f"{getattr(problem, 'name', type(problem).__name__)!r}"
        )
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or not 1 <= k <= problem.n:
        raise ValueError(f"subsample-q: k must be an integer in [1, n = {problem.n}], got {k!r}")
    if samples is not None and (
        isinstance(samples, bool) or not isinstance(samples, (int, np.integer)) or samples < 1
    ):
        raise ValueError(
            f"subsample-q: samples (m) must be an integer >= 1 or None, got {samples!r}"
        )


def learn(
    problem: LocalAgentsProblem, k: int, samples: int | None, rng: np.random.Generator
) -> SubsampleQ:
    """Q-learning on the k-agent system (module docstring, step 1)."""
    G, A, gamma = problem.G, problem.A, problem.gamma
    R = problem.count_reward(k).reshape(G, k + 1, A)  # (G, k+1, A)
    T = iterations(gamma)
    Q = np.zeros((G, k + 1, A))
    if samples is None:
        Tk = count_transition(problem.p_on, k)  # (G, k+1, k+1)
        for _ in range(T):
            V = Q.max(axis=-1)  # (G, k+1)
            # E[V(g', j') | g, j, a] = sum_g' P_g[g, a, g'] sum_j' Tk[g, j, j'] V[g', j']
            EV = np.einsum("gah,gjd,hd->gja", problem.P_g, Tk, V)
            Q = R + gamma * EV
        return SubsampleQ(Q=Q, k=int(k), samples=None, draws=0, sweeps=T)
    m = int(samples)
    g = np.arange(G)[:, None, None, None]
    j = np.arange(k + 1)[None, :, None, None]
    a = np.arange(A)[None, None, :, None]
    shape = (G, k + 1, A, m)
    for _ in range(T):
        g2, j2 = problem.sample_next(np.broadcast_to(g, shape), np.broadcast_to(j, shape),
                                     np.broadcast_to(a, shape), k, rng)  # fmt: skip
        V = Q.max(axis=-1)  # (G, k+1)
        Q = R + gamma * V[g2, j2].mean(axis=-1)
    return SubsampleQ(Q=Q, k=int(k), samples=m, draws=T * G * (k + 1) * A * m, sweeps=T)


def deployed_policy(problem: LocalAgentsProblem, learned: SubsampleQ) -> np.ndarray:
    """``pi (G (n+1), A)`` on the n-agent count chain: k agents drawn without replacement every
    step, the greedy action of their count (module docstring, step 2)."""
    n, k, G, A = problem.n, learned.k, problem.G, problem.A
    c = np.arange(n + 1)[:, None]  # (n+1, 1)
    j = np.arange(k + 1)[None, :]  # (1, k+1)
    hyp = hypergeom.pmf(j, n, c, k)  # (n+1, k+1): Pr(j of the k drawn are in state 1 | c)
    onehot = np.eye(A)[learned.greedy()]  # (G, k+1, A)
    pi = np.einsum("cj,gja->gca", hyp, onehot)  # (G, n+1, A)
    return pi.reshape(G * (n + 1), A)


def deployed_values(problem: LocalAgentsProblem, learned: SubsampleQ) -> np.ndarray:
    """``(G, n+1)`` the exact discounted value of :func:`deployed_policy` on the count chain
    (a linear solve)."""
    from theorylab.algorithms.planning.evaluation import evaluate_discounted

    V = evaluate_discounted(problem.count_mdp(), deployed_policy(problem, learned))
    return V.reshape(problem.G, problem.n + 1)


def fixed_subset_values(
    problem: LocalAgentsProblem, learned: SubsampleQ, tol: float = 1e-10
) -> np.ndarray:
    """``(G, n+1)`` the values of the deployment **without re-sampling** (the control: the same k
    agents observed at every step), the worst over which agents are in state 1 when c are.

    The state is ``(g, i, o)``: i of the k observed agents and o of the n - k others in state 1;
    the action is ``argmax Q(g, i, .)``. Evaluated by iterating the policy's Bellman operator
    (the two counts move independently given g) until the sup change is below
    ``tol (1 - gamma)``; V(g, c) = min over i + o = c."""
    n, k, G, gamma = problem.n, learned.k, problem.G, problem.gamma
    Ti = count_transition(problem.p_on, k)  # (G, k+1, k+1)
    To = count_transition(problem.p_on, n - k)  # (G, n-k+1, n-k+1)
    act = learned.greedy()  # (G, k+1)
    Pg = problem.P_g[np.arange(G)[:, None], act]  # (G, k+1, G): P_g[g, act(g, i), g']
    c = np.arange(k + 1)[:, None] + np.arange(n - k + 1)[None, :]  # (k+1, n-k+1)
    frac = c / n
    R = problem.r_g[np.arange(G)[:, None], act][:, :, None] + (
        frac[None] * problem.r_l[:, 1, None, None]
        + (1 - frac[None]) * problem.r_l[:, 0, None, None]
    )  # (G, k+1, n-k+1)
    V = np.zeros_like(R)
    while True:
        # E[V(g', i', o') | g, i, o] = sum_g' Pg[g,i,g'] sum_i' Ti[g,i,i'] sum_o' To[g,o,o'] V
        # (two batched matrix products, then the sum over g')
        W = np.matmul(V[None], To.transpose(0, 2, 1)[:, None])  # (G, G', k+1, n-k+1): o' summed
        W = np.matmul(Ti[:, None], W)  # (G, G', k+1, n-k+1): i' summed
        EV = np.einsum("gih,ghio->gio", Pg, W)
        V_new = R + gamma * EV
        done = np.max(np.abs(V_new - V)) <= tol * (1 - gamma)
        V = V_new
        if done:
            break
    out = np.full((G, n + 1), np.inf)
    for i in range(k + 1):
        out[:, i : i + n - k + 1] = np.minimum(out[:, i : i + n - k + 1], V[:, i, :])
    return out


@register(
    "subsample-q",
    kind="local-agents",
    problem="local-agents",
    papers=("001#3",),
    bounds=("anand-qu2024-subsample-q",),
    summary="SUBSAMPLE-Q (Anand & Qu 2024): Q-learning on k sub-sampled local agents (m "
    "generative draws per update), deployed by re-sampling k of the n agents every step",
)
def subsample_q(problem, k, samples, rng) -> SubsampleQ:
    """Learn on k agents with m = ``samples`` draws per update (None: exact Bellman operator)."""
    _check(problem, k, samples)
    return learn(problem, int(k), samples, rng)
