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
map h -> z_t(h). :func:`unroll` builds the history MDP of any latent model; both families use it.

``history-stitch`` (the stitching part of 000#49 / 002-004#C2): three latents, path (0), side (1)
and sink (2), seen through o = z K + xi as above; actions exit (0) and advance (1). Advance keeps
the path and moves side onto it; exit goes to the sink and pays ``exit`` (Bernoulli mean) on the
path; advance on the path at the last stage pays 1; the sink pays 0. z_0 is path or side with
probability 1/2 each, so V* = 1 (advance always). :func:`halves_behaviour` is the two-source
behaviour of the claim ``history-abstraction-stitching``: episodes that start on the path advance
before stage H // 2 and then exit (the first half of the optimal path), episodes that start beside
it advance always (they reach the path at stage 1 and run its second half); in the sink both
actions are equally likely. No trajectory runs the optimal path from a path start, so a
history-keyed learner, whose path-start histories after stage H // 2 have only exit data, gets at
most (exit + 1) / 2; a learner keyed on the latent (the last observation's block) joins the halves.
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


def unroll(
    T: np.ndarray, R_lat: np.ndarray, z0: np.ndarray, K: int, H: int, family: str, args: str
) -> tuple[np.ndarray, np.ndarray, np.ndarray, HistoryLayout, np.ndarray]:
    """The history MDP of a latent finite-horizon model seen through o = z K + xi (xi iid uniform
    over K): latent transitions T ``(N, A, N)``, latent mean rewards R_lat ``(H, N, A)``, initial
    latent law z0 ``(N,)``. Returns ``(P (H, S, A, S), R (H, S, A), mu0 (S,), layout, z_last
    (S,))`` (module docstring: layout, dead states, terminal self-loops)."""
    N, A = T.shape[0], T.shape[1]
    O = N * K
    layout = history_layout(O, H)
    S = int(layout.offsets[-1])
    check_dense_size(family, args, S, H * A)
    z_last = layout.last // K  # (S,)
    P = np.zeros((H, S, A, S))
    R = np.zeros((H, S, A))
    for t in range(H):
        lo_t, hi_t = layout.offsets[t], layout.offsets[t + 1]
        hist = np.arange(lo_t, hi_t)  # (O^(t+1),) stage-t histories
        dead = np.setdiff1d(np.arange(S), hist)
        P[t, dead, :, dead] = 1.0
        R[t, hist] = R_lat[t, z_last[hist]]
        if t == H - 1:
            P[t, hist, :, hist] = 1.0  # terminal: the value after H steps is not used
            continue
        code = hist - lo_t  # (n,)
        for o in range(O):  # the next observation o = z' K + xi'
            child = layout.offsets[t + 1] + code * O + o  # (n,)
            law = T[z_last[hist], :, o // K] / K  # (n, A)
            P[t, hist[:, None], np.arange(A)[None, :], child[:, None]] = law
    mu0 = np.zeros(S)
    mu0[:O] = np.repeat(z0, K) / K
    return P, R, mu0, layout, z_last


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
    T = np.full((N, A, N), 1.0 / N)  # latent transitions (N, A, N)
    for z in range(N):
        T[z, z] = (1.0 - stay) / N
        T[z, z, z] += stay
    R_lat = np.where(np.arange(A)[None, :] == np.arange(N)[:, None], hi, lo)  # (N, A)
    R_lat = np.broadcast_to(R_lat, (H, N, A))
    P, R, mu0, layout, latent = unroll(
        T, R_lat, np.full(N, 1.0 / N), K, H, "history-pomdp", f"N={N},K={K},H={H}"
    )
    name = f"history-pomdp:N={N},K={K},A={A},H={H},hi={hi!r},lo={lo!r},stay={stay!r}"
    truth = HistoryTruth(layout, latent, N, K)
    return HistoryPOMDP(P, R, mu0, truth, horizon=H, name=name)


# latents and actions of history-stitch (module docstring)
PATH, SIDE, SINK = 0, 1, 2
EXIT, ADVANCE = 0, 1


@register("history-stitch")
def history_stitch(K: int = 2, H: int = 4, exit: float = 0.3) -> HistoryPOMDP:
    """History MDP of the stitching POMDP in the module docstring."""
    K = require_int("history-stitch", "K", K, 1)
    H = require_int("history-stitch", "H", H, 3)
    exit = require_probability("history-stitch", "exit", exit)
    if not 0.0 < exit < 1.0:
        raise InvalidMDPError(
            f"history-stitch: exit must lie in (0, 1) (below the goal reward 1), got {exit!r}"
        )
    T = np.zeros((3, 2, 3))  # (N, A, N)
    T[PATH, ADVANCE, PATH] = T[SIDE, ADVANCE, PATH] = 1.0
    T[PATH, EXIT, SINK] = T[SIDE, EXIT, SINK] = 1.0
    T[SINK, :, SINK] = 1.0
    R_lat = np.zeros((H, 3, 2))
    R_lat[:, PATH, EXIT] = exit
    R_lat[H - 1, PATH, ADVANCE] = 1.0
    z0 = np.array([0.5, 0.5, 0.0])
    P, R, mu0, layout, latent = unroll(T, R_lat, z0, K, H, "history-stitch", f"K={K},H={H}")
    truth = HistoryTruth(layout, latent, 3, K)
    return HistoryPOMDP(
        P, R, mu0, truth, horizon=H, name=f"history-stitch:K={K},H={H},exit={exit!r}"
    )


def halves_behaviour(mdp: HistoryPOMDP) -> np.ndarray:
    """The two-source behaviour of ``history-stitch`` ``(H, S, A)`` (module docstring): episodes
    that start on the path advance before stage H // 2 and exit from it on (the first half);
    episodes that start beside it advance always (they join the path at stage 1: the second
    half); in the sink and on dead states both actions are equally likely."""
    truth = mdp.reveal()
    lay, K = truth.layout, truth.K
    H, S = mdp.horizon, mdp.S
    O = 3 * K
    first = np.zeros(S, dtype=np.int64)  # the first latent of each history (S,)
    for t in range(H):
        hist = np.arange(lay.offsets[t], lay.offsets[t + 1])
        first[hist] = ((hist - lay.offsets[t]) // O**t) // K
    beh = np.full((H, S, 2), 0.5)
    for t in range(H):
        hist = np.arange(lay.offsets[t], lay.offsets[t + 1])
        moving = hist[truth.latent[hist] != SINK]
        act = np.where((first[moving] == PATH) & (t >= H // 2), EXIT, ADVANCE)
        beh[t, moving] = np.eye(2)[act]
    return beh
