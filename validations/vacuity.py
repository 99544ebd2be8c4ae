"""When a bound says something: the trivial bound, vacuity, and the K from which a bound informs.

A high-probability regret bound ``Regret(K) <= f(K)`` can only be *failed* by a run if ``f(K)`` is
below the largest regret any learner could have after K episodes, ``K * Delta_max`` with
``Delta_max = V*_1(mu0) - min_pi V^pi_1(mu0)`` (the *trivial bound*). Where ``f(K) >= K *
Delta_max`` the check "regret below the bound" holds for every agent, a frozen one included: it is
**vacuous**, and a claim reports it as VACUOUS, never PASS (docs/validations.md, "Three
verdicts"). The same holds offline with the sub-optimality range ``Delta_max`` in place of
``K * Delta_max``.

:func:`informative_from` finds, from the bound itself (its own dependence on K, log factors
included), the smallest K (or N) at which it drops below the trivial bound, so a report can say
"the theorem says nothing at this scale; it becomes informative from K >= ...".

For an optimism check the analogue is an estimate that sits at the cap of the value range (H for
rewards in [0, 1]) on every episode: "estimate >= V*" then holds for any agent that reports the
cap, and the check is vacuous too (:func:`estimate_at_cap`).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

SEARCH_LIMIT = 10**15  # the largest K (or N) informative_from looks at


def max_episode_regret(mdp, objective: str | None = None) -> float:
    """``Delta_max``: the largest regret one episode can have on ``mdp``.

    Risk-neutral objective (default): ``V*_1(mu0) - min_pi V^pi_1(mu0)``, exact (the minimum is
    the optimum of the MDP with rewards ``r_max - r``: ``min V = H r_max - V*(r_max - r)``).
    Another objective (a risk measure of the return, which lies in ``[H r_min, H r_max]``): the
    risk-neutral expression is not valid, so the range ``V*_obj - H r_min`` is used, an upper
    bound on the largest regret (``objective_value`` must then be given through
    :func:`max_episode_regret_for_objective`).
    """
    from theorylab.algorithms.planning import backward_induction

    R = np.asarray(mdp.R, dtype=float)
    r_max = float(R.max())
    v_star = backward_induction(mdp).value
    flipped = mdp._replace(R=r_max - R)
    v_min = mdp.horizon * r_max - backward_induction(flipped).value
    return float(v_star - v_min)


def max_episode_regret_for_objective(mdp, optimal_value: float) -> float:
    """Upper bound on one episode's regret for an objective that is a risk measure of the return
    (CVaR, iterated CVaR, worst path): ``optimal_value - H r_min``."""
    r_min = float(np.asarray(mdp.R, dtype=float).min())
    return float(optimal_value - mdp.horizon * r_min)


def informative_from(
    bound_at: Callable[[np.ndarray], np.ndarray],
    trivial_per_unit: float,
    *,
    start: int = 1,
    limit: int = SEARCH_LIMIT,
) -> int | None:
    """The smallest integer ``x >= start`` with ``bound_at(x) < x * trivial_per_unit``, or None
    if there is none up to ``limit``.

    bound_at: the bound as a function of K (or N), vectorised over a float array ``(n,)``.
    trivial_per_unit: Delta_max for regret (the trivial bound is K Delta_max). For a quantity that
    does not grow with x (offline sub-optimality), pass ``trivial_per_unit`` = the range and wrap
    ``bound_at`` as ``x -> bound(x) * x`` (see :func:`informative_from_constant_range`).

    The bound's ratio to the trivial bound is not assumed monotone: a geometric grid (64 points
    per decade) finds the first grid point that is informative, and bisection on the integers
    between it and the grid point before gives the exact first x (exact when the ratio is
    monotone on that interval, which holds for every registered bound between two grid points).
    """
    if not trivial_per_unit > 0:
        return None
    grid = np.unique(np.round(np.geomspace(start, limit, 64 * 15 + 1)).astype(np.int64))
    values = np.asarray(bound_at(grid.astype(float)), dtype=float)
    values = np.broadcast_to(values, grid.shape)
    ok = values < grid * trivial_per_unit
    if not ok.any():
        return None
    i = int(np.argmax(ok))
    if i == 0:
        return int(grid[0])
    lo, hi = int(grid[i - 1]), int(grid[i])  # bound >= trivial at lo, < at hi
    while hi - lo > 1:
        mid = (lo + hi) // 2
        b = float(np.asarray(bound_at(np.array([float(mid)]))).reshape(-1)[0])
        if b < mid * trivial_per_unit:
            hi = mid
        else:
            lo = mid
    return hi


def informative_from_constant_range(
    bound_at: Callable[[np.ndarray], np.ndarray], value_range: float, **kw
) -> int | None:
    """The smallest N at which a sub-optimality bound ``bound_at(N)`` drops below the fixed range
    ``value_range`` (offline: ``V*_1 - min_pi V^pi_1``), or None up to the search limit."""
    return informative_from(lambda n: np.asarray(bound_at(n), dtype=float) / n, value_range, **kw)


def describe_informative(variable: str, at: int, informative: int | None) -> str:
    """``"informative from K >= 12,345"`` / ``"never informative up to K = 1e15"``."""
    if informative is None:
        return f"never informative up to {variable} = {SEARCH_LIMIT:.0e}"
    if informative <= at:
        return f"informative from {variable} >= {informative:,}"
    return (
        f"the theorem says nothing at this scale; it becomes informative from "
        f"{variable} >= {informative:,}"
    )


def estimate_at_cap(estimates: np.ndarray, cap: float) -> bool:
    """True when every finite estimate equals the cap of the value range (within round-off)."""
    est = np.asarray(estimates, dtype=float)
    finite = est[np.isfinite(est)]
    return finite.size > 0 and bool(np.all(finite >= cap - 1e-9 * max(1.0, abs(cap))))
