"""Black-box problems on a finite grid whose functions are drawn from a Gaussian-process prior
(the GP bandits of ``kind="gp-bandit"``: CONFIG, seed row 000#39; MBTL, seed row 002-004#B1).

:class:`ConstrainedGPProblem` -- ``min_x f(x) s.t. g(x) <= 0`` over m grid points ``X (m, d)``,
f and g one draw each of a GP with the kernel matrix ``K (m, m)`` around known prior means
(``f_prior``, ``g_prior``: the learner's prior, so the Bayesian assumption holds exactly). An
evaluation at x returns ``f(x) + noise eps`` and ``g(x) + noise eps'`` (independent N(0, 1)).
Ground truth by enumeration of the grid: feasible iff ``min_x g(x) <= 0``; ``f* = min`` of f
over the feasible points. :meth:`~ConstrainedGPProblem.score` gives per round the regret
``[f(x_t) - f*]^+`` and the violation ``[g(x_t)]^+`` (the positive parts: an infeasible point can
beat f*), 0 where no point was evaluated (index -1: the learner stopped); on an infeasible
problem the regret is NaN (f* does not exist).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True, eq=False)
class ConstrainedGPProblem:
    """X ``(m, d)``; K ``(m, m)``; f, g ``(m,)`` the true functions; f_prior, g_prior ``(m,)``
    the prior means the learner is given; noise the observation noise's standard deviation."""

    X: np.ndarray
    K: np.ndarray
    f: np.ndarray
    g: np.ndarray
    f_prior: np.ndarray
    g_prior: np.ndarray
    noise: float
    kernel: str
    length: float
    name: str = "gp-constrained"

    def __post_init__(self) -> None:
        m = self.K.shape[0]
        for label in ("f", "g", "f_prior", "g_prior"):
            arr = np.asarray(getattr(self, label), dtype=np.float64)
            if arr.shape != (m,) or not np.all(np.isfinite(arr)):
                raise ValueError(f"{self.name}: {label} must be a finite ({m},) array")
        if self.K.shape != (m, m) or np.asarray(self.X).shape[0] != m:
            raise ValueError(f"{self.name}: K must be (m, m) and X (m, d), m = {m}")
        if not (np.isfinite(self.noise) and self.noise > 0):
            raise ValueError(f"{self.name}: noise must be a finite number > 0, got {self.noise!r}")

    @property
    def m(self) -> int:
        return int(self.K.shape[0])

    @property
    def feasible(self) -> bool:
        """Some grid point satisfies g <= 0 (by enumeration)."""
        return bool(np.min(self.g) <= 0.0)

    @property
    def optimum(self) -> float:
        """f* = min of f over the feasible grid points; NaN on an infeasible problem."""
        ok = self.g <= 0.0
        return float(np.min(self.f[ok])) if ok.any() else float("nan")

    @property
    def unconstrained_violation(self) -> float:
        """g at the unconstrained minimiser of f (> 0: ignoring the constraint violates it)."""
        return float(self.g[int(np.argmin(self.f))])

    def observe(self, idx: np.ndarray, rngs) -> tuple[np.ndarray, np.ndarray]:
        """Noisy evaluations ``(y_f (B,), y_g (B,))`` at grid points ``idx (B,)``, one generator
        per seed."""
        eps = np.array([rng.standard_normal(2) for rng in rngs])  # (B, 2)
        return self.f[idx] + self.noise * eps[:, 0], self.g[idx] + self.noise * eps[:, 1]

    def score(self, choices: np.ndarray) -> dict[str, np.ndarray]:
        """Per round ``(B, T)``: regret ``[f(x_t) - f*]^+`` (NaN when infeasible) and violation
        ``[g(x_t)]^+``; 0 where ``choices == -1`` (nothing evaluated)."""
        c = np.asarray(choices, dtype=np.int64)
        played = c >= 0
        safe = np.where(played, c, 0)
        violation = np.where(played, np.maximum(self.g[safe], 0.0), 0.0)
        regret = np.where(played, np.maximum(self.f[safe] - self.optimum, 0.0), 0.0)
        if not self.feasible:
            regret = np.full(c.shape, np.nan)
        return {"regret": regret, "violation": violation}

    def truth(self) -> dict[str, float]:
        """What enumeration of the grid says (recorded with a run)."""
        return {"optimum": self.optimum, "feasible": self.feasible}
