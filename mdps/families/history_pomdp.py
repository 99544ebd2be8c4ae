r"""History MDP of a small POMDP: the states are observation histories, many per latent state.

Built for offline RL with observation histories (``seed-catalogue-000.md#49``, Hong et al.): a
finite-horizon POMDP whose observation o_t = (z_t, xi_t) shows the latent z_t next to an
irrelevant symbol xi_t (uniform over K values, iid), unrolled into the MDP over histories
(o_0 .. o_t), which is what a history-conditioned learner sees. The history MDP has
sum_t (N K)^(t+1) states; it is bisimilar to the latent MDP through h -> z_t(h) (tests check it).

* Latent z in 0 .. N-1, actions 0 .. A-1 (A >= N): reward Bernoulli(``hi``) for the action a = z,
  Bernoulli(``lo``) otherwise; next latent z' = z with probability ``stay`` when a = z, else
  uniform over the N latents.
* z_0 uniform; xi_t uniform over K, independent of everything.
* Layout (:func:`history_layout`): stage-t histories are the states offset_t + code, code the
  base-O number (O = N K) of (o_0 .. o_t) with o_t the least significant digit, o = z K + xi;
  offset_t = sum_{u < t} O^(u+1). The same index space serves every stage (P is stage-dependent);
  a stage-t state that is not a stage-t history is a dead state (self-loop, reward 0) that no
  policy reaches at that stage.

:meth:`HistoryPOMDP.reveal` gives the stage and last observation of every state and the latent
map h -> z_t(h).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from theorylab.errors import InvalidMDPError
from theorylab.mdps.families.chain import require_int, require_probability
from theorylab.mdps.registry import register
from theorylab.mdps.sizes import check_dense_size
from theorylab.mdps.tabular import TabularMDP


@dataclass(frozen=True)
class HistoryLayout:
    """``stage (S,)`` the stage a state is a history of, ``last (S,)`` its last observation,
    ``offsets (H + 1,)`` the first index of each stage's block (offsets[H] = S)."""

    stage: np.ndarray
    last: np.ndarray
    offsets: np.ndarray


def history_layout(O: int, H: int) -> HistoryLayout:
    """The index layout of histories over O observations up to length H (module docstring)."""
    sizes = O ** np.arange(1, H + 1)  # (H,)
    offsets = np.concatenate([[0], np.cumsum(sizes)])  # (H + 1,)
    stage = np.repeat(np.arange(H), sizes)  # (S,)
    last = np.concatenate([np.arange(n) % O for n in sizes])  # (S,)
    return HistoryLayout(stage, last, offsets)


@dataclass(frozen=True)
class HistoryTruth:
    layout: HistoryLayout
    latent: np.ndarray  # z_t(h) ``(S,)``
    n_latent: int
    K: int


class HistoryPOMDP(TabularMDP):
    """The history MDP, holding its layout and latent map."""

    def __init__(self, P, R, mu0, truth: HistoryTruth, *, horizon: int, name: str) -> None:
        super().__init__(P, R, mu0, horizon=horizon, reward_model="bernoulli", name=name)
        self._truth = truth

    def reveal(self) -> HistoryTruth:
        return self._truth


@register("history-pomdp")
def history_pomdp(
    N: int = 2,
    K: int = 2,
    A: int = 2,
    H: int = 3,
    hi: float = 0.8,
    lo: float = 0.2,
    stay: float = 0.7,
) -> HistoryPOMDP:
    """History MDP of the POMDP in the module docstring."""
    N = require_int("history-pomdp", "N", N, 1)
    K = require_int("history-pomdp", "K", K, 1)
    A = require_int("history-pomdp", "A", A, 1)
    H = require_int("history-pomdp", "H", H, 1)
    hi = require_probability("history-pomdp", "hi", hi)
    lo = require_probability("history-pomdp", "lo", lo)
    stay = require_probability("history-pomdp", "stay", stay)
    if A < N:
        raise InvalidMDPError(f"history-pomdp: A must be >= N (one action per latent), got A={A}")
    O = N * K
    layout = history_layout(O, H)
    S = int(layout.offsets[-1])
    check_dense_size("history-pomdp", f"N={N},K={K},H={H}", S, H * A)
    z_last = layout.last // K  # (S,)
    T = np.full((N, A, N), 1.0 / N)  # latent transitions (N, A, N)
    for z in range(N):
        T[z, z] = (1.0 - stay) / N
        T[z, z, z] += stay
    P = np.zeros((H, S, A, S))
    R = np.zeros((H, S, A))
    for t in range(H):
        lo_t, hi_t = layout.offsets[t], layout.offsets[t + 1]
        hist = np.arange(lo_t, hi_t)  # (O^(t+1),) stage-t histories
        dead = np.setdiff1d(np.arange(S), hist)
        P[t, dead, :, dead] = 1.0
        R[t, hist] = np.where(np.arange(A)[None, :] == z_last[hist, None], hi, lo)
        if t == H - 1:
            P[t, hist, :, hist] = 1.0  # terminal: the value after H steps is not used
            continue
        code = hist - lo_t  # (n,)
        for o in range(O):  # the next observation o = z' K + xi'
            child = layout.offsets[t + 1] + code * O + o  # (n,)
            law = T[z_last[hist], :, o // K] / K  # (n, A)
            P[t, hist[:, None], np.arange(A)[None, :], child[:, None]] = law
    mu0 = np.zeros(S)
    mu0[:O] = 1.0 / O
    latent = z_last.copy()
    name = f"history-pomdp:N={N},K={K},A={A},H={H},hi={hi!r},lo={lo!r},stay={stay!r}"
    truth = HistoryTruth(layout, latent, N, K)
    return HistoryPOMDP(P, R, mu0, truth, horizon=H, name=name)
