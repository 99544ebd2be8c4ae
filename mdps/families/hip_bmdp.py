r"""Hidden-parameter block MDP (HiP-BMDP): M tasks that share a block emission and a latent state
space, and differ in their latent dynamics through a hidden parameter theta.

Built for ``seed-catalogue-001.md#31`` (Zhang, Sodhani, Khetarpal, Pineau, "Learning Robust State
Abstractions for Hidden-Parameter Block MDPs", ICLR 2021, arXiv:2007.07206): the multi-task setting
whose abstraction is learned from the samples of all tasks together.

* Latent z in 0 .. N-1 on a ring; actions 0 (left) and 1 (right). Task m has the hidden parameter
  theta_m = (m + 1/2) / M: right moves to z + 1 with probability 0.1 + 0.8 theta_m (else stays),
  left moves to z - 1 with probability 0.9 - 0.8 theta_m (else stays). Reward 1 at latent 0
  (every action), 0 elsewhere, the same in every task.
* Block emission, shared by every task: latent z emits the observations z b .. z b + b - 1 with
  probabilities q(z b + j | z) = (j + 1) / (b (b + 1) / 2) (so X = N b observations per task).
* The MDP over (task, observation): state s = m X + x; the task is drawn uniformly at the start
  and never changes (P has no cross-task mass); mu0 uniform over the M X states; discounted by
  ``gamma``. A learner that knows the layout (``tasks`` = M) reads the task of every sample from
  its state; the data of task m are its rows of an offline dataset.

:meth:`HiPBMDP.reveal` gives the exact decoder x -> z ``(X,)``, the hidden parameters ``(M,)``,
the task latent models ``(M, N, A, N)`` and the emission ``(N, X)``: the independent answers of
the claim ``hip-bmdp-total-samples``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from theorylab.mdps.families.chain import require_discount, require_int
from theorylab.mdps.registry import register
from theorylab.mdps.sizes import check_dense_size
from theorylab.mdps.tabular import TabularMDP


@dataclass(frozen=True)
class HiPTruth:
    """``decoder (X,)`` z(x) within a task, ``thetas (M,)``, ``T (M, N, A, N)`` the task latent
    models, ``emission (N, X)`` q(x|z)."""

    decoder: np.ndarray
    thetas: np.ndarray
    T: np.ndarray
    emission: np.ndarray

    @property
    def tasks(self) -> int:
        return int(self.thetas.shape[0])


class HiPBMDP(TabularMDP):
    """The HiP-BMDP as one MDP over (task, observation), holding its hidden structure."""

    def __init__(self, P, R, mu0, truth: HiPTruth, *, gamma: float, name: str) -> None:
        super().__init__(P, R, mu0, horizon=None, gamma=gamma, reward_model="bernoulli", name=name)
        self._truth = truth
        self.n_latent = int(truth.T.shape[1])

    def reveal(self) -> HiPTruth:
        return self._truth


def task_latent_models(thetas: np.ndarray, N: int) -> np.ndarray:
    """Latent transitions ``(M, N, 2, N)`` of the tasks with hidden parameters ``thetas (M,)``."""
    M = len(thetas)
    T = np.zeros((M, N, 2, N))
    z = np.arange(N)
    right = 0.1 + 0.8 * thetas  # (M,)
    left = 0.9 - 0.8 * thetas  # (M,)
    T[:, z, 1, (z + 1) % N] += right[:, None]
    T[:, z, 1, z] += 1.0 - right[:, None]
    T[:, z, 0, (z - 1) % N] += left[:, None]
    T[:, z, 0, z] += 1.0 - left[:, None]
    return T


@register("hip-bmdp")
def hip_bmdp(M: int = 4, N: int = 4, b: int = 4, gamma: float = 0.9) -> HiPBMDP:
    """HiP-BMDP over (task, observation) (module docstring)."""
    M = require_int("hip-bmdp", "M", M, 1)
    N = require_int("hip-bmdp", "N", N, 3)
    b = require_int("hip-bmdp", "b", b, 1)
    gamma = require_discount("hip-bmdp", gamma)
    X, A = N * b, 2
    S = M * X
    check_dense_size("hip-bmdp", f"M={M},N={N},b={b}", S, A)
    thetas = (np.arange(M) + 0.5) / M  # (M,)
    T = task_latent_models(thetas, N)  # (M, N, A, N)
    decoder = np.arange(X) // b  # (X,)
    q = np.zeros((N, X))
    q[decoder, np.arange(X)] = (np.arange(X) % b + 1) / (b * (b + 1) / 2)
    P = np.zeros((S, A, S))
    for m in range(M):
        rows = slice(m * X, (m + 1) * X)
        # P(x'|x, a) = sum_z' T_m(z'|z(x), a) q(x'|z')
        P[rows, :, rows] = np.einsum("xan,ny->xay", T[m][decoder], q)
    R = np.repeat((np.tile(decoder, M) == 0).astype(np.float64)[:, None], A, axis=1)  # (S, A)
    mu0 = np.full(S, 1.0 / S)
    truth = HiPTruth(decoder, thetas, T, q)
    name = f"hip-bmdp:M={M},N={N},b={b},gamma={gamma!r}"
    return HiPBMDP(P, R, mu0, truth, gamma=gamma, name=name)
