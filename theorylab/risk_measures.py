"""CVaR and VaR of a discrete distribution, exactly, by sorting (ground floor: numpy only).

Lower tail (returns are rewards; CVaR is the mean of the worst tau-fraction), as in Wang, Kallus,
Sun (ICML 2023, eq. 1) and Du, Wang, Huang (ICLR 2023, section 3), after Rockafellar and Uryasev:

    CVaR_tau(X) = sup_{b in R} { b - E[(b - X)^+] / tau },        tau in (0, 1],
    VaR_tau(X)  = min { x : F(x) >= tau }                          (the lower tau-quantile).

For a discrete X with atoms v_1 <= ... <= v_n and probabilities p_i, the function
f(b) = b - E[(b - X)^+] / tau is concave and piecewise linear with kinks at the atoms, so the sup is
attained at an atom, namely at VaR_tau(X). Evaluating f there gives the sorting formula

    CVaR_tau(X) = (1/tau) * sum_i v_i * m_i,     m_i = min( p_i, max(tau - F_{i-1}, 0) ),

with F_{i-1} = p_1 + ... + p_{i-1}: the worst tau of probability mass, taken atom by atom, the
boundary atom contributing only the part of its mass that fits. tau = 1 gives the mean; tau -> 0
gives the smallest atom of positive probability (see :func:`worst_case`).

Cost O(n log n) per distribution (one sort); every function broadcasts over leading axes, so one
call evaluates a batch of distributions (seeds, policies, state-action pairs).
"""

from __future__ import annotations

import numpy as np

PROB_SUM_TOL = 1e-9


def _check_tau(tau: float, name: str = "tau") -> float:
    tau = float(tau)
    if not (0.0 < tau <= 1.0):
        raise ValueError(f"{name} must lie in (0, 1], got {tau!r}")
    return tau


def _as_distribution(values, probs) -> tuple[np.ndarray, np.ndarray]:
    v = np.asarray(values, dtype=np.float64)
    p = np.asarray(probs, dtype=np.float64)
    v, p = np.broadcast_arrays(v, p)
    if v.ndim == 0 or v.shape[-1] == 0:
        raise ValueError("a distribution needs at least one atom (values/probs of shape (..., n))")
    if not np.all(np.isfinite(v)):
        raise ValueError("values must be finite")
    if not np.all(np.isfinite(p)) or (p < 0).any():
        raise ValueError("probabilities must be finite and non-negative")
    sums = p.sum(axis=-1)
    bad = np.abs(sums - 1.0) > PROB_SUM_TOL
    if bad.any():
        idx = tuple(int(i) for i in np.argwhere(np.atleast_1d(bad))[0])
        total = float(np.atleast_1d(sums)[idx])
        raise ValueError(
            f"probabilities of distribution {idx} sum to {total:.12g}, expected 1 "
            f"(tolerance {PROB_SUM_TOL:g})"
        )
    return v, p


def _sorted(v: np.ndarray, p: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    order = np.argsort(v, axis=-1, kind="stable")
    return np.take_along_axis(v, order, -1), np.take_along_axis(p, order, -1)


def tail_masses(sorted_probs: np.ndarray, tau: float) -> np.ndarray:
    """``m_i = min(p_i, max(tau - F_{i-1}, 0))`` for probabilities sorted by increasing value.

    sorted_probs: ``(..., n)``. Returns ``(..., n)``; the masses sum to ``min(tau, 1)``.
    """
    F_prev = np.cumsum(sorted_probs, axis=-1) - sorted_probs  # exclusive cumulative sum
    return np.minimum(sorted_probs, np.maximum(tau - F_prev, 0.0))


def cvar(values, probs, tau: float):
    """``CVaR_tau`` of discrete distributions: ``values``, ``probs`` ``(..., n)`` -> ``(...)``.

    Exact up to float64 summation (no sampling, no grid). ``tau = 1`` gives the mean.
    Raises ``ValueError`` when a probability vector does not sum to 1 (tolerance 1e-9).
    """
    tau = _check_tau(tau)
    v, p = _as_distribution(values, probs)
    vs, ps = _sorted(v, p)
    out = (tail_masses(ps, tau) * vs).sum(axis=-1) / tau
    return float(out) if out.ndim == 0 else out


def var(values, probs, tau: float, *, tol: float = 1e-12):
    """``VaR_tau = min{x : F(x) >= tau}`` of discrete distributions ``(..., n)`` -> ``(...)``.

    The quantile jumps at atoms, so ``F(x) >= tau`` is tested as ``F(x) >= tau - tol``
    (default 1e-12) to absorb the round-off of the cumulative sum.
    """
    tau = _check_tau(tau)
    v, p = _as_distribution(values, probs)
    vs, ps = _sorted(v, p)
    F = np.cumsum(ps, axis=-1)
    # first atom with F >= tau (and positive probability, so a zero atom is never the quantile)
    hit = (F >= tau - tol) & (ps > 0)
    idx = np.argmax(hit, axis=-1)
    out = np.take_along_axis(vs, idx[..., None], -1)[..., 0]
    return float(out) if out.ndim == 0 else out


def cvar_objective(values, probs, b, tau: float):
    """Rockafellar-Uryasev objective ``f(b) = b - E[(b - X)^+] / tau`` (CVaR is its sup over b).

    values, probs: ``(..., n)``; b: scalar or an array broadcasting against ``(...)``.
    """
    tau = _check_tau(tau)
    v, p = _as_distribution(values, probs)
    b = np.asarray(b, dtype=np.float64)
    shortfall = (p * np.maximum(b[..., None] - v, 0.0)).sum(axis=-1)
    out = b - shortfall / tau
    return float(out) if np.ndim(out) == 0 else out


def worst_case(values, probs):
    """``min`` of the support (atoms with positive probability): the ``tau -> 0`` limit of CVaR."""
    v, p = _as_distribution(values, probs)
    out = np.where(p > 0, v, np.inf).min(axis=-1)
    return float(out) if out.ndim == 0 else out


def mean(values, probs):
    """``E[X]`` of discrete distributions ``(..., n)`` -> ``(...)``."""
    v, p = _as_distribution(values, probs)
    out = (v * p).sum(axis=-1)
    return float(out) if out.ndim == 0 else out
