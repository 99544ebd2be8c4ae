r"""BestPerm: the optimal ordered item list of a cascade (Du, Srikant & Chen, ICLR 2024, seed row
001#13; ``seed-catalogue-001.md#13``).

For attraction probabilities q_a, click values w_a and a no-click value w_bot, the value of a list
``(a_1, ..., a_m)`` is ``sum_i prod_{j<i} (1 - q_{a_j}) q_{a_i} w_{a_i} + prod_j (1 - q_{a_j})
w_bot`` (:func:`theorylab.mdps.cascading.cascade_value`). Two facts make the argmax over the
``N! / (N - m)!`` lists cheap:

1. *Order* (an exchange argument [A]): swapping adjacent items i, j changes the value by
   ``q_i q_j (w_i - w_j)`` times the probability of reaching them, so for a fixed set of items
   the best order is by decreasing w (whatever w_bot is).
2. *Set* (a dynamic programme over the items sorted by decreasing w): with ``G(i, k)`` the best
   value of a list of exactly k items from the sorted suffix i..N-1 followed by no click,
   ``G(N, 0) = w_bot``, ``G(N, k > 0) = -inf``, and
   ``G(i, k) = max(G(i + 1, k), q_i w_i + (1 - q_i) G(i + 1, k - 1))``;
   the optimum is ``G(0, m)``, in O(N log N + N m).

The paper's BestPerm exploits the same two properties of the value function (its abstract; the
paper's pseudo-code was not read: the DP is reconstructed [A], and lists of *exactly* m items,
the catalogue's N!/(N - m)!, are assumed). ``sort_key`` is the seam of the mutation
``cascading-sort-by-qw`` (order and select by q w instead of w: wrong whenever items with a large
q w have a small w).
"""

from __future__ import annotations

import numpy as np


def sort_key(q: np.ndarray, w: np.ndarray) -> np.ndarray:
    """``(..., N)`` the key BestPerm orders items by (decreasing): the click value w."""
    return w


def best_perm(
    q: np.ndarray, w: np.ndarray, w_bot: np.ndarray, m: int
) -> tuple[np.ndarray, np.ndarray]:
    """``(lists (..., m), values (...))``: the value-maximising ordered lists of m distinct items
    for attraction probabilities q ``(..., N)``, click values w ``(..., N)`` and no-click values
    w_bot ``(...)``, by the sort-and-DP of the module docstring."""
    q, w = np.asarray(q, dtype=np.float64), np.asarray(w, dtype=np.float64)
    w_bot = np.asarray(w_bot, dtype=np.float64)
    N = q.shape[-1]
    if not (1 <= m <= N):
        raise ValueError(f"best_perm: list length m must be in [1, N = {N}], got m={m}")
    order = np.argsort(-sort_key(q, w), axis=-1, kind="stable")  # (..., N)
    qs = np.take_along_axis(q, order, axis=-1)
    ws = np.take_along_axis(w, order, axis=-1)
    batch = q.shape[:-1]
    G = np.full((*batch, m + 1), -np.inf)  # G(i, k), k = 0..m, for the current i
    G[..., 0] = w_bot
    take = np.zeros((N, *batch, m + 1), dtype=bool)
    for i in range(N - 1, -1, -1):
        with np.errstate(invalid="ignore"):
            use = qs[..., i, None] * ws[..., i, None] + (1.0 - qs[..., i, None]) * G[..., :-1]
        better = use > G[..., 1:]
        take[i, ..., 1:] = better
        G[..., 1:] = np.where(better, use, G[..., 1:])
    # backtrack on the flattened batch: item i is taken when take[i, k] with k items still to place
    M = int(np.prod(batch, dtype=np.int64))
    flat_take = take.reshape(N, M, m + 1)
    flat_order = order.reshape(M, N)
    lists = np.zeros((M, m), dtype=np.int64)
    k = np.full(M, m, dtype=np.int64)
    rows = np.arange(M)
    for i in range(N):
        chosen = (k > 0) & flat_take[i, rows, k]
        lists[rows[chosen], m - k[chosen]] = flat_order[chosen, i]
        k -= chosen
    return lists.reshape(*batch, m), G[..., m]
