"""Average-reward policy learning from a generative model by reduction to a discounted MDP and
perturbed model-based planning (seed row 001#1).

Seed reference: ``seed-catalogue-001.md#1``. Paper: S. Wang, J. Blanchet, P. Glynn, "Optimal
Sample Complexity for Average Reward Markov Decision Processes", arXiv:2310.08833 (ICLR 2024).
What was read: the abstract and a summary [V: abstract]: for a uniformly ergodic MDP with a
generative model, an estimator of an eps-optimal policy with ``O~(S A t_mix eps^-2)`` samples
(the lower bound; the earlier upper bound was ``O~(S A t_mix^2 eps^-2)``), built by "a reduction
to uniformly ergodic discounted MDPs and a perturbed model-based planning approach" (combining
Jin & Sidford 2021 with Li et al. 2020). The algorithm below is reconstructed from that
description [A]; the paper's constants were not read.

Estimator (:func:`plugin_policy`) [A]:

1. draw n next states from the generative model at every pair (s, a); ``P_hat = counts / n``;
2. discount ``gamma = 1 - eps / (c_gamma t_mix)`` (the reduction: an effective horizon
   ``t_mix / eps``; t_mix is the model's mixing time, known to the estimator as the paper's
   uniform bound is);
3. perturb the known rewards, ``r~ = r + U(0, zeta)`` i.i.d. per pair with
   ``zeta = (1 - gamma) eps / 4`` (Li et al. 2020's tie-breaking perturbation), and return the
   optimal policy of the discounted model ``(P_hat, r~, gamma)`` (policy iteration, exact
   evaluation); the gain estimate is ``(1 - gamma) mean_s V_hat(s)``.

Rewards are known and deterministic (the generative model samples transitions). Counts for an
increasing list of n are nested (each n adds multinomial draws to the previous counts: the same
law as fresh samples), so one seed's curve is one sample path.
"""

from __future__ import annotations

import numpy as np

from theorylab.algorithms.planning.average_reward import mixing_time, model_arrays
from theorylab.algorithms.planning.value_iteration import policy_iteration
from theorylab.algorithms.registry import register
from theorylab.mdps.tabular import TabularMDP

PAPERS = ("001#1",)


def discount_for(eps: float, t_mix: float, c_gamma: float = 1.0) -> float:
    """The reduction's discount ``1 - eps / (c_gamma t_mix)`` [A]."""
    return 1.0 - eps / (c_gamma * t_mix)


def draw_counts(P: np.ndarray, n: int, rng: np.random.Generator) -> np.ndarray:
    """``(S, A, S)`` counts of n generative-model draws at every pair."""
    S, A, _ = P.shape
    flat = P.reshape(S * A, S)
    return np.stack([rng.multinomial(n, row / row.sum()) for row in flat]).reshape(S, A, S)


def plugin_policy(
    P_hat: np.ndarray, R: np.ndarray, gamma: float, zeta: float, rng: np.random.Generator
) -> tuple[np.ndarray, float]:
    """The perturbed plug-in discounted optimum: ``(policy (S,), gain estimate)``."""
    R_pert = np.clip(R + rng.uniform(0.0, zeta, size=R.shape), 0.0, 1.0)
    model = TabularMDP(P_hat, R_pert, gamma=gamma, name="plug-in")
    sol = policy_iteration(model)
    policy = np.asarray(sol.policy)
    policy = policy.argmax(axis=-1) if policy.ndim == 2 else policy
    return policy.astype(np.int64), float((1.0 - gamma) * np.mean(sol.V))


def plugin_runs(mdp, samples: list[int], rngs, *, eps, t_mix, c_gamma, perturb):
    """Every seed's policies ``(B, N, S)`` and gain estimates ``(B, N)`` at each n."""
    P, R = model_arrays(mdp)
    S, A = R.shape
    tm = float(mixing_time((P, R)) if t_mix is None else t_mix)
    gamma = discount_for(eps, tm, c_gamma)
    zeta = (1.0 - gamma) * eps / 4.0 if perturb else 0.0
    policies = np.zeros((len(rngs), len(samples), S), dtype=np.int64)
    gains = np.zeros((len(rngs), len(samples)))
    for b, rng in enumerate(rngs):
        counts = np.zeros((S, A, S))
        drawn = 0
        for j, n in enumerate(samples):
            counts += draw_counts(P, n - drawn, rng)
            drawn = n
            policies[b, j], gains[b, j] = plugin_policy(counts / n, R, gamma, zeta, rng)
    return policies, gains, {"gamma": gamma, "t_mix": tm, "zeta": zeta, "eps": eps}


@register(
    "plugin-average",
    kind="average-reward-generative",
    problem="tabular",
    bounds=("wang2023-avg-sample-complexity",),
    papers=PAPERS,
    summary="generative model: perturbed plug-in on the discounted reduction, gamma = 1 - "
    "eps / t_mix (Wang, Blanchet & Glynn 2023, reconstructed)",
)
def plugin_average(
    mdp,
    samples,
    rngs,
    eps: float = 0.01,
    t_mix: float | None = None,
    c_gamma: float = 1.0,
    perturb: bool = True,
):
    """The estimator at every n of ``samples`` (per pair) for every seed generator."""
    if not 0.0 < float(eps) < 1.0:
        raise ValueError(f"plugin-average: eps must be in (0, 1), got {eps!r}")
    if t_mix is not None and not float(t_mix) >= 1.0:
        raise ValueError(f"plugin-average: t_mix must be >= 1 (or None: computed), got {t_mix!r}")
    if not float(c_gamma) > 0.0:
        raise ValueError(f"plugin-average: c_gamma must be positive, got {c_gamma!r}")
    return plugin_runs(
        mdp,
        samples,
        rngs,
        eps=float(eps),
        t_mix=t_mix,
        c_gamma=float(c_gamma),
        perturb=bool(perturb),
    )


@register(
    "null-generative",
    kind="average-reward-generative",
    problem="tabular",
    summary="null baseline: ignores the samples and returns a fixed policy "
    "(state s plays action s mod A)",
)
def null_generative(mdp, samples, rngs):
    """A non-learning estimator: the same fixed policy whatever the samples."""
    _, R = model_arrays(mdp)
    S, A = R.shape
    fixed = np.arange(S) % A
    policies = np.broadcast_to(fixed, (len(rngs), len(samples), S)).copy()
    return policies, np.full((len(rngs), len(samples)), np.nan), {"policy": "fixed"}
