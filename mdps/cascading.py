r"""Cascading MDPs (Du, Srikant & Chen, ICLR 2024, "Cascading Reinforcement Learning"; seed row
``seed-catalogue-001.md#13``).

A user in state s is shown an ordered list ``A = (a_1, ..., a_m)`` of m distinct items out of N.
She examines the items in order and clicks the first attractive one: item a is attractive with
probability ``q(s, a)``, independently. A click on a_i gives reward ``r(s, a_i)`` and moves her
by ``P(. | s, a_i)``; when no item is clicked the no-click item ``a_bot`` applies (reward 0,
transition ``P(. | s, a_bot)``). With ``w(a) = r(s, a) + P(. | s, a) V`` and
``w_bot = P(. | s, a_bot) V`` the value of a list is the cascade

    Q(s, A) = sum_i prod_{j < i} (1 - q(s, a_j)) q(s, a_i) w(a_i) + prod_j (1 - q(s, a_j)) w_bot.

:class:`CascadingMDP` holds ``q (S, N)``, ``r (S, N)``, ``P (S, N + 1, S)`` (row N: the no-click
item), ``mu0 (S,)``, the list length m and the horizon H (a time-homogeneous model [A]: the
paper's model may depend on the step), and computes what a learner is scored by, by
*enumeration* of all ``N! / (N - m)!`` ordered lists (independent of the BestPerm oracle of
``algorithms/cascading/best_perm.py``, which the claim checks against it):

* :func:`cascade_value` the value above for given attraction and continuation values;
* :meth:`CascadingMDP.optimal` ``V*_h(s)`` and an optimal list per (h, s), brute force;
* :meth:`CascadingMDP.evaluate` the exact ``V^pi_1(mu0)`` of (batched) list policies;
* :meth:`CascadingMDP.rollout` one episode per seed: the states, the position clicked (m: none)
  and the rewards -- the item-level feedback of the paper (the items before the click were
  examined and not clicked; those after it were not examined).
"""

from __future__ import annotations

import itertools

import numpy as np

from theorylab.errors import InvalidMDPError


def cascade_value(q_list: np.ndarray, w_list: np.ndarray, w_bot) -> np.ndarray:
    """``(...)`` the cascade value of ordered lists: q_list, w_list ``(..., m)`` the attraction
    probabilities and click values of the listed items in order, w_bot ``(...)`` the no-click
    value."""
    q_list = np.asarray(q_list, dtype=np.float64)
    survive = np.cumprod(1.0 - q_list, axis=-1)  # (..., m) P(no click among the first i)
    examine = np.concatenate([np.ones_like(survive[..., :1]), survive[..., :-1]], axis=-1)
    return np.sum(examine * q_list * w_list, axis=-1) + survive[..., -1] * np.asarray(w_bot)


