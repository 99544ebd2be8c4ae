r"""f-DVL, tabular: the value losses of Dual RL's offline method, solved to their fixed point.

Reference: Sikchi, Zheng, Zhang, Niekum, "Dual RL", ICLR 2024 (arXiv 2302.08560), section 6 (f-DVL,
"dual-V rewritten with a temperature"; the exact eq. (14) is [M] in
theory-preference-dual-llm.md 6.3); the losses below are those of the authors' code
(``hari-sikchi/DVL`` @4b7cf11, ``offline/critic.py``; [V] in the reference, section 6.3). They are
*practical surrogates*, not the exact conjugates of :mod:`~theorylab.algorithms.dual.f_divergences`
(the code's chi^2 loss ``max(y + y^2/4, 0)`` differs from ``f*_p(y)`` for y < 0 and is even
non-monotone below -4), so they are kept here, separate, and tested only against their own
formulas. The formulas live once, in :mod:`~theorylab.algorithms.dual.surrogate_losses` (numpy
here, torch in :mod:`theorylab.algorithms.deep.offline_losses`). With ``x = Q(s, a) - V(s)`` on
dataset actions and ``lam = loss_temp``:

* ``chi-square``:       ``lam max(x + x^2/4, 0) - (1 - lam) x``
* ``total-variation``:  ``lam max(x, 0) - (1 - lam) x``
* ``reverse-kl`` (XQL's Gumbel loss): ``z = min(x / lam, max_clip)``,
  ``m = stopgrad(max(max_batch z, -1))``, loss ``e^{z - m} - z e^{-m} - e^{-m}``
  ``= e^{-m} (e^z - z - 1)`` (the Gumbel loss rescaled by the batch maximum).

The Q-loss is Huber(Q(s, a) - [r + gamma V(s')]) with delta = 20; its population minimiser is the
mean target ``r + gamma (P V)(s, a)`` whenever the targets spread less than 20 (rewards in [0, 1]
and ``1 / (1 - gamma) < 20``, which :func:`f_dvl` checks), so the tabular Q-step is exact:
``Q = r_hat + gamma P_hat V`` on the empirical model of the data.

Tabular exact sub-problem (deviation: the paper trains networks by alternating SGD steps): alternate
the two *population* minimisations under the empirical distribution until the fixed point,

    V(s) = argmin_v  sum_a d_hat(s, a) loss(Q(s, a) - v),      Q = r_hat + gamma P_hat V.

Each loss is convex in x, so the V-step is a monotone statistic of ``Q(s, .)`` that commutes with
adding a constant; hence ``V -> V-step(r_hat + gamma P_hat V)`` is a gamma-contraction in the sup
norm (tested) and the iteration converges. The V-step is solved per state by bisection on the
(sub)derivative, except reverse-KL, whose minimiser is closed-form (the batch-max factor e^{-m}
only rescales the loss, m being a stop-gradient):
``V(s) = lam log(sum_a d_hat(s, a) e^{Q(s,a) / lam} / sum_a d_hat(s, a))`` (unclipped; the
clip at ``max_clip`` is a gradient-stabiliser of the code and does not move this minimiser while
``(Q - V) / lam <= max_clip``, which :func:`f_dvl` reports). As ``lam -> 1`` the TV statistic
tends to the in-support maximum, and f-DVL to value iteration restricted to the actions
in the data (tested). Total variation needs ``lam > 1/2`` (below it the V-loss is unbounded),
and where the data weight of the actions above a breakpoint Q(s, a) is exactly (1 - lam) / lam
of the state's weight the V-loss is flat between two breakpoints: the V-step then returns the
point bisection lands on, and the fixed point is not unique (integer counts make this happen at
rational temperatures such as 0.6; measured by ``f-dvl-tv-fixed-point``: two valid fixed points
0.357 apart, which is why that claim uses irrational (1 - lam) / lam).

Policy extraction: the code fits an AWR-style actor; here the policy is greedy in Q among the
actions with data at each state (action 0 where a state has no data) -- a deviation, stated.
"""

from __future__ import annotations

import time

import numpy as np

from theorylab.algorithms.dual.empirical_model import empirical_models
from theorylab.algorithms.dual.inputs import DualInputError
from theorylab.algorithms.dual.surrogate_losses import DVL_LOSSES, MAX_CLIP, dvl_value_loss
from theorylab.algorithms.offline.dataset import OfflineDataset
from theorylab.algorithms.offline.result import OfflineResult

LOSSES = DVL_LOSSES
HUBER_DELTA = 20.0


# ------------------------------------------------------------------------------ the code's losses
def value_loss(x: np.ndarray, loss: str, loss_temp: float, max_clip: float = MAX_CLIP):
    """The code's V-loss per sample, ``x = Q(s, a) - V(s)`` ``(n,)`` -> ``(n,)``: the one
    definition in :func:`~theorylab.algorithms.dual.surrogate_losses.dvl_value_loss` on numpy.
    For reverse-KL the batch maximum ``m`` is taken over the whole ``x``."""
    if loss not in LOSSES:
        raise DualInputError(f"unknown f-DVL loss {loss!r}; choose from {LOSSES}")
    return dvl_value_loss(np.asarray(x, dtype=np.float64), loss, float(loss_temp), max_clip)


