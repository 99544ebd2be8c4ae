r"""f-divergences and their exact convex conjugates, the building block of every dual-RL objective.

Reference: Sikchi, Zheng, Zhang, Niekum, "Dual RL: Unification and New Methods for Reinforcement
and Imitation Learning", ICLR 2024 (arXiv 2302.08560), section 3 and Table 1 (the f-divergences and
their conjugates); theory-preference-dual-llm.md 6.2 (the table below is its (checked) table; the
paper's own typesetting is [M] there, the identities are checked numerically here and in
``tests/test_dual_f_divergences.py``).

For a convex ``f`` with ``f(1) = 0`` and distributions ``d << d^O``,
``D_f(d || d^O) = E_{d^O}[f(d / d^O)]``. Two conjugates appear:

* the *plain* conjugate ``f*(y) = sup_x  x y - f(x)`` (x over the domain of f; the dual-Q form,
  where the flow constraint pins d and ``d >= 0`` needs no multiplier; Dual RL erratum: eq. (9)
  uses f*, not f*_p);
* the *non-negative* conjugate ``f*_p(y) = sup_{x >= 0}  x y - f(x)`` (the dual-V form, where the
  constraint ``d >= 0`` is kept), with maximiser ``w(y) = max(0, (f')^{-1}(y))`` = ``(f*_p)'(y)``.
  Primal recovery in every dual-V method is ``d*(s, a) = d^O(s, a) w(delta_V(s, a) / alpha)``.

=====================  ==============================  ============================  ==============
f(x)                   f*_p(y)                         w(y) = (f*_p)'(y)             f*(y)
=====================  ==============================  ============================  ==============
KL: x log x            exp(y - 1)                      exp(y - 1)                    exp(y - 1)
Pearson chi^2 (x-1)^2  y + y^2/4 (y >= -2), else -1    max(0, 1 + y/2)               y + y^2/4
OptiDICE 1/2 (x-1)^2   y + y^2/2 (y >= -1), else -1/2  max(0, 1 + y)                 y + y^2/2
TV: 1/2 |x - 1|        max(y, -1/2) (y <= 1/2),        set-valued: 0 (y < -1/2),     y (|y| <= 1/2),
                       +inf (y > 1/2)                  [0, 1] at -1/2, 1 inside,     +inf else
                                                       [1, inf) at 1/2
=====================  ==============================  ============================  ==============

KL, chi^2 and half-chi^2 give a smooth (C^1, and C^2 almost everywhere) dual-V objective, solved by
Newton or L-BFGS (:mod:`theorylab.algorithms.dual.dual_v`). TV's conjugate is piecewise linear with
a hard domain, ``(f')^{-1}`` is not strictly increasing and primal recovery by ``w`` is set-valued
(the Prop. 3 proof of Dual RL assumes strict monotonicity, a reviewer erratum): TV is solved as a
linear program instead and its d comes from the LP, not from ``w``.
"""

from __future__ import annotations

from dataclasses import dataclass

import cvxpy as cp
import numpy as np

from theorylab.errors import TheorylabError


class UnknownDivergenceError(TheorylabError, ValueError):
    """A divergence name that is not one of :data:`DIVERGENCES`."""


