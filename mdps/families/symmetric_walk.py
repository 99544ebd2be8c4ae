r"""Symmetric random walk: a discounted tabular MDP whose uniform policy has a symmetric P^pi.

Built for TD-JEPA (``seed-catalogue-002-004.md#A4``, Bagatella et al. 2025), whose idealised
analysis assumes a symmetric policy transition matrix and an isotropic state distribution; here
both hold exactly for the uniform policy and mu0.

* Action a moves along a random permutation sigma_a of the S states, forwards or backwards with
  probability 1/2 each: ``P_a = (Pi_{sigma_a} + Pi_{sigma_a}^T) / 2`` (symmetric and doubly
  stochastic). Every policy that plays the same action law in every state, the uniform one
  included, has a symmetric, doubly stochastic P^pi; its stationary law is uniform.
* The successor matrix of the uniform policy, ``M = (I - gamma P^u)^{-1}``, is then symmetric
  positive definite with eigenvalues ``1 / (1 - gamma lambda_i)`` (lambda_i those of P^u): its
  top-r singular subspace is the span of the r leading eigenvectors of P^u, the first being the
  constant vector.
* Reward ``r(s, a) = r(s)`` (the same for every action), an affine combination of the ``rank``
  leading eigenvectors of P^u, scaled into [0, 1]: r lies in the top-``rank`` singular subspace
  of M, hence so does V^u = M r. The family refuses a draw whose eigenvalue gap after the
  ``rank``-th eigenvalue is below 1e-6 (the subspace would not be defined).
* mu0 uniform. Random stream: ``default_rng([seed, 4])`` draws the permutations, then the reward
  weights.

:meth:`SymmetricWalk.reveal` gives the uniform policy's P^u ``(S, S)``, its eigenvalues (decreasing)
and eigenvectors, for tests and claims.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from theorylab.errors import InvalidMDPError
from theorylab.mdps.families.chain import require_discount, require_int
from theorylab.mdps.registry import register
from theorylab.mdps.tabular import TabularMDP

MIN_GAP = 1e-6


@dataclass(frozen=True)
class WalkTruth:
    """``P_uniform (S, S)``; ``eigenvalues (S,)`` decreasing; ``eigenvectors (S, S)`` columns."""

    P_uniform: np.ndarray
    eigenvalues: np.ndarray
    eigenvectors: np.ndarray


class SymmetricWalk(TabularMDP):
    """A discounted tabular MDP that also holds its uniform policy's spectrum."""

    def __init__(self, P, R, mu0, truth: WalkTruth, *, gamma: float, name: str) -> None:
        super().__init__(P, R, mu0, gamma=gamma, name=name)
        self._truth = truth

    def reveal(self) -> WalkTruth:
        return self._truth


@register("symmetric-walk")
def symmetric_walk(
    S: int = 12, A: int = 3, gamma: float = 0.9, rank: int = 3, seed: int = 0
) -> SymmetricWalk:
    """Symmetric random walk over random permutations (module docstring)."""
    S = require_int("symmetric-walk", "S", S, 3)
    A = require_int("symmetric-walk", "A", A, 1)
    seed = require_int("symmetric-walk", "seed", seed, 0)
    rank = require_int("symmetric-walk", "rank", rank, 1)
    if rank >= S:
        raise InvalidMDPError(f"symmetric-walk: rank must be < S = {S}, got rank={rank}")
    gamma = require_discount("symmetric-walk", gamma)
    rng = np.random.default_rng([seed, 4])
    eye = np.eye(S)
    P = np.empty((S, A, S))  # (S, A, S)
    for a in range(A):
        perm = eye[rng.permutation(S)]  # (S, S) permutation matrix
        P[:, a, :] = 0.5 * (perm + perm.T)
    Pu = P.mean(axis=1)  # (S, S), symmetric
    lam, vec = np.linalg.eigh(Pu)
    lam, vec = lam[::-1], vec[:, ::-1]  # decreasing
    if lam[rank - 1] - lam[rank] < MIN_GAP:
        raise InvalidMDPError(
            f"symmetric-walk: seed={seed} gives eigenvalue gap {lam[rank - 1] - lam[rank]:.2e} "
            f"after the rank={rank}-th eigenvalue of the uniform policy's P (needs >= {MIN_GAP}); "
            "choose another seed or rank"
        )
    w = rng.normal(size=rank)  # (rank,)
    shape = vec[:, :rank] @ w  # (S,) in the top-rank eigenspace (constant vector included)
    r = (shape - shape.min()) / max(np.ptp(shape), 1e-12)  # (S,) in [0, 1]
    R = np.repeat(r[:, None], A, axis=1)  # (S, A)
    mu0 = np.full(S, 1.0 / S)
    name = f"symmetric-walk:S={S},A={A},gamma={gamma!r},rank={rank},seed={seed}"
    return SymmetricWalk(P, R, mu0, WalkTruth(Pu, lam, vec), gamma=gamma, name=name)
