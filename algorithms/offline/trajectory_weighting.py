r"""Return-weighted trajectory sampling: behaviour cloning on trajectories re-weighted by return.

Seed reference: ``seed-catalogue-002-004.md#C1`` -- Hong, Agrawal, Tachet des Combes, Laroche,
"Harnessing Mixed Offline Reinforcement Learning Datasets via Trajectory Weighting" (ICLR 2023).
Read [V]: only the abstract as quoted in the catalogue row -- "in deterministic MDPs with
stochastic initial states, the dataset sampling can be re-weighted to induce an artificial
dataset whose behavior policy has a higher return"; the weighting itself is not in the abstract.
Reconstructed [A]:

* weights ``w(tau) = exp(G(tau) / temperature)`` with ``G`` the episode's return, normalised
  *within each initial state* so that the re-weighted data keeps the data's initial-state
  distribution (the role of the paper's advantage weighting ``G(tau) - V(s_0)`` under stochastic
  initial states): the multiplier of episode tau is
  ``w(tau) n(s_0) / sum_{tau': s_0(tau') = s_0} w(tau')`` (with row weights when the data has
  them);
* the implied behaviour policy of the re-weighted data, per stage,
  ``pi_w,h(a|s) = sum_tau m(tau) 1{s_h = s, a_h = a} / sum_tau m(tau) 1{s_h = s}``
  (uniform where no episode visits s at h) -- the policy behaviour cloning on the re-weighted
  sampler converges to.

Why it improves in deterministic MDPs [A, the derivation the claim checks]: with deterministic
transitions every re-weighting q(tau) of the trajectory law that keeps mu0 is the law of some
history-dependent policy (condition q on the history), and the Markov policy made of q's
per-stage conditionals has the same state-action marginals (Puterman 1994, Thm. 5.5.1), so
``V^{pi_w} = E_q[G]``; and ``E_q[G | s_0] >= E_p[G | s_0]`` because ``w`` increases in ``G``
(Chebyshev's association inequality). With stochastic transitions the weights also select lucky
*transitions*, q is no policy's law, and ``V^{pi_w}`` can fall below the behaviour's (the
claim's counterexample). ``value_estimate`` is ``E_q[G]``, the re-weighted data's mean return.

Constants: ``temperature`` (default 0.1, [A]; ``inf``: no re-weighting, plain behaviour cloning).
Deviations: no CQL/IQL/TD3+BC on top (the catalogue's item (iv) is not implemented); finite
horizon, trajectory data only.
"""

from __future__ import annotations

import time

import numpy as np

from theorylab.algorithms.offline.dataset import InvalidDatasetError, OfflineDataset
from theorylab.algorithms.offline.empirical import require_data
from theorylab.algorithms.offline.result import OfflineResult


def episodes(dataset: OfflineDataset) -> tuple[np.ndarray, ...]:
    """(states, actions, rewards, row weights) as ``(B, K, H)`` arrays of whole episodes."""
    H = dataset.horizon
    if H is None or dataset.kind != "trajectories":
        raise InvalidDatasetError(
            "trajectory weighting needs finite-horizon trajectory data (kind='trajectories'), "
            f"got kind={dataset.kind!r}, horizon={H}"
        )
    B, N = dataset.states.shape
    K = N // H
    if K * H != N or not np.all(dataset.stages == np.tile(np.arange(H), K)):
        raise InvalidDatasetError(f"trajectory data must hold whole episodes of H = {H} rows")
    w = np.ones((B, N)) if dataset.weights is None else dataset.weights
    return tuple(
        np.asarray(x).reshape(B, K, H)
        for x in (dataset.states, dataset.actions, dataset.rewards, w)
    )


def episode_multipliers(
    s0: np.ndarray, G: np.ndarray, n: np.ndarray, S: int, temperature: float
) -> np.ndarray:
    """``m (B, K)``: the re-weighted mass of each episode (module docstring); s0, G, n ``(B, K)``
    the initial state, return and data weight of each episode."""
    if temperature == np.inf:
        return n
    z = G / temperature
    B = s0.shape[0]
    top = np.full((B, S), -np.inf)
    np.maximum.at(top, (np.arange(B)[:, None], s0), z)  # per (b, s0): max, for stability
    w = n * np.exp(z - np.take_along_axis(top, s0, axis=1))
    mass, wsum = np.zeros((B, S)), np.zeros((B, S))
    np.add.at(mass, (np.arange(B)[:, None], s0), n)
    np.add.at(wsum, (np.arange(B)[:, None], s0), w)
    return w * np.take_along_axis(mass / np.where(wsum > 0, wsum, 1.0), s0, axis=1)


def trajectory_weighting(dataset: OfflineDataset, *, temperature: float = 0.1) -> OfflineResult:
    """The re-weighted data's behaviour policy and mean return (module docstring)."""
    if not (isinstance(temperature, (int, float)) and temperature > 0):
        raise InvalidDatasetError(
            f"temperature must be > 0 (inf: no weighting), got {temperature!r}"
        )
    require_data(dataset, "trajectory-weighting")
    t0 = time.perf_counter()
    s, a, r, w = episodes(dataset)  # (B, K, H)
    B, K, H = s.shape
    S, A = dataset.S, dataset.A
    G = r.sum(axis=2)  # (B, K)
    m = episode_multipliers(s[:, :, 0], G, w[:, :, 0], S, float(temperature))  # (B, K)
    counts = np.zeros((B, H, S, A))
    b_idx = np.broadcast_to(np.arange(B)[:, None, None], s.shape)
    h_idx = np.broadcast_to(np.arange(H)[None, None, :], s.shape)
    np.add.at(counts, (b_idx, h_idx, s, a), np.broadcast_to(m[:, :, None], s.shape))
    tot = counts.sum(axis=-1, keepdims=True)
    policy = np.where(tot > 0, counts / np.where(tot > 0, tot, 1.0), 1.0 / A)  # (B, H, S, A)
    estimate = (m * G).sum(axis=1) / m.sum(axis=1)  # (B,) E_q[G]
    return OfflineResult(
        algorithm="trajectory-weighting",
        policy=policy,
        value_estimate=estimate,
        V=None,
        Q=None,
        pessimistic=False,
        params={"temperature": float(temperature)},
        info={"seconds": time.perf_counter() - t0, "episodes": K},
    )


__all__ = ["episode_multipliers", "episodes", "trajectory_weighting"]