def value_loss_derivative(x: np.ndarray, loss: str, loss_temp: float) -> np.ndarray:
    """``d loss / d x`` (the right derivative at kinks) for chi-square and total-variation."""
    x = np.asarray(x, dtype=np.float64)
    lam = float(loss_temp)
    if loss == "chi-square":
        active = x + 0.25 * x * x > 0
        return lam * np.where(active, 1.0 + 0.5 * x, 0.0) - (1.0 - lam)
    if loss == "total-variation":
        return lam * (x >= 0) - (1.0 - lam)
    raise DualInputError(f"no bisection derivative for {loss!r}")


# ------------------------------------------------------------------------------ the V-step
def value_step(Q: np.ndarray, weights: np.ndarray, loss: str, loss_temp: float) -> np.ndarray:
    """``V(s) = argmin_v sum_a w(s, a) loss(Q(s, a) - v)`` for Q, weights ``(S, A)`` -> ``(S,)``.

    States without weight get ``max_a Q(s, a)`` (no data: the statistic is undefined; the value
    never enters an objective). Bisection to 1e-13 relative for chi-square and TV.
    """
    Q = np.asarray(Q, dtype=np.float64)
    w = np.asarray(weights, dtype=np.float64)
    has = w.sum(axis=1) > 0
    V = Q.max(axis=1).copy()
    if not has.any():
        return V
    Qh, wh = Q[has], w[has]
    if loss == "reverse-kl":
        z = np.where(wh > 0, Qh / loss_temp, -np.inf)
        top = z.max(axis=1, keepdims=True)
        ew = (wh * np.exp(z - top)).sum(axis=1) / wh.sum(axis=1)
        V[has] = loss_temp * (np.log(ew) + top[:, 0])
        return V
    span = float(np.ptp(Qh[wh > 0])) if np.any(wh > 0) else 0.0
    pad = 10.0 * (1.0 + span) + 2.0 / loss_temp  # chi-square: lam (1 + x/2) > 1 - lam beyond
    lo = np.min(np.where(wh > 0, Qh, np.inf), axis=1) - pad
    hi = np.max(np.where(wh > 0, Qh, -np.inf), axis=1) + pad
    for _ in range(200):  # sum_a w loss'(Q_a - v) is non-increasing in v: find its zero
        mid = 0.5 * (lo + hi)
        g = (wh * value_loss_derivative(Qh - mid[:, None], loss, loss_temp)).sum(axis=1)
        lo, hi = np.where(g > 0, mid, lo), np.where(g > 0, hi, mid)
        if np.all(hi - lo <= 1e-13 * (1.0 + np.abs(mid))):
            break
    V[has] = 0.5 * (lo + hi)
    return V


def check_loss(loss: str, loss_temp: float, gamma: float) -> None:
    if loss not in LOSSES:
        raise DualInputError(f"unknown f-DVL loss {loss!r}; choose from {LOSSES}")
    lo = 0.5 if loss == "total-variation" else 0.0
    if not lo < loss_temp <= 1.0:
        raise DualInputError(
            f"loss_temp must lie in ({lo:g}, 1] for {loss}, got {loss_temp!r}"
            + (" (at or below 1/2 the TV value loss is unbounded below)" if lo else "")
        )
    if 1.0 / (1.0 - gamma) >= HUBER_DELTA:
        raise DualInputError(
            f"gamma = {gamma:g}: targets r + gamma V(s') may spread by 1/(1 - gamma) >= the Huber "
            f"delta {HUBER_DELTA:g}, so the tabular Q-step would no longer be the mean target"
        )


def f_dvl(
    dataset: OfflineDataset,
    *,
    loss: str = "chi-square",
    loss_temp: float = 0.8,
    tol: float = 1e-11,
    max_iter: int = 100_000,
) -> OfflineResult:
    """Tabular f-DVL on a discounted dataset: the fixed point of the code's V-loss and the mean
    Q-target on the empirical model (module docstring); one run per seed.

    Returns an OfflineResult with ``policy (B, S)`` int (greedy among actions with data),
    ``value_estimate = V(mu0)``, ``V (B, S)``, ``Q (B, S, A)``.
    """
    t0 = time.perf_counter()
    models = empirical_models(dataset, "f-dvl")
    g = float(dataset.gamma)
    check_loss(loss, loss_temp, g)
    B, S, A = dataset.n_seeds, dataset.S, dataset.A
    pol = np.zeros((B, S), dtype=np.int64)
    Vs, Qs, est, iters, z_max = np.empty((B, S)), np.empty((B, S, A)), np.empty(B), [], []
    for b, (mdp, d_hat) in enumerate(models):
        r = mdp.reward(0)
        V = np.zeros(S)
        for it in range(1, max_iter + 1):
            Q = r + g * mdp.expected_next(V)
            V_new = value_step(Q, d_hat, loss, loss_temp)
            done = np.max(np.abs(V_new - V)) <= tol * (1.0 - g)
            V = V_new
            if done:
                break
        Q = r + g * mdp.expected_next(V)
        seen = d_hat > 0
        pol[b] = np.where(seen, Q, -np.inf).argmax(axis=1)
        Vs[b], Qs[b], est[b] = V, Q, float(mdp.mu0 @ V)
        iters.append(it)
        z_max.append(float(np.max(np.where(seen, (Q - V[:, None]) / loss_temp, -np.inf))))
    return OfflineResult(
        algorithm="f-dvl",
        policy=pol,
        value_estimate=est,
        V=Vs,
        Q=Qs,
        pessimistic=False,
        params={"loss": loss, "loss_temp": loss_temp},
        info={
            "seconds": time.perf_counter() - t0,
            "iterations": np.array(iters),
            "max_scaled_advantage": np.array(z_max),  # reverse-KL: <= max_clip means unclipped
        },
    )
