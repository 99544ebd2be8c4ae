r"""Exact answers on submodular MDPs (:mod:`theorylab.mdps.submodular`): marginal gains, the
greedy policy and the optimum over all (history-dependent) policies, computed two ways.

With deterministic moves from a fixed start, a history-dependent policy's trajectory is fixed, so
``OPT = max over action sequences of F(tau)``:

* :func:`optimum_by_enumeration` -- every one of the A^(H-1) action sequences, rolled out and
  scored with ``F``;
* :func:`optimum_by_coverage_dp` -- for a coverage utility only, a memoised dynamic programme
  over (steps left, current state, set of covered targets): no trajectory is scored as a whole
  (the independent second answer).

:func:`marginal_gains` is the per-step reward of SubPO, ``F(s_{h+1} | tau_{0:h}) =
F(tau_{0:h+1}) - F(tau_{0:h})``; the first term ``F({s_0}) - F(empty)`` is included so that the
gains telescope to ``F(tau)``. :func:`greedy_trajectory` picks the action of largest marginal gain
at every step (ties: the smallest action) -- on a ``coverage-bandit`` (any state reachable in one
step) it is the classical greedy of Nemhauser, Wolsey & Fisher (1978), at least
``(1 - (1 - 1/k)^k) OPT >= (1 - 1/e) OPT`` for k = H - 1 picks.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from functools import cache

import numpy as np

MAX_SEQUENCES = 2_000_000


def check_enumerable(problem, who: str) -> int:
    """The number A^(H-1) of action sequences, or a one-line error when it exceeds
    :data:`MAX_SEQUENCES`."""
    n = problem.A ** (problem.H - 1)
    if n > MAX_SEQUENCES:
        raise ValueError(
            f"{who}: {problem.name} has A^(H-1) = {problem.A}^{problem.H - 1} = {n} action "
            f"sequences, more than the {MAX_SEQUENCES} enumerated exactly; give a smaller H or A"
        )
    return n


def marginal_gains(problem, states: Sequence[int]) -> np.ndarray:
    """(len(states),) F(tau_{0:h}) - F(tau_{0:h-1}) for h = 0..len - 1 (F(empty) = 0)."""
    values = [0.0] + [problem.value(states[: h + 1]) for h in range(len(states))]
    return np.diff(np.asarray(values))


def greedy_trajectory(problem) -> tuple[list[int], float]:
    """The marginal-gain greedy: from s_0, H - 1 times the action whose next state adds the most
    to F of the states visited so far (ties: the smallest action). Returns (states, F(tau))."""
    states = [int(problem.s0)]
    for _ in range(problem.H - 1):
        base = problem.value(states)
        gains = [problem.value([*states, int(s)]) - base for s in problem.next_state[states[-1]]]
        states.append(int(problem.next_state[states[-1], int(np.argmax(gains))]))
    return states, problem.value(states)


def optimum_by_enumeration(problem) -> tuple[float, list[int]]:
    """max over the A^(H-1) action sequences of F(tau), and a maximising trajectory."""
    check_enumerable(problem, "optimum_by_enumeration")
    best, best_states = -np.inf, []
    for actions in itertools.product(range(problem.A), repeat=problem.H - 1):
        states = problem.rollout(actions)
        v = problem.value(states)
        if v > best:
            best, best_states = v, states
    return float(best), best_states


def optimum_by_coverage_dp(problem) -> float:
    """OPT of a coverage utility by the DP V(k, s, C) = max_a [w(cov(s') \\ C) + V(k-1, s',
    C | cov(s'))], V(0, ., .) = 0, over covered-target bitmasks C (no trajectory enumerated)."""
    from theorylab.mdps.submodular import CoverageUtility

    if not isinstance(problem.utility, CoverageUtility):
        raise ValueError(
            f"optimum_by_coverage_dp needs a coverage utility; {problem.name} has none"
        )
    cover = np.asarray(problem.utility.cover)
    w = np.asarray(problem.utility.weights, dtype=np.float64)
    masks = [sum(1 << j for j in np.flatnonzero(cover[s])) for s in range(problem.S)]
    weight_of = {}

    def weight(mask: int) -> float:
        if mask not in weight_of:
            weight_of[mask] = float(sum(w[j] for j in range(w.size) if mask >> j & 1))
        return weight_of[mask]

    nxt = np.asarray(problem.next_state)

    @cache
    def V(k: int, s: int, covered: int) -> float:
        if k == 0:
            return 0.0
        best = -np.inf
        for a in range(problem.A):
            s2 = int(nxt[s, a])
            new = masks[s2] & ~covered
            best = max(best, weight(new) + V(k - 1, s2, covered | masks[s2]))
        return best

    s0 = int(problem.s0)
    return weight(masks[s0]) + V(problem.H - 1, s0, masks[s0])


def greedy_constant(k: int) -> float:
    """1 - (1 - 1/k)^k, the greedy's guarantee with k picks (Nemhauser, Wolsey & Fisher 1978);
    it decreases to 1 - 1/e."""
    return 1.0 - (1.0 - 1.0 / k) ** k
