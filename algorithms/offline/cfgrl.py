r"""CFGRL: diffusion guidance as a policy improvement operator, in its exact tabular core.

Seed: ``seed-catalogue-000.md#68`` (tier B). Paper: Frans, Park, Abbeel, Levine, "Diffusion
Guidance Is a Controllable Policy Improvement Operator", 2025 (arXiv:2505.23458). Read: the
abstract and third-party summaries of the paper's Section 3 (the paper's own text was not read)
[V for: the product policy ``pi(a|s) ∝ pi_hat(a|s) f(A^{pi_hat}(s, a))`` with f non-negative and
non-decreasing in the reference policy's advantage improves on pi_hat (Theorem 1); the attenuated
``pi_w(a|s) ∝ pi_hat(a|s) f(A^{pi_hat}(s, a))^w`` has pi_{w2} improving on pi_{w1} for
``w2 > w1 >= 0`` (Theorem 2); ``f = exp(A / beta)`` is the KL-regularised optimum (Remark 3);
f is cast as the likelihood ``p(o | s, a)`` of a binary optimality variable o, and classifier-free
guidance samples the product without learning p(o | s, a)]. The diffusion/flow network and the
guidance sampler are the paper's function approximation; the tabular operator below computes the
product exactly instead.

Operator (exact, per stage h and state s; shapes ``(..., A)``):

    p_h(o = 1 | s, a) = sigmoid(A_h^{pi_beta}(s, a) / tau)                             [A]
    pi_w,h(a | s)    = pi_beta,h(a | s) p_h(o = 1 | s, a)^w / Z_h(s)                  (w >= 0)

computed in log space. The sigmoid is our choice of the optimality likelihood [A]: the paper's
labels ``o = 1{A >= 0}`` make f an indicator, for which ``f^w = f`` at every w > 0, so the
guidance weight would act only through the learned model's smoothing; a temperature tau stands
in for that smoothing and keeps f strictly positive and strictly increasing in A.

* ``w = 0`` is behaviour cloning (``pi_0 = pi_beta`` exactly; ``0^0 = 1``).
* ``w -> infinity`` [M, our limit of the product form]: pi_w tends to pi_beta restricted to the
  actions in its support with the largest p(o | s, a), i.e. the support-constrained greedy
  one-step improvement on ``A^{pi_beta}`` (:func:`guidance_limit`).

Offline algorithm ``cfgrl`` (``fit(dataset, w=, tau=)``): pi_beta and ``A^{pi_beta}`` are those of
the empirical model (``behaviour-cloning``'s policy and plug-in Q, V); states without data play
the uniform policy, as there. Exact, from the model: :func:`exact_guided_policy`.

Control (registered mutation ``cfgrl-guidance-sign-flipped``): the exponent ``w -> -w``
(``p^{-w}``: guidance away from optimality), patched at :func:`guidance_exponent`.

Measured (``cfgrl-guidance-improves-behaviour``, full scale, 1000 random MDPs S = 8, A = 5,
H = 8, tau = 0.1): ``J(pi_w) >= J(pi_beta)`` at every w (worst -2.7e-15), mean gain 1.729 at
w = 64 against 1.736 at the limit; the per-state expected behaviour advantage never decreases in
w; but J itself decreases somewhere along the w grid on 47 of 1000 MDPs (worst step -0.024): the
per-state monotonicity does not carry over to J in a sequential problem. The sigmoid saturates,
so separating two actions of advantage a > 0 needs w >> exp(a / tau).

Deviations: tabular and exact (no diffusion model, no learned p(o | s, a)); the one-step operator
on the behaviour policy's advantage (the paper's "one-step" setting), not iterated.
"""

from __future__ import annotations

import math
import time

import numpy as np
from scipy.special import log_expit

from theorylab.algorithms.offline.dataset import InvalidDatasetError, OfflineDataset
from theorylab.algorithms.offline.result import OfflineResult, value_at_start


def guidance_exponent(w: float) -> float:
    """The exponent on ``p(o | s, a)`` (``w``; the control ``cfgrl-guidance-sign-flipped``
    patches it to ``-w``)."""
    return w


def log_optimality(adv: np.ndarray, tau: float) -> np.ndarray:
    """``log p(o = 1 | s, a) = log sigmoid(A / tau)``, ``(..., A)`` (module docstring, [A])."""
    return log_expit(np.asarray(adv, dtype=float) / tau)


