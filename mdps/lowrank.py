r"""Low-rank MDPs: a linear MDP whose features are hidden, with a finite candidate feature class.

A low-rank MDP (AJKS section 8.1.1; theory.md section 7) has

    P_h(s' | s, a) = < phi*(s, a), mu*_h(s') >      (rank <= d)

with *both* factors unknown. Learning goes through realisability: the learner is given a finite
class ``Phi = {phi_1, ..., phi_M}`` that contains ``phi*`` and fits the factors by maximum
likelihood (FLAMBE, Rep-UCB). :class:`LowRankMDP` is the exact model (a :class:`TabularMDP`) plus
``candidates (M, S, A, d)``, the class offered to the learner; ``phi*``, ``mu*``, ``theta*`` and
the position of ``phi*`` in the class are kept private and handed out only by :meth:`reveal`
(for tests and claims, never to an agent).

Simplex classes (:func:`simplex_feature_class`). Rep-UCB's MLE ranges over ``phi in Phi`` and
``mu in Upsilon``; with simplex-valued features (every ``phi(s, a)`` a probability vector, as in
theory.md 7.1) the natural ``Upsilon`` is the set of row-stochastic ``(d, S)`` matrices, for which
``<phi(s, a), mu(.)>`` is a distribution for every candidate. The class holds

* the true map ``phi*``;
* ``n_random`` *random distractors*: independent draws of the same law (``U(simplex)`` per pair);
* ``n_perturbed`` *near distractors*: ``phi*`` with the feature rows of a random fraction
  ``swap_fraction`` of the (s, a) pairs permuted among themselves (a cyclic shift of the chosen
  rows, so every chosen pair gets another pair's features). Such a candidate agrees with
  ``phi*`` everywhere else and can be told apart only from data at the swapped pairs.

The order of the M = 1 + n_random + n_perturbed candidates is shuffled. Deliberately absent: a
coordinate permutation of ``phi*`` (``phi* P`` with ``mu* = P^T mu*``) describes the same model
and would be an equally correct answer, so "the MLE picks the true map" would be ill-posed.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from theorylab.errors import InvalidMDPError
from theorylab.mdps.linear import LinearMDP, check_features
from theorylab.mdps.tabular import RewardModel, TabularMDP


@dataclass(frozen=True)
class LowRankFactors:
    """The hidden truth of a :class:`LowRankMDP`: ``phi (S, A, d)``, ``mu (H, d, S)``,
    ``theta (H, d)`` and ``index``, the position of ``phi`` in ``candidates``."""

    phi: np.ndarray
    mu: np.ndarray
    theta: np.ndarray
    index: int


def random_simplex(rng: np.random.Generator, shape: tuple[int, ...], d: int) -> np.ndarray:
    """Uniform draws from the simplex ``Delta^{d-1}``, ``(*shape, d)``: the spacings of sorted
    uniforms (Rubinstein & Kroese 2007; theory.md 7.1), i.e. Dirichlet(1, ..., 1)."""
    u = np.sort(rng.uniform(size=(*shape, d - 1)), axis=-1)  # (*shape, d-1)
    edges = np.concatenate([np.zeros((*shape, 1)), u, np.ones((*shape, 1))], axis=-1)
    return np.diff(edges, axis=-1)  # (*shape, d)


def simplex_feature_class(
    phi: np.ndarray,
    rng: np.random.Generator,
    *,
    n_random: int = 4,
    n_perturbed: int = 2,
    swap_fraction: float = 0.5,
) -> tuple[np.ndarray, int]:
    """A candidate class around the true simplex features ``phi (S, A, d)`` (module docstring).

    Returns ``(candidates (M, S, A, d), index of phi)`` with ``M = 1 + n_random + n_perturbed``.
    """
    S, A, d = phi.shape
    if n_random < 0 or n_perturbed < 0:
        raise InvalidMDPError("n_random and n_perturbed must be >= 0")
    if not (0.0 < swap_fraction <= 1.0):
        raise InvalidMDPError(f"swap_fraction must lie in (0, 1], got {swap_fraction!r}")
    flat = phi.reshape(S * A, d)
    members = [flat]
    for _ in range(n_random):
        cand = random_simplex(rng, (S * A,), d)
        while any(np.array_equal(cand, m) for m in members):  # e.g. rng seeded like phi's
            cand = random_simplex(rng, (S * A,), d)
        members.append(cand)
    n_swap = max(2, int(round(swap_fraction * S * A)))
    if n_perturbed and S * A < 2:
        raise InvalidMDPError("near distractors need at least 2 (s, a) pairs")
    for _ in range(n_perturbed):
        for _attempt in range(100):
            rows = rng.choice(S * A, size=min(n_swap, S * A), replace=False)  # (n_swap,)
            cand = flat.copy()
            cand[rows] = flat[np.roll(rows, 1)]  # each chosen pair gets the next one's features
            if not np.array_equal(cand, flat):
                break
        members.append(cand)
    order = rng.permutation(len(members))  # candidate j is members[order[j]]
    candidates = np.stack([members[i] for i in order]).reshape(len(members), S, A, d)
    return candidates, int(np.argmax(order == 0))


class LowRankMDP(TabularMDP):
    """A low-rank MDP whose factors are hidden; ``candidates (M, S, A, d)`` is the learner's class.

    Built from the true ``phi (S, A, d)``, ``mu (H, d, S)`` (or ``(d, S)``), ``theta (H, d)`` (or
    ``(d,)``) exactly as :class:`LinearMDP` (same validation), plus ``candidates``, which must
    contain ``phi`` exactly (realisability); otherwise :class:`InvalidMDPError`.
    """

    def __init__(
        self,
        phi,
        mu,
        theta,
        candidates,
        mu0=None,
        *,
        horizon: int,
        reward_model: RewardModel = "deterministic",
        name: str = "lowrank",
    ) -> None:
        linear = LinearMDP(phi, mu, theta, mu0, horizon=horizon, reward_model=reward_model)
        cands = np.array(candidates, dtype=np.float64)
        S, A, d = linear.phi.shape
        if cands.ndim != 4 or cands.shape[1:] != (S, A, d) or cands.shape[0] < 1:
            raise InvalidMDPError(
                f"candidates must have shape (M, S, A, d) = (M, {S}, {A}, {d}), got {cands.shape}"
            )
        for j in range(cands.shape[0]):
            check_features(cands[j], name=f"candidates[{j}]")
        hits = np.flatnonzero(np.all(cands == linear.phi[None], axis=(1, 2, 3)))
        if hits.size == 0:
            raise InvalidMDPError(
                "the candidate class does not contain the true features phi (realisability)"
            )
        super().__init__(
            linear.P,
            linear.R,
            linear.mu0,
            horizon=linear.horizon,
            reward_model=reward_model,
            name=name,
        )
        self.candidates = cands  # (M, S, A, d)
        self.candidates.setflags(write=False)
        self._factors = LowRankFactors(linear.phi, linear.mu, linear.theta, int(hits[0]))

    @property
    def d(self) -> int:
        """Rank bound: the candidates' feature dimension."""
        return int(self.candidates.shape[-1])

    @property
    def density_features(self) -> np.ndarray:
        """The right factor ``mu (H, d, S)`` alone (read-only): the *density features* of the
        known-right-factor setting (Huang, Chen & Jiang 2023; ``density-model-vi``). ``phi`` stays
        hidden."""
        mu = np.array(self._factors.mu, dtype=float)
        mu.setflags(write=False)
        return mu

    @property
    def n_candidates(self) -> int:
        return int(self.candidates.shape[0])

    def __repr__(self) -> str:
        return (
            f"LowRankMDP({self.name!r}, S={self.S}, A={self.A}, d={self.d}, H={self.horizon}, "
            f"|Phi|={self.n_candidates})"
        )

    def reveal(self) -> LowRankFactors:
        """The hidden factors and the index of ``phi*`` in ``candidates`` (tests only)."""
        return self._factors

    def to_linear(self) -> LinearMDP:
        """The same model as a :class:`LinearMDP` with the true features revealed."""
        f = self._factors
        return LinearMDP(
            f.phi,
            f.mu,
            f.theta,
            self.mu0,
            horizon=self.horizon,
            reward_model=self.reward_model,
            name=self.name,
        )