class CascadingMDP:
    """A finite-horizon cascading MDP with time-homogeneous q, r, P (see the module docstring).

    q: ``(S, N)`` attraction probabilities; r: ``(S, N)`` click rewards in [0, 1]; P: ``(S, N +
    1, S)`` transitions after a click on item a (rows 0..N-1) or no click (row N); mu0: ``(S,)``;
    m: list length (1 <= m <= N); horizon: H.
    """

    def __init__(self, q, r, P, mu0, *, m: int, horizon: int, name: str = "cascading") -> None:
        q, r = np.asarray(q, dtype=np.float64), np.asarray(r, dtype=np.float64)
        P, mu0 = np.asarray(P, dtype=np.float64), np.asarray(mu0, dtype=np.float64)
        if q.ndim != 2 or r.shape != q.shape:
            raise InvalidMDPError(
                f"{name}: q and r must be (S, N) arrays, got {q.shape}, {r.shape}"
            )
        S, N = q.shape
        if P.shape != (S, N + 1, S) or mu0.shape != (S,):
            raise InvalidMDPError(
                f"{name}: P must be (S, N + 1, S) = {(S, N + 1, S)} and mu0 (S,), got {P.shape}, "
                f"{mu0.shape}"
            )
        for key, arr in (("q", q), ("r", r)):
            if np.any(~np.isfinite(arr)) or arr.min() < 0 or arr.max() > 1:
                raise InvalidMDPError(f"{name}: {key} must lie in [0, 1], got {arr.tolist()}")
        for key, arr in (("P", P), ("mu0", mu0)):
            if arr.min() < 0 or np.any(np.abs(arr.sum(axis=-1) - 1.0) > 1e-9):
                raise InvalidMDPError(f"{name}: the rows of {key} must be distributions")
        if not (1 <= int(m) <= N) or int(horizon) < 1:
            raise InvalidMDPError(
                f"{name}: need 1 <= m <= N = {N} and horizon >= 1, got m={m}, horizon={horizon}"
            )
        self.q, self.r, self.P, self.mu0 = q, r, P, mu0
        self.S, self.N, self.m, self.H = S, N, int(m), int(horizon)
        self.name = name

    def lists(self) -> np.ndarray:
        """``(L, m)`` every ordered list of m distinct items, L = N! / (N - m)!."""
        return np.array(list(itertools.permutations(range(self.N), self.m)), dtype=np.int64)

    def click_values(self, v_next: np.ndarray) -> np.ndarray:
        """``(..., S, N + 1)`` w(s, a) = r(s, a) + P(.|s, a) V (a < N), w_bot = P(.|s, bot) V;
        v_next: ``(..., S)``."""
        cont = np.einsum("san,...n->...sa", self.P, v_next)  # (..., S, N + 1)
        reward = np.concatenate([self.r, np.zeros((self.S, 1))], axis=1)  # (S, N + 1)
        return reward + cont

    def list_q(self, v_next: np.ndarray, lists: np.ndarray) -> np.ndarray:
        """``(..., S, L)`` Q(s, A) of every list A in ``lists (L, m)``; V_{h+1}: ``(..., S)``."""
        w = self.click_values(v_next)  # (..., S, N + 1)
        q_list = self.q[:, lists]  # (S, L, m)
        w_list = w[..., lists]  # (..., S, L, m)
        return cascade_value(q_list, w_list, w[..., self.N][..., None])

    def optimal(self) -> tuple[np.ndarray, np.ndarray]:
        """``(V* (H + 1, S), lists* (H, S, m))`` by backward induction with a brute-force argmax
        over all ordered lists (no structure of the optimum is used)."""
        lists = self.lists()
        V = np.zeros((self.H + 1, self.S))
        best = np.zeros((self.H, self.S, self.m), dtype=np.int64)
        for h in range(self.H - 1, -1, -1):
            Q = self.list_q(V[h + 1], lists)  # (S, L)
            idx = np.argmax(Q, axis=1)
            V[h], best[h] = Q[np.arange(self.S), idx], lists[idx]
        return V, best

    def optimal_value(self) -> float:
        """``V*_1(mu0)``."""
        return float(self.mu0 @ self.optimal()[0][0])

    def evaluate(self, lists: np.ndarray) -> np.ndarray:
        """``(B,)`` exact ``V^pi_1(mu0)`` of list policies ``(B, H, S, m)``."""
        lists = np.asarray(lists, dtype=np.int64)
        self._check_lists(lists)
        B = lists.shape[0]
        V = np.zeros((B, self.S))
        rows = np.arange(self.S)[None, :, None]
        for h in range(self.H - 1, -1, -1):
            w = self.click_values(V)  # (B, S, N + 1)
            L = lists[:, h]  # (B, S, m)
            q_list = self.q[rows, L]  # (B, S, m)
            w_list = np.take_along_axis(w, L, axis=-1)
            V = cascade_value(q_list, w_list, w[..., self.N])
        return V @ self.mu0

    def rollout(self, lists: np.ndarray, rngs) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """One episode per seed under list policies ``(B, H, S, m)``, generator ``rngs[b]``.

        Returns states ``(B, H + 1)`` (the last one after step H), clicks ``(B, H)`` the position
        clicked in [0, m) or m for no click, rewards ``(B, H)``."""
        lists = np.asarray(lists, dtype=np.int64)
        B = lists.shape[0]
        states = np.zeros((B, self.H + 1), dtype=np.int64)
        clicks = np.full((B, self.H), self.m, dtype=np.int64)
        rewards = np.zeros((B, self.H))
        cdf_P, cdf_0 = np.cumsum(self.P, axis=-1), np.cumsum(self.mu0)
        for b, g in enumerate(rngs):
            u = g.random((self.H + 1, self.m + 1))  # one row per step: m attractions, next state
            s = min(int(np.searchsorted(cdf_0, u[0, 0], side="right")), self.S - 1)
            states[b, 0] = s
            for h in range(self.H):
                items = lists[b, h, s]
                attractive = u[h + 1, : self.m] < self.q[s, items]
                hit = np.flatnonzero(attractive)
                item = self.N
                if hit.size:
                    clicks[b, h] = hit[0]
                    item = int(items[hit[0]])
                    rewards[b, h] = self.r[s, item]
                nxt = np.searchsorted(cdf_P[s, item], u[h + 1, self.m], side="right")
                s = min(int(nxt), self.S - 1)
                states[b, h + 1] = s
        return states, clicks, rewards

    def _check_lists(self, lists: np.ndarray) -> None:
        if lists.ndim != 4 or lists.shape[1:] != (self.H, self.S, self.m):
            raise ValueError(
                f"{self.name}: list policies must be (B, H, S, m) = (B, {self.H}, {self.S}, "
                f"{self.m}), got {lists.shape}"
            )
        srt = np.sort(lists, axis=-1)
        if lists.min() < 0 or lists.max() >= self.N or np.any(srt[..., 1:] == srt[..., :-1]):
            raise ValueError(f"{self.name}: a list must hold m distinct items in [0, {self.N})")
