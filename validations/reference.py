"""What a regret curve is read against: the null agent, the trivial bound and the theorem.

Three exact reference points for an online run on a finite-horizon MDP (risk-neutral objective):

* the **null agent**: the uniformly random policy, ``pi(a | s) = 1/A`` at every stage. Its
  per-episode regret ``V*_1(mu0) - V^unif_1(mu0)`` is computed exactly by the backward
  recursion ``V_h(s) = mean_a [r_h(s, a) + (P_h V_{h+1})(s, a)]``; an agent whose curve lies on
  or above ``k`` times it has learned nothing yet (it is in its burn-in).
* the **largest per-episode regret** ``V*_1(mu0) - min_pi V^pi_1(mu0)`` (the recursion with
  ``min_a``): ``K`` times it is the *trivial bound* no algorithm can exceed.
* the run's **theorem**, evaluated as printed at every K, and the K **from which it is
  informative**: the smallest K with ``bound(K) < K x (largest per-episode regret)``. Below that
  K the theorem says nothing a trivial bound does not (it is *vacuous*). The K is found by a
  geometric search (factor 2) up to ``K_SEARCH_LIMIT`` and bisection between the last two
  points, assuming -- as for every regret bound of the form ``a sqrt(K) + b`` or
  ``a K^(2/3) + b`` -- that once informative the bound stays informative.

Used by ``theorylab run --plot``, ``theorylab demo`` and the gallery; the plots take the numbers
from here and draw them (``theorylab.plotting.plot_regret``'s ``references`` and
``informative_from``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

K_SEARCH_LIMIT = 10**15


def algorithm_bound(algorithm: str) -> str | None:
    """The registry name of the main theorem an algorithm carries (the first of its
    registration's ``bounds``), or None."""
    from theorylab.algorithms.registry import get_algorithm

    try:
        entry = get_algorithm(algorithm)
    except Exception:  # an agent class run by itself, not a registered name
        return None
    return entry.bounds[0] if entry.bounds else None


def bound_inputs(bound, values: dict[str, Any]) -> dict[str, Any]:
    """The subset of ``values`` the bound's expression needs (by variable name)."""
    names = {str(v) for v in bound.variables}
    missing = names - set(values)
    if missing:
        raise ValueError(f"bound {bound.name!r} needs {sorted(missing)} which the run lacks")
    return {k: v for k, v in values.items() if k in names}


def _extreme_values(mdp, how: str) -> float:
    """``V_1(mu0)`` of the uniform policy (``how="mean"``) or the worst policy (``"min"``), in
    the user's reward units when the model's rewards were mapped to [0, 1] (``mdp.reward_map``:
    a run on such a model reports its optimal value in those units: theorylab.runners.user_units).
    """
    if mdp.horizon is None:
        raise ValueError(f"{mdp!r} has no finite horizon: the null agent's regret needs one")
    V = np.zeros(mdp.S)  # V_{H+1} = 0
    for h in reversed(range(mdp.horizon)):
        Q = mdp.reward(h) + mdp.expected_next(V, h)  # (S, A)
        V = Q.mean(axis=1) if how == "mean" else Q.min(axis=1)
    value = float(np.asarray(mdp.mu0) @ V)
    rmap = getattr(mdp, "reward_map", None)
    return value if rmap is None or rmap.identity else float(mdp.user_value(value))


MIN_WINDOW = 10
"""The shortest window (episodes) the burn-in measurements average over."""


def window_means(per_episode: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Mean per-episode regret over a window that grows with the episode: the window starting at
    episode k (1-based) covers ``w_k = max(MIN_WINDOW, k // 10)`` episodes, a constant width
    (about log10(1.1)) on a log-K axis. A window of a fixed fraction of the run (K/50, before
    issue 13's fix) is 8e5 episodes on a 4e7 run, longer than the burn-in it measures.

    per_episode: ``(K,)``. Returns ``(starts (n,), means (n,))`` for the windows that fit in the
    run (1-based starting episodes, increasing); a run shorter than ``MIN_WINDOW`` has one
    window, the whole run. O(K) from running sums.
    """
    x = np.asarray(per_episode, dtype=float)
    K = x.shape[0]
    c = np.concatenate([[0.0], np.cumsum(x)])
    start = np.arange(K, dtype=np.int64)  # 0-based
    width = np.maximum(MIN_WINDOW, (start + 1) // 10)
    width = np.minimum(width, K)
    fits = start + width <= K
    start, width = start[fits], width[fits]
    return start + 1, (c[start + width] - c[start]) / width


def burn_in_end(regret: np.ndarray, null_per_episode: float) -> int | None:
    """The episode from which a run has left its burn-in, or None if it has not by the end.

    regret: ``(B, K)`` exact per-episode regret. The burn-in is over at the first episode k
    from which the mean over seeds of the per-episode regret, averaged over the window
    :func:`window_means` starts at each later episode (``max(10, k // 10)`` episodes), stays
    below half the null agent's per-episode regret until the end of the run.
    """
    per_episode = np.asarray(regret, dtype=float).mean(axis=0)  # (K,)
    starts, window = window_means(per_episode)
    below = window < 0.5 * null_per_episode
    if null_per_episode <= 0 or not below[-1]:
        return None
    above = np.flatnonzero(~below)
    return int(starts[0] if above.size == 0 else starts[above[-1] + 1])


def first_below(regret: np.ndarray, null_per_episode: float) -> int | None:
    """The first episode whose :func:`window_means` window of the seed-mean per-episode regret
    ``regret (B, K)`` is below the null agent's per-episode regret, or None."""
    starts, window = window_means(np.asarray(regret, dtype=float).mean(axis=0))
    # below by more than round-off: a window of a constant at the null's (a null agent's closed
    # form) differs from it in its last bits through the running sums
    below = np.flatnonzero(window < null_per_episode * (1.0 - 1e-9))
    return int(starts[below[0]]) if below.size else None


def null_regret_per_episode(mdp, optimal_value: float) -> float:
    """Exact per-episode regret of the uniformly random policy."""
    return float(optimal_value - _extreme_values(mdp, "mean"))


def max_regret_per_episode(mdp, optimal_value: float) -> float:
    """Exact largest per-episode regret of any policy (``K`` times it: the trivial bound)."""
    return float(optimal_value - _extreme_values(mdp, "min"))


def informative_from(
    bound_at: Callable[[np.ndarray], np.ndarray], max_per_episode: float
) -> int | None:
    """The smallest K with ``bound_at(K) < K * max_per_episode``; None when no K up to
    ``K_SEARCH_LIMIT`` qualifies (or the trivial bound is 0: nothing to learn)."""
    if max_per_episode <= 0:
        return None

    def informative(k: int) -> bool:
        return bool(float(np.asarray(bound_at(np.array([float(k)])))[0]) < k * max_per_episode)

    if informative(1):
        return 1
    lo, hi = 1, 2
    while not informative(hi):
        lo, hi = hi, hi * 2
        if hi > K_SEARCH_LIMIT:
            return None
    while hi - lo > 1:  # informative(hi) and not informative(lo)
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if informative(mid) else (mid, hi)
    return hi


@dataclass
class RegretReference:
    """The reference lines of one run (see the module docstring).

    null_per_episode / max_per_episode: exact per-episode regrets; bound_name / bound_label:
    the theorem drawn (None when the algorithm carries none that can be evaluated; ``notes`` say
    why); bound_curve: ``(K,)`` the bound as printed at k = 1..K; informative_k: the K from which
    it is informative (None: not up to ``K_SEARCH_LIMIT``).
    """

    episodes: int
    null_per_episode: float
    max_per_episode: float
    bound_name: str | None = None
    bound_label: str | None = None
    bound_curve: np.ndarray | None = None
    informative_k: int | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def null_curve(self) -> np.ndarray:
        """``(K,)`` the null agent's exact cumulative regret."""
        return self.null_per_episode * np.arange(1, self.episodes + 1)

    @property
    def trivial_curve(self) -> np.ndarray:
        """``(K,)`` the trivial bound ``k x`` (largest per-episode regret)."""
        return self.max_per_episode * np.arange(1, self.episodes + 1)

    def bound_status(self) -> str:
        """One sentence: is the theorem informative over the run, from which K."""
        if self.bound_name is None:
            return "no theorem drawn"
        if self.informative_k is None:
            return (
                f"{self.bound_name} is vacuous at every K up to {K_SEARCH_LIMIT:.0e} "
                "(above K x the largest per-episode regret)"
            )
        if self.informative_k <= self.episodes:
            return f"{self.bound_name} is informative from K = {self.informative_k}"
        return (
            f"{self.bound_name} is vacuous over the whole run (K <= {self.episodes}); "
            f"it becomes informative from K = {self.informative_k:.3g}"
        )


def regret_reference(result, mdp=None, delta: float = 0.1) -> RegretReference:
    """The reference lines of an online ``result`` (a RegretResult) on ``mdp`` (built from the
    result's MDP spec when None)."""
    from theorylab.bounds import get_bound

    cfg = result.config
    if mdp is None:
        from theorylab.mdps import make

        mdp = make(cfg["mdp"])
    objective = cfg.get("objective", "expected return")
    if objective != "expected return":
        raise ValueError(
            f"the null agent's regret is computed for the expected return, not {objective}"
        )
    v_star = float(result.optimal_value)
    ref = RegretReference(
        episodes=result.episodes,
        null_per_episode=null_regret_per_episode(mdp, v_star),
        max_per_episode=max_regret_per_episode(mdp, v_star),
    )
    name = algorithm_bound(cfg.get("algorithm", ""))
    if not name:
        ref.notes.append("(no bound drawn: the algorithm carries no regret theorem)")
        return ref
    bound = get_bound(name)
    fixed = {"S": cfg["S"], "A": cfg["A"], "H": cfg["H"], "delta": delta}
    # A model whose rewards were mapped to [0, 1]: the theorem holds for the mapped problem's
    # regret; times scale it bounds the regret in the user's units, which the run reports.
    rmap = getattr(mdp, "reward_map", None)
    scale = 1.0 if rmap is None or rmap.identity else float(rmap.scale)
    if scale != 1.0:
        ref.notes.append(
            f"(rewards mapped to [0, 1] by {rmap.describe()}: the bound as printed for [0, 1] "
            f"rewards, evaluated on the mapped problem, times scale = {scale:.6g})"
        )

    def bound_at(K: np.ndarray) -> np.ndarray:
        values = bound_inputs(bound, {**fixed, "K": np.asarray(K, dtype=float)})
        curve = scale * np.asarray(bound.evaluate(**values), dtype=float)
        return np.broadcast_to(curve, np.shape(K))

    try:
        curve = bound_at(np.arange(1, result.episodes + 1, dtype=float))
    except ValueError as exc:  # an unspecified absolute constant, or a variable the run lacks
        ref.notes.append(f"(bound {name} not drawn: {exc})")
        return ref
    ref.bound_name = name
    ref.bound_label = f"{name} as printed"
    ref.bound_curve = np.array(curve)
    ref.informative_k = informative_from(bound_at, ref.max_per_episode)
    return ref


NULL_LABEL = "null agent (uniformly random policy), exact"
TRIVIAL_LABEL = "trivial bound: K x largest per-episode regret"


def plot_keywords(ref: RegretReference, *, loglog: bool = False) -> dict:
    """Keywords for :func:`theorylab.plotting.plot_regret` that draw ``ref``.

    Linear axes: the null agent, and the theorem as printed only when it is informative
    somewhere in the run (a vacuous bound as printed would flatten every curve; the legend then
    says so and from which K it becomes informative). Log-log axes: the null agent, the trivial
    bound and the theorem as printed, its informative K marked or stated.
    """
    references = {NULL_LABEL: ref.null_curve}
    if loglog:
        references[TRIVIAL_LABEL] = ref.trivial_curve
    out: dict = {"references": references, "notes": list(ref.notes), "loglog": loglog}
    if ref.bound_name is None:
        return out
    in_range = ref.informative_k is not None and ref.informative_k <= ref.episodes
    if loglog or in_range:
        out["bound_curves"] = {ref.bound_label: ref.bound_curve}
        out["informative_from"] = {ref.bound_label: ref.informative_k}
    else:
        where = (
            f"informative from K = {ref.informative_k:.3g}"
            if ref.informative_k is not None
            else f"not informative up to K = {K_SEARCH_LIMIT:.0e}"
        )
        out["notes"].append(
            f"{ref.bound_name} not drawn: vacuous for K <= {ref.episodes} "
            f"({ref.bound_curve[-1]:.3g} at K = {ref.episodes}; {where})"
        )
    return out
