r"""LSVI-UCB: least-squares value iteration with an elliptical UCB bonus, for linear MDPs.

Paper: Chi Jin, Zhuoran Yang, Zhaoran Wang, Michael I. Jordan, "Provably Efficient Reinforcement
Learning with Linear Function Approximation", COLT 2020, arXiv:1907.05388v2. Algorithm 1 (p. 6),
exactly as theory.md 2.2 ([V]); for episode k and h = H, ..., 1 (0-based in code), Q^k_{H+1} = 0::

    Lambda^k_h = sum_{tau<k} phi^tau_h (phi^tau_h)^T + lambda I
    w^k_h      = (Lambda^k_h)^{-1} sum_{tau<k} phi^tau_h [ r^tau_h
                                                     + max_a Q^k_{h+1}(x^tau_{h+1}, a) ]
    Q^k_h(x,a) = min{ (w^k_h)^T phi(x,a) + beta [phi(x,a)^T (Lambda^k_h)^{-1} phi(x,a)]^{1/2}, H }
    a^k_h      = argmax_a Q^k_h(x^k_h, a)

with lambda = 1, beta = c d H sqrt(iota), iota = log(2 d T / p), T = K H (Theorem 3.1, p. 7).

Bound carried: ``jin2020-lsvi-ucb`` (Theorem 3.1): there are absolute constants c, C such that with
the choices above, with probability >= 1 - p, Regret(K) <= C sqrt(d^3 H^3 T iota^2). Neither c nor
C is given by the paper; ``c`` is a parameter (default 1.0, our reading, NOT a paper value) and
the claims in ``theorylab.validations.claims.linear`` sweep it (theory.md 10). Optimism (Lemma
B.5, p. 19): on the good event Q^k_h >= Q*_h; ``value_estimate()`` reports V^k_1(mu0) so that
``theorylab.run`` can check it.

Registered name: ``lsvi-ucb``. Parameters: ``c`` (bonus constant), ``delta`` (the paper's p),
``lam`` (lambda), ``beta`` (an explicit bonus multiplier that overrides c d H sqrt(iota), e.g. to
compare with a tabular count bonus), ``features`` (the known feature table; default one-hot, see
theorylab.algorithms.linear.features), ``targets`` (how the regression sums are evaluated:
"history", "statistics" or "auto"; the same numbers up to rounding), ``backend`` (where the
Sherman-Morrison and width kernels run: "numpy" default, "numba", "torch"; ``theorylab run
--backend`` sets it).

Implementation: theorylab.algorithms.linear.lsvi (history of indices, Sherman-Morrison inverses
and widths, targets recomputed from all past data every episode, batched over seeds; per-episode
cost O(H (d^2 + S A d + k))). With one-hot features Lambda^k_h = diag(N^k_h(s,a)) + lambda I,
so the bonus is exactly beta / sqrt(N^k_h(s,a) + lambda): LSVI-UCB is then a tabular algorithm
with a count-based Hoeffding bonus.

Deviations: rewards in the targets are the observed ones (equal to r_h for deterministic rewards,
the paper's setting); see theorylab.algorithms.linear.lsvi.
"""

from __future__ import annotations

import math

import numpy as np

from theorylab.agent import EnvSpec
from theorylab.algorithms.linear.lsvi import LeastSquaresValueIteration
from theorylab.algorithms.registry import register


def jin_iota(d: int, H: int, episodes: int, delta: float) -> float:
    """iota = log(2 d T / p) with T = K H (Jin et al. 2020, Theorem 3.1)."""
    return math.log(2.0 * d * episodes * H / delta)


def jin_beta(c: float, d: int, H: int, episodes: int, delta: float) -> float:
    """beta = c d H sqrt(iota) (Jin et al. 2020, Theorem 3.1)."""
    return c * d * H * math.sqrt(jin_iota(d, H, episodes, delta))


@register("lsvi-ucb", kind="online", problem="linear", bounds=("jin2020-lsvi-ucb",))
class LSVIUCB(LeastSquaresValueIteration):
    """LSVI-UCB (Jin et al. 2020, Algorithm 1): ridge LSVI + beta ||phi||_{Lambda^-1}, Q <= H."""

    name = "lsvi-ucb"

    def __init__(
        self,
        env: EnvSpec,
        n_seeds: int,
        rngs,
        *,
        episodes: int,
        features=None,
        c: float = 1.0,
        delta: float = 0.1,
        lam: float = 1.0,
        beta: float | None = None,
        targets: str = "auto",
        backend="numpy",
    ) -> None:
        if not (c >= 0 and math.isfinite(c)):
            raise ValueError(f"lsvi-ucb: c must be finite and >= 0, got {c!r}")
        if not 0.0 < delta < 1.0:
            raise ValueError(f"lsvi-ucb: delta (the paper's p) must lie in (0, 1), got {delta!r}")
        if beta is not None and not (beta >= 0 and math.isfinite(beta)):
            raise ValueError(f"lsvi-ucb: beta must be finite and >= 0, got {beta!r}")
        self.c, self.delta = float(c), float(delta)
        self._beta_override = None if beta is None else float(beta)
        super().__init__(
            env,
            n_seeds,
            rngs,
            episodes=episodes,
            features=features,
            lam=lam,
            targets=targets,
            backend=backend,
        )

    @property
    def iota(self) -> float:
        return jin_iota(self.d, self.H, self.episodes, self.delta)

    @property
    def beta(self) -> float:
        """beta = c d H sqrt(iota), or the explicit ``beta`` parameter."""
        if self._beta_override is not None:
            return self._beta_override
        return jin_beta(self.c, self.d, self.H, self.episodes, self.delta)

    def bonus(self, h: int) -> np.ndarray:
        """beta [phi^T (Lambda^k_h)^{-1} phi]^{1/2} at every pair: ``(B, S*A)``."""
        return self.beta * self.bonus_width(h)