def guided_policy(pi_beta: np.ndarray, adv: np.ndarray, w: float, tau: float) -> np.ndarray:
    """``pi_w (..., A)`` ∝ ``pi_beta (..., A) * sigmoid(adv / tau)^w``, in log space. Rows of
    pi_beta must sum to 1; actions outside its support keep probability 0."""
    e = guidance_exponent(float(w))
    logits = e * log_optimality(adv, tau)  # (..., A); w = 0 gives 0 exactly
    support = pi_beta > 0
    logits = np.where(support, logits, -np.inf)
    logits = logits - logits.max(axis=-1, keepdims=True)
    unnorm = np.where(support, pi_beta * np.exp(logits), 0.0)
    return unnorm / unnorm.sum(axis=-1, keepdims=True)


def guidance_limit(pi_beta: np.ndarray, adv: np.ndarray, tol: float = 1e-12) -> np.ndarray:
    """The ``w -> infinity`` limit ``(..., A)``: pi_beta renormalised on the actions of its support
    whose advantage is within ``tol`` of the largest there (sigmoid is strictly increasing)."""
    masked = np.where(pi_beta > 0, adv, -np.inf)
    top = masked >= masked.max(axis=-1, keepdims=True) - tol
    unnorm = np.where(top, pi_beta, 0.0)
    return unnorm / unnorm.sum(axis=-1, keepdims=True)


def behaviour_advantage(mdp, pi_beta: np.ndarray) -> np.ndarray:
    """Exact ``A_h^{pi_beta}(s, a) (H, S, A)`` on a finite-horizon model, by the library's policy
    evaluation and one Bellman backup per stage."""
    from theorylab.algorithms.planning import evaluate_policies

    V = evaluate_policies(mdp, pi_beta, batched=False)  # (H+1, S)
    Q = np.stack([mdp.reward(h) + mdp.expected_next(V[h + 1], h) for h in range(mdp.horizon)])
    return Q - V[:-1, :, None]


def exact_guided_policy(mdp, pi_beta: np.ndarray, w: float, tau: float = 0.1) -> np.ndarray:
    """``pi_w (H, S, A)`` from the true model and a known behaviour policy ``(H, S, A)``."""
    _check_params(w, tau)
    return guided_policy(pi_beta, behaviour_advantage(mdp, pi_beta), w, tau)


def cfgrl(dataset: OfflineDataset, *, w: float = 1.0, tau: float = 0.1) -> OfflineResult:
    """The offline operator on the empirical model (module docstring), finite horizon. Policy
    ``(B, H, S, A)``; ``V, Q`` and the value estimate are pi_w's plug-in values on the empirical
    model."""
    from theorylab.algorithms.offline.baselines import (
        _empirical_finite,
        behaviour_cloning,
        plug_in_values,
    )

    if dataset.horizon is None:
        raise InvalidDatasetError("cfgrl needs finite-horizon data (stages), got horizon=None")
    _check_params(w, tau)
    t0 = time.perf_counter()
    bc = behaviour_cloning(dataset)
    adv = bc.Q - bc.V[:, :-1, :, None]  # (B, H, S, A): A^{pi_beta_hat} on the empirical model
    pi = guided_policy(bc.policy, adv, w, tau)  # (B, H, S, A)
    V, Q = plug_in_values(_empirical_finite(dataset), pi)  # (B, H+1, S), (B, H, S, A)
    return OfflineResult(
        algorithm="cfgrl",
        policy=pi,
        value_estimate=value_at_start(V[:, 0], dataset.mu0),
        V=V,
        Q=Q,
        pessimistic=False,
        params={"w": w, "tau": tau},
        info={"seconds": time.perf_counter() - t0, "behaviour_policy": bc.policy},
    )


def _check_params(w, tau) -> None:
    if not (isinstance(w, (int, float)) and math.isfinite(w) and w >= 0):
        raise ValueError(f"cfgrl: w (guidance weight) must be a finite number >= 0, got {w!r}")
    if not (isinstance(tau, (int, float)) and math.isfinite(tau) and tau > 0):
        raise ValueError(
            f"cfgrl: tau (optimality temperature) must be a finite number > 0, got {tau!r}"
        )


__all__ = [
    "behaviour_advantage",
    "cfgrl",
    "exact_guided_policy",
    "guidance_exponent",
    "guidance_limit",
    "guided_policy",
    "log_optimality",
]
