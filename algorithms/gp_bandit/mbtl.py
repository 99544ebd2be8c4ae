r"""MBTL: model-based transfer learning -- choosing training contexts by Bayesian optimisation.

Seed reference: ``seed-catalogue-002-004.md#B1`` (tier A; the same paper is
``seed-catalogue-001.md#21``, tier B). Paper: J.-H. Cho, V. Jayawardana, S. Li, C. Wu,
"Model-Based Transfer Learning for Contextual Reinforcement Learning", NeurIPS 2024,
arXiv:2408.04498. What was read: the abstract [V] (the generalisation performance modelled
as "1) the performance set point, modeled using Gaussian processes, and 2) performance loss
(generalization gap), modeled as a linear function of contextual similarity", combined "within a
Bayesian optimization (BO) framework"; "sublinear regret in the number of training tasks") and
the authors' code (github.com/jhoon-cho/MBTL, ``MBTL/utils.py``, function ``MBTL``) [V]: the first
task is the middle of the context range; a GP is fitted to the training performances observed so
far; the acquisition of a candidate x is the mean over targets j of ``max(mu(x) + lambda sigma(x)
- slope |x - x_j| - V_obs(j), 0)``, V_obs(j) the best observed performance on j of the models
trained so far (0 before any); the next task is the acquisition's argmax among the untrained
ones; ``lambda`` is 1 (``new_ucb``), 1/(k + 1) or sqrt(log(k + 1)) in their variants, and the
slope is given or fitted to the trained models' rows (``linear_estimated``). The paper's theorem
and its regret definition were not read [A]. ``selection="random"`` is the random-selection
baseline the paper compares with (after the same first task).

Setting (``transfer-grid``, :class:`theorylab.mdps.gp_grid.TransferGridProblem`): m contexts on
[0, 1]; training on c gives the row ``J[c, .] + noise`` with ``J[c, c'] = f(c) - slope |c - c'|``
(the catalogue's assumption), f a GP draw whose prior the learner knows. Round k = 1..K::

    k = 1:   x_1 = the middle context
    k > 1:   mu, sigma  = the exact GP posterior of f given the observed y(x_l, x_l), l < k
             V_obs(j)   = max(0, max_(l < k) y(x_l, j))
             a(x)       = (1/m) sum_j max(mu(x) + beta_k^(1/2) sigma(x) - s |x - c_j| - V_obs(j), 0)
             x_k        = argmax of a over the untrained contexts (lowest index on ties)

beta_k = 2 log(m k^2 pi^2 / (6 delta)) (GP-UCB's finite-domain confidence, Srinivas et al. 2010
[A]; the authors' code uses lambda = beta^(1/2) in {1, 1/(k + 1), sqrt(log(k + 1))} [V]). The
slope s: ``slope="known"`` (the problem's), a number, or ``"estimate"`` (least squares of
``y(x_l, x_l) - y(x_l, j)`` on ``|x_l - c_j|`` over every trained row, as the code's
``linear_estimated`` fits each row).

Regret (scored by the problem, never by the learner): ``V*_k - V(S_k)`` per round, S_k the
first k tasks chosen and V*_k the best coverage of any k contexts (exact; checked against brute
force). Controls (``validations/gp_bandit_mutations.py``): random task selection and the
repeat-the-best rule (GP-UCB on the training performance alone, transfer ignored).
"""

from __future__ import annotations

import math

import numpy as np

from theorylab.algorithms.gp_bandit.run_record import GridBanditRun
from theorylab.algorithms.registry import register
from theorylab.kernels.gp import condition, posterior_sd
from theorylab.mdps.gp_grid import TransferGridProblem


def ucb_beta(k: np.ndarray, m: int, delta: float) -> np.ndarray:
    """beta_k = 2 log(m k^2 pi^2 / (6 delta)) for rounds ``k (K,)`` (1-based)."""
    k = np.asarray(k, dtype=np.float64)
    return 2.0 * np.log(m * k**2 * math.pi**2 / (6.0 * delta))


def transfer_gain(ucb: np.ndarray, slope: np.ndarray, dist: np.ndarray, covered: np.ndarray):
    """The acquisition ``(B, m)``: mean over targets j of ``max(ucb(x) - s |x - c_j| -
    V_obs(j), 0)``; ``ucb (B, m)``, ``slope (B,)``, ``dist (m, m)``, ``covered (B, m)``."""
    gain = ucb[:, :, None] - slope[:, None, None] * dist[None] - covered[:, None, :]  # (B, x, j)
    return np.maximum(gain, 0.0).mean(axis=2)


def choose(acq: np.ndarray, trained: np.ndarray, rngs) -> np.ndarray:
    """``(B,)`` the argmax of ``acq (B, m)`` over the untrained contexts (lowest index on ties);
    ``rngs`` unused (the random-selection control draws from them)."""
    return np.where(trained, -np.inf, acq).argmax(axis=1)


def random_choice(acq: np.ndarray, trained: np.ndarray, rngs) -> np.ndarray:
    """``(B,)`` a uniformly random untrained context per seed (the baseline; ``acq`` unused)."""
    return np.array([rng.choice(np.flatnonzero(~t)) for rng, t in zip(rngs, trained, strict=True)])


