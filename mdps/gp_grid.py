"""Black-box problems on a finite grid whose functions are drawn from a Gaussian-process prior
(the GP bandits of ``kind="gp-bandit"``: CONFIG, seed row 000#39; MBTL, seed row 002-004#B1;
:class:`TransferGridProblem` below).

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


def check_grid_vectors(problem, labels: tuple[str, ...]) -> int:
    """m, the grid size of ``problem.K (m, m)``, after checking that every named attribute is a
    finite ``(m,)`` array (a one-line error naming it otherwise)."""
    K = np.asarray(problem.K)
    m = int(K.shape[0])
    if K.shape != (m, m):
        raise ValueError(f"{problem.name}: K must be a square (m, m) array, got {K.shape}")
    for label in labels:
        arr = np.asarray(getattr(problem, label), dtype=np.float64)
        if arr.shape != (m,) or not np.all(np.isfinite(arr)):
            raise ValueError(f"{problem.name}: {label} must be a finite ({m},) array")
    return m


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
        m = check_grid_vectors(self, ("f", "g", "f_prior", "g_prior"))
        if np.asarray(self.X).shape[0] != m:
            raise ValueError(f"{self.name}: X must be an (m, d) array, m = {m}")
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


@dataclass(frozen=True, eq=False)
class TransferGridProblem:
    """Choosing training contexts for zero-shot transfer (MBTL's setting, seed row 002-004#B1).

    contexts ``(m,)`` on [0, 1]; f ``(m,)`` the training performance of each context, one draw
    of a GP (kernel ``K``, prior mean ``f_prior``) -- the catalogue's assumption; the transfer
    matrix ``J[c, c'] = f(c) - slope |c - c'|`` (train on c, evaluate on c'). A set S of trained
    contexts covers target c' with ``max(0, max_{c in S} J[c, c'])`` (0: the untrained baseline);
    the coverage ``V(S)`` is the mean over the m targets. Training on c returns the row
    ``J[c, .] + noise eps`` (the model evaluated on every target). :meth:`score`: per round k the
    gap ``V*_k - V(S_k)``, S_k the first k contexts chosen and ``V*_k`` the best coverage of any k
    contexts (exact, :func:`_best_coverage`; checked against brute force over the k-subsets).
    """

    contexts: np.ndarray
    K: np.ndarray
    f: np.ndarray
    f_prior: np.ndarray
    slope: float
    noise: float
    length: float
    name: str = "transfer-grid"

    def __post_init__(self) -> None:
        check_grid_vectors(self, ("contexts", "f", "f_prior"))

    @property
    def m(self) -> int:
        return int(self.K.shape[0])

    @property
    def distance(self) -> np.ndarray:
        """``(m, m)`` |c - c'|."""
        c = np.asarray(self.contexts)
        return np.abs(c[:, None] - c[None, :])

    @property
    def J(self) -> np.ndarray:
        """``(m, m)`` the transfer matrix f(c) - slope |c - c'| (rows: trained c)."""
        return self.f[:, None] - self.slope * self.distance

    def coverage(self, sets: np.ndarray) -> np.ndarray:
        """``V(S)`` of every row of ``sets (n, k)`` (context indices): ``(n,)``."""
        rows = self.J[np.asarray(sets, dtype=np.int64)]  # (n, k, m)
        return np.maximum(rows.max(axis=1), 0.0).mean(axis=1)

    def best_coverage(self, budget: int) -> np.ndarray:
        """``(budget,)`` V*_k for k = 1..budget, by brute force over the k-subsets."""
        if budget > self.m:
            raise ValueError(f"{self.name}: a budget of {budget} tasks exceeds the {self.m} "
                             "contexts")  # fmt: skip
        cache = self.__dict__.setdefault("_best_cache", {})  # per problem object
        if budget not in cache:
            cache[budget] = _best_coverage(self, int(budget))
        return cache[budget]

    def observe(self, idx: np.ndarray, rngs) -> np.ndarray:
        """Noisy rows ``(B, m)``: the model trained on context ``idx[b]`` evaluated on every
        target, one generator per seed."""
        eps = np.array([rng.standard_normal(self.m) for rng in rngs])  # (B, m)
        return self.J[np.asarray(idx)] + self.noise * eps

    def score(self, choices: np.ndarray) -> dict[str, np.ndarray]:
        """Per round ``(B, T)``: the coverage gap ``V*_k - V(S_k)``; violation 0."""
        c = np.asarray(choices, dtype=np.int64)
        B, T = c.shape
        best = self.best_coverage(T)  # (T,)
        gap = np.empty((B, T))
        for k in range(1, T + 1):
            gap[:, k - 1] = best[k - 1] - self.coverage(c[:, :k])
        return {"regret": gap, "violation": np.zeros((B, T))}

    def truth(self) -> dict[str, float]:
        return {"optimum": float(self.J.max(axis=0).clip(min=0.0).mean()), "feasible": True}


def _best_coverage(problem: TransferGridProblem, budget: int) -> np.ndarray:
    """V*_k, k = 1..budget, exactly, by dynamic programming over sorted context sets.

    All cones ``f(c) - slope |c - c'|`` share one slope, so a chosen context whose own cell is
    covered better by another chosen context is useless (dropping it changes no target's
    coverage) and, in a set without such contexts, each target is best covered by its nearest
    chosen neighbour on the left or on the right. With ``left(b)`` the targets before the first
    chosen b, ``mid(a, b)`` those in [a, b) between consecutive chosen a < b and ``right(b)``
    those from the last chosen b on: ``D_1(b) = left(b)``, ``D_r(b) = max_(a < b) D_(r-1)(a) +
    mid(a, b)``, ``V*_k = max_(r <= k, b) (D_r(b) + right(b)) / m`` (V* is non-decreasing in
    k). Tests check it against brute force over the k-subsets.
    """
    m = problem.m
    Jc = np.maximum(problem.J, 0.0)  # (m, m), rows: trained context
    idx = np.arange(m)
    before = np.where(idx[None, :] < idx[:, None], Jc, 0.0).sum(axis=1)  # (m,) left(b)
    after = np.where(idx[None, :] >= idx[:, None], Jc, 0.0).sum(axis=1)  # (m,) right(b)
    both = np.maximum(Jc[:, None, :], Jc[None, :, :])  # (a, b, j)
    inside = (idx[None, None, :] >= idx[:, None, None]) & (idx[None, None, :] < idx[None, :, None])
    mid = np.where(inside, both, 0.0).sum(axis=2)  # (m, m) mid(a, b), used for a < b
    upper = idx[:, None] < idx[None, :]  # a < b
    D = before.copy()  # (m,) D_1
    out = np.empty(budget)
    best = float((D + after).max())
    out[0] = best
    for r in range(2, budget + 1):
        cand = np.where(upper, D[:, None] + mid, -np.inf)  # (a, b)
        D = cand.max(axis=0)
        best = max(best, float((D + after).max()))
        out[r - 1] = best
    return out / m
