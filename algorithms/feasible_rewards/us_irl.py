"""US-IRL: the feasible reward set estimated from a generative model by uniform sampling (seed
row 001#2, ``seed-catalogue-001.md#2``).

Paper: A. M. Metelli, F. Lazzati, M. Restelli, "Towards Theoretical Understanding of Inverse
Reinforcement Learning", ICML 2023, arXiv:2304.12966.

What was read [V]: the abstract only -- finite-horizon IRL with a generative model; the problem
is to estimate the feasible reward set (the rewards compatible with the expert) to accuracy eps
with confidence 1 - delta; a minimax lower bound ``Omega(H^3 S A / eps^2 (log(1/delta) + S))``;
a uniform sampling strategy (US-IRL) whose sample complexity matches it up to logarithmic
factors. The body (algorithm box, theorem constants, the exact distance) was not reachable in
the time box.

Reconstructed [A]:

* the feasible set and its explicit form (``feasible_set.py``): rewards in ``[-1, 1]``, the
  expert optimal at every stage and state; the expert's advantage 0, the others' <= 0;
* the distance: L-infinity between rewards, Hausdorff between sets (the abstract's rate is
  what this distance gives with time-inhomogeneous transitions: n = H^2 (S + log(SAH/delta)) /
  eps^2 draws per triple, ``H S A`` triples);
* the algorithm: n next-state draws for every triple ``(h, s, a)`` (``H S A n`` in all), the
  empirical transitions ``p_hat``, the estimate ``R_{p_hat}`` (the plug-in feasible set);
* the confidence radius (:func:`confidence_radius`), derived here, not the paper's constant:
  the L1 concentration of Weissman et al. (2003), ``P(||p_hat - p||_1 >= t) <= 2^S
  exp(-n t^2 / 2)``, union over the ``S A (H - 1)`` triples whose successor values matter, and
  ``|(p - p_hat) V_{h+1}| <= (H - h) ||p - p_hat||_1`` for the expert's value in ``[-(H - h),
  H - h]``::

      eps(n, delta) = (H - 1) sqrt(2 (S ln 2 + ln(S A H / delta)) / n)

  It bounds ``d(r, R_{p_hat})`` for a feasible r whose coupled reward (same ``(V, zeta)``
  through ``p_hat``, ``feasible_set.coupled_reward``) stays in the box -- on ``irl-trap``
  whenever eps < 1. The trivial bound is 1 (the zero reward is feasible for every p): a radius
  >= 1 is vacuous. Inverting it gives the sample complexity of the bound card
  ``metelli2023-us-irl`` (``bounds/cards/feasible_rewards.py``): ``N = 2 (H - 1)^2 S A H (S ln 2 +
  ln(SAH/delta)) / eps^2``.

Deviations: none known beyond the reconstruction; rewards only in ``[-1, 1]``; deterministic
expert (the paper allows a stochastic one).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from theorylab.algorithms.registry import register


@dataclass(frozen=True)
class IRLEstimate:
    """p_hat ``(B, H, S, A, S)`` the empirical transitions per seed; radius: the confidence
    radius eps(n, delta) of the estimated set; samples: n per triple."""

    p_hat: np.ndarray
    radius: float
    samples: int


def confidence_radius(n: int, S: int, A: int, H: int, delta: float) -> float:
    """``(H - 1) sqrt(2 (S ln 2 + ln(S A H / delta)) / n)`` (module docstring)."""
    return (H - 1) * float(np.sqrt(2.0 * (S * np.log(2.0) + np.log(S * A * H / delta)) / n))


def transition_estimate(problem, n: int, rng: np.random.Generator) -> np.ndarray:
    """``(H, S, A, S)`` the empirical transitions of n generative-model draws per triple."""
    return problem.sample(n, rng) / n


@register(
    "us-irl",
    kind="irl-generative",
    problem="irl-trap",
    bounds=("metelli2023-us-irl", "metelli2023-irl-lower"),
    papers=("001#2",),
    summary="US-IRL (Metelli et al. 2023): n generative-model draws per (h, s, a), the plug-in "
    "feasible reward set R_{p_hat} with the confidence radius eps(n, delta)",
)
def us_irl(problem, samples: int, rngs, delta: float = 0.1) -> IRLEstimate:
    """The estimate of every seed generator in ``rngs`` with ``samples`` draws per triple."""
    if not (isinstance(delta, (int, float)) and 0.0 < delta < 1.0):
        raise ValueError(f"us-irl: delta must be a number in (0, 1), got {delta!r}")
    H, S, A = problem.shape
    p_hat = np.stack([transition_estimate(problem, samples, rng) for rng in rngs])
    return IRLEstimate(p_hat, confidence_radius(samples, S, A, H, float(delta)), samples)