def estimate_slope(rows: np.ndarray, trained: np.ndarray, dist: np.ndarray) -> np.ndarray:
    """``(B,)`` least squares of ``y(x, x) - y(x, j)`` on ``|x - c_j|`` over the trained rows
    ``rows (B, m, m)`` (row x valid where ``trained (B, m)``)."""
    diag = np.diagonal(rows, axis1=1, axis2=2)  # (B, m)
    drop = (diag[:, :, None] - rows) * dist[None]  # (B, x, j)
    w = trained[:, :, None]
    num = np.where(w, drop, 0.0).sum(axis=(1, 2))
    den = np.where(w, dist[None] ** 2, 0.0).sum(axis=(1, 2))
    return np.where(den > 0, num / np.where(den > 0, den, 1.0), 0.0)


def mbtl_choices(problem: TransferGridProblem, rounds: int, rngs, *, delta: float, slope,
                 scale: float, selection: str = "ucb") -> GridBanditRun:  # fmt: skip
    """MBTL on every seed (one generator each draws that seed's evaluation noise)."""
    B, m, T = len(rngs), problem.m, int(rounds)
    if T > m:
        raise ValueError(f"mbtl: {T} rounds exceed the {m} contexts of {problem.name}")
    dist = problem.distance  # (m, m)
    mean = np.broadcast_to(problem.f_prior, (B, m)).copy()  # (B, m)
    cov = np.broadcast_to(problem.K, (B, m, m)).copy()  # (B, m, m)
    rows = np.zeros((B, m, m))  # observed rows y(x, .) of the trained x
    trained = np.zeros((B, m), dtype=bool)
    covered = np.zeros((B, m))  # V_obs(j)
    beta = ucb_beta(np.arange(1, T + 1), m, delta)  # (T,)
    choices = np.full((B, T), -1, dtype=np.int64)
    slopes = np.full((B, T), np.nan)
    all_rows = np.arange(B)
    for k in range(T):
        if slope == "known":
            s = np.full(B, problem.slope)
        elif slope == "estimate":
            s = estimate_slope(rows, trained, dist)
        else:
            s = np.full(B, float(slope))
        if k == 0:
            x = np.full(B, (m - 1) // 2)
        else:
            ucb = mean + scale * math.sqrt(beta[k]) * posterior_sd(cov)  # (B, m)
            pick = choose if selection == "ucb" else random_choice
            x = pick(transfer_gain(ucb, s, dist, covered), trained, rngs)
        choices[:, k] = x
        slopes[:, k] = s
        y = problem.observe(x, rngs)  # (B, m)
        rows[all_rows, x] = y
        trained[all_rows, x] = True
        covered = np.maximum(covered, y)
        condition(mean, cov, x, y[all_rows, x], float(problem.noise))
    return GridBanditRun(
        choices=choices,
        declared=np.zeros(B, dtype=np.int64),
        diagnostics={"beta": beta, "slope": slopes},
        config={
            "delta": float(delta),
            "slope": slope,
            "scale": float(scale),
            "m": m,
            "selection": selection,
        },  # fmt: skip
    )


@register(
    "mbtl",
    kind="gp-bandit",
    problem="transfer-grid",
    bounds=(),
    papers=("002-004#B1", "001#21"),
    summary="MBTL (Cho et al. 2024): GP on the training performance + a linear generalisation "
    "gap; each round trains the context of the largest optimistic coverage gain",
)
def mbtl(
    problem, rounds, rngs, delta: float = 0.1, slope="known", scale: float = 1.0,
    selection: str = "ucb",
):  # fmt: skip
    """MBTL on a ``transfer-grid`` problem for ``rounds`` training tasks per seed; ``slope``:
    ``"known"``, ``"estimate"`` or a number; ``scale`` multiplies beta_k^(1/2); ``selection``:
    ``"ucb"`` (MBTL) or ``"random"`` (the baseline: a random untrained context after the
    first)."""
    if not isinstance(problem, TransferGridProblem):
        raise ValueError(
            f"mbtl runs on a transfer problem (e.g. transfer-grid:m=20), got "
            f"{getattr(problem, 'name', type(problem).__name__)!r}"
        )
    ok = isinstance(delta, (int, float)) and not isinstance(delta, bool)
    if not (ok and 0.0 < delta < 1.0):
        raise ValueError(f"mbtl: delta must lie in (0, 1), got {delta!r}")
    number = isinstance(slope, (int, float)) and not isinstance(slope, bool)
    if not (slope in ("known", "estimate") or (number and math.isfinite(slope) and slope >= 0)):
        raise ValueError(f"mbtl: slope must be 'known', 'estimate' or a number >= 0, got {slope!r}")
    ok = isinstance(scale, (int, float)) and not isinstance(scale, bool)
    if not (ok and math.isfinite(scale) and scale >= 0.0):
        raise ValueError(f"mbtl: scale must be a finite number >= 0, got {scale!r}")
    if selection not in ("ucb", "random"):
        raise ValueError(f"mbtl: selection must be 'ucb' or 'random', got {selection!r}")
    return mbtl_choices(problem, rounds, rngs, delta=float(delta), slope=slope,
                        scale=float(scale), selection=selection)  # fmt: skip