@dataclass(frozen=True)
class FDivergence:
    """One f-divergence: ``f``, its conjugates and what the solvers need of them.

    name: registry name ("kl", "chi2", "half-chi2", "tv"). smooth: whether ``f*_p`` is finite and
    differentiable everywhere (so the dual-V problem is unconstrained and smooth).
    All methods act elementwise on float arrays of any shape.
    """

    name: str
    label: str
    smooth: bool

    # ---------------------------------------------------------------- f and its derivative
    def f(self, x: np.ndarray) -> np.ndarray:
        """The generator f(x), x >= 0 (``0 log 0 = 0`` for KL)."""
        x = np.asarray(x, dtype=np.float64)
        if self.name == "kl":
            with np.errstate(divide="ignore", invalid="ignore"):
                return np.where(x > 0, x * np.log(np.where(x > 0, x, 1.0)), 0.0)
        if self.name == "chi2":
            return (x - 1.0) ** 2
        if self.name == "half-chi2":
            return 0.5 * (x - 1.0) ** 2
        return 0.5 * np.abs(x - 1.0)

    def f_prime(self, x: np.ndarray) -> np.ndarray:
        """f'(x) (TV: the subgradient sign(x - 1)/2, 0 at x = 1)."""
        x = np.asarray(x, dtype=np.float64)
        if self.name == "kl":
            with np.errstate(divide="ignore"):
                return np.log(x) + 1.0
        if self.name == "chi2":
            return 2.0 * (x - 1.0)
        if self.name == "half-chi2":
            return x - 1.0
        return 0.5 * np.sign(x - 1.0)

    # ---------------------------------------------------------------- conjugates
    def conjugate_nonneg(self, y: np.ndarray, domain_tol: float = 0.0) -> np.ndarray:
        """``f*_p(y) = sup_{x >= 0} x y - f(x)`` (the table of the module docstring).

        domain_tol: TV only, ``y`` up to ``1/2 + domain_tol`` counts as ``1/2`` (multipliers read
        off an LP solver satisfy the domain constraint only to the solver's tolerance).
        """
        y = np.asarray(y, dtype=np.float64)
        if self.name == "kl":
            with np.errstate(over="ignore"):
                return np.exp(y - 1.0)
        if self.name == "chi2":
            return np.where(y >= -2.0, y + 0.25 * y * y, -1.0)
        if self.name == "half-chi2":
            return np.where(y >= -1.0, y + 0.5 * y * y, -0.5)
        return np.where(y <= 0.5 + domain_tol, np.clip(y, -0.5, 0.5), np.inf)

    def ratio(self, y: np.ndarray) -> np.ndarray:
        """``w(y) = max(0, (f')^{-1}(y)) = (f*_p)'(y)``: the optimal ratio d/d^O (smooth f only)."""
        self._need_smooth("the ratio w(y)")
        y = np.asarray(y, dtype=np.float64)
        if self.name == "kl":
            with np.errstate(over="ignore"):
                return np.exp(y - 1.0)
        if self.name == "chi2":
            return np.maximum(0.0, 1.0 + 0.5 * y)
        return np.maximum(0.0, 1.0 + y)

    def ratio_derivative(self, y: np.ndarray) -> np.ndarray:
        """``w'(y) = (f*_p)''(y)`` (0 on the flat part of chi^2, where it is a generalised
        derivative: the semismooth Newton method of ``dual_v`` uses it)."""
        self._need_smooth("w'(y)")
        y = np.asarray(y, dtype=np.float64)
        if self.name == "kl":
            with np.errstate(over="ignore"):
                return np.exp(y - 1.0)
        if self.name == "chi2":
            return np.where(y > -2.0, 0.5, 0.0)
        return np.where(y > -1.0, 1.0, 0.0)

    def conjugate(self, y: np.ndarray) -> np.ndarray:
        """The plain conjugate ``f*(y) = sup_x x y - f(x)`` (x over the domain of f: x >= 0 for
        KL, all reals for the chi^2 pair and TV)."""
        y = np.asarray(y, dtype=np.float64)
        if self.name == "kl":
            with np.errstate(over="ignore"):
                return np.exp(y - 1.0)
        if self.name == "chi2":
            return y + 0.25 * y * y
        if self.name == "half-chi2":
            return y + 0.5 * y * y
        return np.where(np.abs(y) <= 0.5, y, np.inf)

    def conjugate_derivative(self, y: np.ndarray) -> np.ndarray:
        """``(f*)'(y) = (f')^{-1}(y)``: the ratio d/d^O of the dual-Q form (smooth f only)."""
        self._need_smooth("(f*)'(y)")
        y = np.asarray(y, dtype=np.float64)
        if self.name == "kl":
            with np.errstate(over="ignore"):
                return np.exp(y - 1.0)
        if self.name == "chi2":
            return 1.0 + 0.5 * y
        return 1.0 + y

    def conjugate_second_derivative(self, y: np.ndarray) -> np.ndarray:
        """``(f*)''(y)`` (smooth f only)."""
        self._need_smooth("(f*)''(y)")
        y = np.asarray(y, dtype=np.float64)
        if self.name == "kl":
            with np.errstate(over="ignore"):
                return np.exp(y - 1.0)
        return np.full_like(y, 0.5 if self.name == "chi2" else 1.0)

    # ---------------------------------------------------------------- divergences
    def divergence(self, d: np.ndarray, d_ref: np.ndarray) -> float:
        """``D_f(d || d^O) = sum_{d^O > 0} d^O f(d / d^O)``; d and d^O of one shape.

        Mass of d where ``d^O = 0`` makes the divergence infinite (every dual-RL objective here
        works over ``d << d^O``, the distributions the data can reweight).
        """
        d = np.asarray(d, dtype=np.float64)
        d_ref = np.asarray(d_ref, dtype=np.float64)
        on = d_ref > 0
        if np.any(d[~on] > 0):
            return float("inf")
        return float(np.sum(d_ref[on] * self.f(d[on] / d_ref[on])))

    def cvxpy_divergence(self, d: cp.Expression, d_ref: np.ndarray) -> cp.Expression:
        """``D_f(d || d^O)`` as a convex cvxpy expression of ``d`` (d^O > 0 entrywise):
        relative entropy (exponential cone) for KL, weighted squares for chi^2, absolute values
        (an LP) for TV."""
        if self.name == "kl":
            return cp.sum(cp.rel_entr(d, d_ref))
        if self.name in ("chi2", "half-chi2"):
            scale = 1.0 if self.name == "chi2" else 0.5
            return scale * cp.sum(cp.multiply(1.0 / d_ref, cp.square(d - d_ref)))
        return 0.5 * cp.sum(cp.abs(d - d_ref))

    def _need_smooth(self, what: str) -> None:
        if not self.smooth:
            raise ValueError(
                f"{what} is set-valued for {self.name!r} ((f')^-1 is not strictly increasing); "
                "TV duals are solved as linear programs"
            )


KL = FDivergence("kl", "KL: f(x) = x log x", smooth=True)
CHI2 = FDivergence("chi2", "Pearson chi^2: f(x) = (x - 1)^2", smooth=True)
HALF_CHI2 = FDivergence("half-chi2", "OptiDICE chi^2: f(x) = (x - 1)^2 / 2", smooth=True)
TV = FDivergence("tv", "total variation: f(x) = |x - 1| / 2", smooth=False)

DIVERGENCES: dict[str, FDivergence] = {f.name: f for f in (KL, CHI2, HALF_CHI2, TV)}


def divergence(name: str | FDivergence) -> FDivergence:
    """Look an f-divergence up by name ("kl", "chi2", "half-chi2", "tv")."""
    if isinstance(name, FDivergence):
        return name
    key = str(name).lower().replace("_", "-")
    key = {"chi-square": "chi2", "pearson": "chi2", "optidice": "half-chi2"}.get(key, key)
    if key not in DIVERGENCES:
        raise UnknownDivergenceError(
            f"unknown f-divergence {name!r}; available: {', '.join(DIVERGENCES)}"
        )
    return DIVERGENCES[key]
