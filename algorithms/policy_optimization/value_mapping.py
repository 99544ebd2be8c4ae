r"""Orchestrated value mapping: Q-learning in mapped spaces over several reward channels.

Seed row ``seed-catalogue-001.md#5``: M. Fatemi, A. Tavakoli, "Orchestrated Value Mapping for
Reinforcement Learning", ICLR 2022 (arXiv:2203.07171).

What was read [V] (the abstract and the introduction, stored arXiv text): a general convergent
class built on (1) mapping value estimates to another space with functions "from a broad class"
and (2) "linearly decomposing the reward signal into multiple channels"; it "generalizes and
subsumes" Q-learning, Log Q-learning (van Seijen et al. 2019: the log space, with the step taken
in the regular space first) and Q-decomposition. Not read: the paper's algorithm box and the
theorem's exact conditions. Written from memory of the paper and of Log Q-learning [M], derived
or chosen [A]:

* channels j = 1..J with rewards r_j (S, A) and weights w_j, r = sum_j w_j r_j [M]; a mapping
  f_j per channel with inverse f_j^{-1}; the aggregate Q(s, a) = sum_j w_j f_j^{-1}(Qt_j(s, a));
* one update of pair (s, a) with s' ~ P(.|s, a) [M]:
      a~  = argmax_a' Q(s', a')                                  (greedy in the aggregate),
      U_j = r_j(s, a) + gamma f_j^{-1}(Qt_j(s', a~)),
      Uh_j = f_j^{-1}(Qt_j(s, a)) + beta_reg (U_j - f_j^{-1}(Qt_j(s, a)))   (regular space),
      Qt_j(s, a) <- Qt_j(s, a) + beta_f (f_j(Uh_j) - Qt_j(s, a))            (mapped space);
* the convergence conditions, as stated here [M]: each f_j a continuous, strictly monotone
  bijection onto its image (so f_j^{-1} exists and is monotone) defined on every value the
  channel can take; the rewards decompose exactly; step sizes with sum beta = infinity, sum
  beta^2 < infinity and every pair updated infinitely often. Then Q -> Q* (no rate is stated).
  The control ``square`` (f(x) = x^2, f^{-1}(y) = sqrt(|y|): a bijection on [0, inf) only)
  breaks the first condition on the ``shifted`` channels, whose first channel's values are <= 0;
* synchronous generative-model sampling (every pair updated once per iteration, one s' draw
  shared by the channels) and beta_reg,k = (1 + (1 - gamma) k)^{-power} (power in (1/2, 1];
  the rescaled linear schedule at power 1) [A]; beta_f = 1 by default [A].

Measured (claim ``orchestrated-q-converges``, full scale: 5 random MDPs S = 6, A = 3,
gamma = 0.9, K = 20000): identity + one channel = Q-learning bit for bit; ||Q_K - Q*||_inf /
||Q*||_inf = 0.0022 for log/sign, identity/shifted and identity/scales at beta_f = 1 (the mapping
cancels when beta_f = 1: the same numbers to round-off), 0.025 for log/sign at beta_f = 0.5;
the square map on the shifted channels stays >= 0.286 away.

Mappings (``MAPPINGS``): ``identity``; ``log``: f(x) = log(x + d), f^{-1}(y) = e^y - d with d = 1e-2
(defined for x > -d: the channel's rewards must be >= 0, which the ``sign`` decomposition ensures,
as Log Q-learning's positive/negative split does); ``square`` (the control). Channel decompositions
(``CHANNELS``; the model's rewards lie in [0, 1]): ``single`` (r itself); ``sign`` (Log
Q-learning's split of the centred reward: 1/2, (r - 1/2)^+ and (r - 1/2)^- with weights +1, +1,
-1: every channel >= 0); ``shifted`` (r - 1 <= 0 and the constant 1); ``scales``
(r = sum_j w_j r_j with weights w = (1, 10, 100) and r_j = u_j r / w_j for a random partition
u (Dirichlet per pair): channels whose rewards differ by two orders of magnitude).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from theorylab.algorithms.policy_optimization.leverage_average import optimal_q
from theorylab.algorithms.policy_optimization.path import (
    PolicyPath,
    check_iterations,
    check_number,
    policy_objectives,
)
from theorylab.algorithms.registry import register

PAPERS = ("001#5",)
LOG_SHIFT = 1e-2  # d in f(x) = log(x + d)


def _log(x):
    return np.log(x + LOG_SHIFT)


def _exp(y):
    return np.exp(y) - LOG_SHIFT


def _square(x):
    return x * x


def _sqrt(y):
    return np.sqrt(np.abs(y))


MAPPINGS: dict[str, tuple[Callable, Callable]] = {
    "identity": (lambda x: x, lambda y: y),
    "log": (_log, _exp),
    "square": (_square, _sqrt),  # violates the conditions (not injective): the control
}
CHANNELS = ("single", "sign", "shifted", "scales")


def channel_rewards(R: np.ndarray, channels: str, seed: int = 0):
    """(rewards (J, S, A), weights (J,)) with sum_j w_j r_j = R exactly (to round-off)."""
    if channels == "single":
        return R[None].copy(), np.ones(1)
    if channels == "sign":  # Log Q-learning's split of the centred reward, plus the centre
        c = np.full_like(R, 0.5)
        parts = [c, np.maximum(R - c, 0.0), np.maximum(c - R, 0.0)]
        return np.stack(parts), np.array([1.0, 1.0, -1.0])
    if channels == "shifted":  # r - 1 (<= 0: channel values <= 0) and the constant 1
        return np.stack([R - 1.0, np.ones_like(R)]), np.ones(2)
    if channels == "scales":
        u = np.random.default_rng(seed).dirichlet(np.ones(3), size=R.shape)  # (S, A, 3)
        w = np.array([1.0, 10.0, 100.0])
        parts = np.moveaxis(u, -1, 0) * R[None] / w[:, None, None]
        return parts, w
    raise ValueError(
        f"orchestrated-q: channels must be one of {', '.join(CHANNELS)}, got {channels!r}"
    )


def aggregate(Qt: np.ndarray, weights: np.ndarray, inverse: Callable) -> np.ndarray:
    """Q (S, A) = sum_j w_j f^{-1}(Qt_j) from Qt (J, S, A)."""
    return np.tensordot(weights, inverse(Qt), axes=1)


def mapped_q_learning(
    mdp,
    iterations: int,
    *,
    mapping: str = "log",
    channels: str = "sign",
    beta_f: float = 1.0,
    power: float = 1.0,
    seed: int = 0,
) -> tuple[np.ndarray, np.ndarray]:
    """K synchronous iterations of orchestrated value mapping (module docstring) from Q = 0.

    Returns (aggregate Q_k (K+1, S, A), the mapped tables at the end (J, S, A))."""
    if mapping not in MAPPINGS:
        raise ValueError(
            f"orchestrated-q: mapping must be one of {', '.join(MAPPINGS)}, got {mapping!r}"
        )
    K = check_iterations("orchestrated-q", iterations)
    beta_f = check_number("orchestrated-q", "beta_f", beta_f)
    if beta_f > 1:
        raise ValueError(f"orchestrated-q: beta_f must lie in (0, 1], got {beta_f!r}")
    power = check_number("orchestrated-q", "power", power)
    if not 0.5 < power <= 1.0:
        raise ValueError(f"orchestrated-q: power must lie in (0.5, 1], got {power!r}")
    f, f_inv = MAPPINGS[mapping]
    R = np.asarray(mdp.reward(0), dtype=np.float64)
    rewards, w = channel_rewards(R, channels, seed)
    if mapping == "log" and rewards.min() < 0:
        raise ValueError(
            "orchestrated-q: the log mapping needs channel rewards >= 0; use channels='sign' "
            f"(got channels={channels!r} with a reward of {rewards.min():.3g})"
        )
    S, A, g = mdp.S, mdp.A, mdp.gamma
    cdf = np.cumsum(mdp.dense_P(), axis=2)  # (S, A, S)
    rng = np.random.default_rng(seed)
    Qt = f(np.zeros((len(w), S, A)))  # (J, S, A)
    qs = [aggregate(Qt, w, f_inv)]
    u = rng.random((K, S, A, 1))  # the same stream as K draws of (S, A, 1)
    draws = np.minimum((cdf[None] < u).sum(axis=3), S - 1)  # (K, S, A) sampled next states
    for k in range(K):
        nxt = draws[k]
        best = np.argmax(aggregate(Qt, w, f_inv), axis=1)  # (S,) greedy in the aggregate
        regular = f_inv(Qt)  # (J, S, A)
        U = rewards + g * regular[:, nxt, best[nxt]]
        beta_reg = (1.0 + (1.0 - g) * k) ** -power
        Uh = regular + beta_reg * (U - regular)
        Qt = f(Uh) if beta_f == 1.0 else Qt + beta_f * (f(Uh) - Qt)
        qs.append(aggregate(Qt, w, f_inv))
    return np.stack(qs), Qt


@register(
    "orchestrated-q",
    kind="policy-optimization",
    problem="tabular-discounted",
    papers=PAPERS,
)
def orchestrated_q(
    problem,
    iterations,
    mapping: str = "log",
    channels: str = "sign",
    beta_f: float = 1.0,
    power: float = 1.0,
    seed: int = 0,
):
    """Q-learning with value mappings f_j over reward channels (synchronous, generative model);
    config['q_error'] = ||Q_k - Q*||_inf against value iteration."""
    if getattr(problem, "gamma", None) is None:
        raise ValueError(
            "orchestrated-q is stated for discounted MDPs; give one with gamma (e.g. "
            f"random:S=5,A=2,gamma=0.9), got {getattr(problem, 'name', problem)!r}"
        )
    qs, _ = mapped_q_learning(
        problem, iterations, mapping=mapping, channels=channels, beta_f=beta_f, power=power,
        seed=seed,
    )  # fmt: skip
    q_star = optimal_q(problem)
    mu0 = problem.mu0
    pis = np.eye(problem.A)[np.argmax(qs, axis=2)]  # (K+1, S, A) greedy policies
    return PolicyPath(
        objective=policy_objectives(problem, pis),
        regularised=np.full(len(qs), np.nan),
        entropy=np.zeros(len(qs)),
        target_gap=np.full(len(qs), np.nan),  # no KL limit: the Q error is in config
        target_value=float(q_star.max(axis=1) @ mu0),
        policies=pis,
        config={
            "mapping": mapping,
            "channels": channels,
            "beta_f": beta_f,
            "power": power,
            "seed": int(seed),
            "q_error": np.abs(qs - q_star[None]).max(axis=(1, 2)).tolist(),  # ||Q_k - Q*||_inf
        },
    )  # fmt: skip
