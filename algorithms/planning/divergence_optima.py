r"""Exact maximisers of ``E_pi r - beta D(pi, ref)`` over the simplex, per prompt, for the two KL
directions (categorical tables of sequence log-probabilities, (P, Y)).

* reverse KL, ``D = KL(pi || ref)``: ``pi* = ref e^(r/beta) / Z`` (the Gibbs tilt; Rafailov et al.
  2023, eq. (4));
* forward KL, ``D = KL(ref || pi)``: the Lagrangian stationarity ``r(y) + beta ref(y) / pi(y) =
  lambda`` gives ``pi*(y) = beta ref(y) / (lambda - r(y))`` with ``lambda`` in
  ``(max r, max r + beta]`` the root of ``sum_y beta ref(y) / (lambda - r(y)) = 1`` (derived here
  [A]; the left side falls from +inf to at most 1 on that interval, so the root is unique).
  Its floor ``pi*(y) >= beta ref(y) / (max r - min r + beta)`` (from ``lambda <= max r + beta``)
  is the mass-covering property: no response of ref loses more than that factor, whatever the
  rewards, while the reverse tilt keeps only ``e^((r(y) - max r) / beta)``-sized ratios.
  Outside supp(ref) the forward KL charges nothing, so with ``off_support=True`` a response ref
  never plays can get mass: if the root above is below the best off-support reward r_off, then
  ``lambda = r_off``, supp(ref) keeps ``beta ref / (r_off - r)`` and the rest, ``1 - sum``, goes
  to the off-support responses of reward r_off (split evenly) -- the KKT point of the concave
  programme (derived here [A]; seed row 002-004#F9, RAPO). The reverse KL's optimum is always 0
  off supp(ref).

Both are checked against cvxpy's solutions of the convex programmes (tests, claims).
"""

from __future__ import annotations

import numpy as np
from scipy.optimize import brentq
from scipy.special import logsumexp


def reverse_kl_optimum(ref_logp: np.ndarray, reward: np.ndarray, beta: float) -> np.ndarray:
    """(P, Y) log pi* of ``E r - beta KL(pi || ref)``: ``log ref + r / beta - log Z``."""
    _check(ref_logp, reward, beta)
    logits = np.asarray(ref_logp, dtype=np.float64) + np.asarray(reward) / beta
    return logits - logsumexp(logits, axis=1, keepdims=True)


def forward_kl_optimum(
    ref_logp: np.ndarray, reward: np.ndarray, beta: float, off_support: bool = False
) -> np.ndarray:
    """(P, Y) log pi* of ``E r - beta KL(ref || pi)``: ``beta ref / (lambda - r)`` (module
    docstring); responses outside supp(ref) get probability 0 (``off_support=False``: the
    problem restricted to supp(ref)) or their KKT mass (``True``: the unrestricted optimum)."""
    _check(ref_logp, reward, beta)
    ref = np.exp(np.asarray(ref_logp, dtype=np.float64))  # (P, Y)
    r = np.asarray(reward, dtype=np.float64)
    out = np.full(ref.shape, -np.inf)
    for x in range(ref.shape[0]):
        on = ref[x] > 0
        rx, qx = r[x, on], ref[x, on]
        top = rx.max()
        lo = top + beta * qx[rx >= top].sum() * 0.5  # excess(lo) >= 1 > 0
        if _excess(top + beta, rx, qx, beta) >= 0:  # every supported reward equal: the root
            lam = top + beta
        else:
            lam = brentq(
                _excess, lo, top + beta, args=(rx, qx, beta), xtol=1e-15,
                rtol=4 * np.finfo(float).eps,
            )  # fmt: skip
        p = beta * qx / (lam - rx)
        off = ~on
        top_off = r[x, off].max() if off_support and off.any() else -np.inf
        if lam < top_off:  # the off-support best is worth more than lambda: it takes the rest
            p = beta * qx / (top_off - rx)
            best = off & (r[x] >= top_off)
            with np.errstate(divide="ignore"):
                out[x, best] = np.log((1.0 - p.sum()) / best.sum())
            out[x, on] = np.log(p)
            continue
        out[x, on] = np.log(p / p.sum())
    return out


def _excess(lam: float, r: np.ndarray, ref: np.ndarray, beta: float) -> float:
    return float(np.sum(beta * ref / (lam - r)) - 1.0)


def _check(ref_logp, reward, beta) -> None:
    if not (isinstance(beta, (int, float)) and np.isfinite(beta) and beta > 0):
        raise ValueError(f"beta must be a finite number > 0, got {beta!r}")
    if np.shape(ref_logp) != np.shape(reward) or np.ndim(ref_logp) != 2:
        raise ValueError(
            f"ref_logp and reward must be (P, Y) tables of one shape, got {np.shape(ref_logp)} "
            f"and {np.shape(reward)}"
        )


def js_optimum(ref_logp: np.ndarray, reward: np.ndarray, beta: float) -> np.ndarray:
    """(P, Y) log pi* of ``E r - beta JS(pi, ref)``: the stationarity ``r(y) - (beta/2)
    log(2 pi(y) / (pi(y) + ref(y))) = lambda`` gives ``pi = ref u / (2 - u)``, ``u = e^(2 (r -
    lambda) / beta)``, with lambda > max r - (beta/2) log 2 the root of ``sum pi = 1`` (derived
    here [A]; the sum falls strictly in lambda, from +inf to 0)."""
    _check(ref_logp, reward, beta)
    ref = np.exp(np.asarray(ref_logp, dtype=np.float64))
    r = np.asarray(reward, dtype=np.float64)
    out = np.full(ref.shape, -np.inf)
    for x in range(ref.shape[0]):
        on = ref[x] > 0
        rx, qx = r[x, on], ref[x, on]
        lo = rx.max() - 0.5 * beta * np.log(2.0)  # u -> 2 at the top: the sum -> +inf
        hi = rx.max() + beta * 50.0  # u <= e^(-100): the sum ~ 0
        lam = brentq(
            _js_excess,
            lo + 1e-15 * max(1.0, abs(lo)),
            hi,
            args=(rx, qx, beta),
            xtol=1e-15,
            rtol=4 * np.finfo(float).eps,
        )
        log_u = 2.0 * (rx - lam) / beta
        logp = np.log(qx) + log_u - np.log(2.0 - np.exp(log_u))
        out[x, on] = logp - logsumexp(logp)
    return out


def _js_excess(lam: float, r: np.ndarray, ref: np.ndarray, beta: float) -> float:
    u = np.exp(2.0 * (r - lam) / beta)
    with np.errstate(divide="ignore"):
        return float(np.sum(ref * u / np.maximum(2.0 - u, 1e-300)) - 1.0)
