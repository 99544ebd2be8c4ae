"""``multitask-linear``: M linear bandits sharing a k-dimensional representation
(:class:`theorylab.mdps.multitask_bandit.MultitaskLinearBandit`; seed rows 001#19, 001#20).

``multitask-linear:d=16,k=2,M=8,informative=4,gap=0.3,noise=1,candidates=0,confusion=0.5,
nuisance=0,seed=0``:

* ``informative`` unit vectors u_j of R^k with pairwise inner products <= 1 - gap, drawn from
  ``seed`` and k only (so the tasks are the same at every d); task m's head ``w_m = u_{m mod
  informative}``;
* arms ``Q [u_j; v_j]`` (v_j random of norm ``nuisance``: invisible to the means, seen by a wrong
  representation) and the d - k probes ``Q [0; e_i]``; ``B = Q[:, :k]``, Q a random rotation of
  R^d drawn from (seed, d);
* ``candidates = J > 0``: a class Phi of J representations, B at a seed-drawn index, the others
  ``B cos a + N_j sin a`` (``sin a = confusion``, N_j an orthonormal basis of k directions of B's
  complement).
"""

from __future__ import annotations

import numpy as np

from theorylab.errors import InvalidMDPError
from theorylab.mdps.multitask_bandit import MultitaskLinearBandit
from theorylab.mdps.registry import register


def _integer(name: str, value, low: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise InvalidMDPError(
            f"multitask-linear: {name} must be an integer >= {low}, got {value!r}"
        )
    return value


def _directions(k: int, count: int, gap: float, seed: int) -> np.ndarray:
    """``(count, k)`` unit vectors with pairwise inner products <= 1 - gap (greedy draws)."""
    rng = np.random.default_rng([seed, k, 19])
    chosen: list[np.ndarray] = []
    for _ in range(20000):
        u = rng.standard_normal(k)
        u /= np.linalg.norm(u)
        if all(u @ v <= 1 - gap for v in chosen):
            chosen.append(u)
            if len(chosen) == count:
                return np.array(chosen)
    raise InvalidMDPError(
        f"multitask-linear: no {count} unit vectors of R^{k} with pairwise gap >= {gap} were found "
        "(lower informative or gap)"
    )


@register("multitask-linear")
def multitask_linear(
    d: int = 16,
    k: int = 2,
    M: int = 8,
    informative: int = 4,
    gap: float = 0.3,
    noise: float = 1.0,
    candidates: int = 0,
    confusion: float = 0.5,
    nuisance: float = 0.0,
    seed: int = 0,
):
    """The instance (module docstring)."""
    k = _integer("k", k, 1)
    d = _integer("d", d, k + 1)
    M = _integer("M", M, 1)
    informative = _integer("informative", informative, 2)
    candidates = _integer("candidates", candidates, 0)
    for key, v, lo, hi in (("gap", gap, 0.0, 2.0), ("confusion", confusion, 0.0, 1.0)):
        if not (isinstance(v, (int, float)) and not isinstance(v, bool) and lo < v <= hi):
            raise InvalidMDPError(f"multitask-linear: {key} must be in ({lo}, {hi}], got {v!r}")
    if not (isinstance(nuisance, (int, float)) and np.isfinite(nuisance) and nuisance >= 0):
        raise InvalidMDPError(
            f"multitask-linear: nuisance must be a finite number >= 0, got {nuisance!r}"
        )
    if not (isinstance(noise, (int, float)) and np.isfinite(noise) and noise > 0):
        raise InvalidMDPError(f"multitask-linear: noise must be a finite number > 0, got {noise!r}")
    U = _directions(k, informative, float(gap), int(seed))  # (informative, k)
    rng = np.random.default_rng([seed, d, 20])
    Q, _ = np.linalg.qr(rng.standard_normal((d, d)))  # (d, d) a random rotation
    V = rng.standard_normal((informative, d - k))
    V *= nuisance / np.linalg.norm(V, axis=1, keepdims=True)  # (informative, d - k)
    arms = np.concatenate([U @ Q[:, :k].T + V @ Q[:, k:].T, Q[:, k:].T])  # (informative + d - k, d)
    B = Q[:, :k].copy()  # (d, k)
    W = U[np.arange(M) % informative].T.copy()  # (k, M)
    cands = np.zeros((0, d, k))
    true_index = -1
    if candidates:
        true_index = int(rng.integers(candidates))
        c = float(np.sqrt(1.0 - confusion**2))
        cands = np.empty((candidates, d, k))
        for j in range(candidates):
            # (d, k): an orthonormal basis of k directions of B's complement
            N, _ = np.linalg.qr(Q[:, k:] @ rng.standard_normal((d - k, k)))
            cands[j] = B if j == true_index else c * B + confusion * N[:, :k]
    name = (
        f"multitask-linear:d={d},k={k},M={M},informative={informative},gap={gap},noise={noise},"
        f"candidates={candidates},confusion={confusion},nuisance={nuisance},seed={seed}"
    )
    return MultitaskLinearBandit(arms=arms, B=B, W=W, noise=float(noise), candidates=cands,
                                 true_index=true_index, name=name)  # fmt: skip
