"""M linear bandits sharing a k-dimensional representation (seed rows 001#19 and 001#20).

:class:`MultitaskLinearBandit` -- one finite arm set ``X`` ``(n, d)`` shared by M tasks, task
parameters ``theta_m = B w_m`` with ``B`` ``(d, k)`` orthonormal (the shared representation) and
``w_m`` ``(k,)``; pulling arm x in task m returns ``x . theta_m + noise * eps``, eps ~ N(0, 1).
``candidates`` ``(J, d, k)`` is an optional finite class Phi of orthonormal representations
(``phi_j(x) = candidates[j]^T x``) holding ``B`` at index ``true_index`` (GFUCB's setting).

The instance of ``multitask-linear`` (``mdps/families/multitask_bandit_instances.py``) is built so
that the gaps do not depend on d: arms ``Q [u_j; 0]`` (u_j unit vectors of R^k, pairwise inner
products <= 1 - gap) and probe arms ``Q [0; e_i]`` (mean 0 in every task, spanning the
complement), ``B = Q[:, :k]``, ``w_m = u_{j_m}``, Q a random rotation of R^d. So every task's best
arm has mean 1, its gap is >= ``gap``, and only the nuisance dimensions grow with d.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True, eq=False)
class MultitaskLinearBandit:
    """arms ``(n, d)``; B ``(d, k)`` orthonormal; W ``(k, M)``; noise: reward noise's sd;
    candidates ``(J, d, k)`` (J = 0: no class given) with ``candidates[true_index] = B``."""

    arms: np.ndarray
    B: np.ndarray
    W: np.ndarray
    noise: float
    candidates: np.ndarray
    true_index: int
    name: str = "multitask-linear"

    @property
    def d(self) -> int:
        return int(self.arms.shape[1])

    @property
    def k(self) -> int:
        return int(self.B.shape[1])

    @property
    def M(self) -> int:
        return int(self.W.shape[1])

    @property
    def n_arms(self) -> int:
        return int(self.arms.shape[0])

    @property
    def theta(self) -> np.ndarray:
        """``(d, M)`` the task parameters ``B W``."""
        return self.B @ self.W

    def means(self) -> np.ndarray:
        """``(M, n)`` the exact mean reward of every arm in every task."""
        return (self.arms @ self.theta).T

    def best_arms(self) -> np.ndarray:
        """``(M,)`` each task's best arm (unique by construction)."""
        return np.argmax(self.means(), axis=1)

    def gaps(self) -> np.ndarray:
        """``(M,)`` each task's smallest gap between its best and second-best arm."""
        mu = np.sort(self.means(), axis=1)
        return mu[:, -1] - mu[:, -2]

    def diversity(self) -> float:
        """lambda_k of ``(1/M) sum_m theta_m theta_m^T`` (the tasks' spread over the k
        directions; the learner of 001#19 is told a lower bound on it, as the paper assumes)."""
        Z = self.theta @ self.theta.T / self.M  # (d, d)
        return float(np.linalg.eigvalsh(Z)[-self.k])

    def pull_means(self, counts: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """``(M, n)`` the average reward of ``counts[m, x]`` pulls of arm x in task m (NaN where
        no pull): the sufficient statistic of Gaussian noise, drawn exactly
        (``mu + noise / sqrt(count) * eps``)."""
        counts = np.asarray(counts)  # (M, n)
        eps = rng.standard_normal(counts.shape)
        with np.errstate(divide="ignore", invalid="ignore"):
            avg = self.means() + self.noise * eps / np.sqrt(counts)
        return np.where(counts > 0, avg, np.nan)

    def pull(self, arms: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """``(M,)`` one reward per task for the arms ``arms`` ``(M,)`` (one pull each)."""
        mu = self.means()[np.arange(self.M), np.asarray(arms)]
        return mu + self.noise * rng.standard_normal(self.M)
