"""When a check can fail: vacuous bounds and estimates, and the words for them.

A high-probability regret bound ``Regret(K) <= f(K)`` can only be *failed* by a run if ``f(K)`` is
below the largest regret any learner could have after K episodes, ``K * Delta_max`` (the
*trivial bound*; ``Delta_max`` and the K from which ``f`` drops below it come from
:mod:`theorylab.validations.reference`). Where ``f(K) >= K * Delta_max`` the check "regret below
the bound" holds for every agent, a frozen one included: it is **vacuous**, and a claim reports it
as VACUOUS, never PASS (docs/validations.md, "Three verdicts"). Offline, the sub-optimality range
``Delta_max`` plays the trivial bound's part.

For an optimism check the analogue is an estimate that sits at the cap of the value range (H for
rewards in [0, 1]) on every episode: "estimate >= V*" then holds for any agent that reports the
cap, and the check is vacuous too (:func:`estimate_at_cap`).
"""

from __future__ import annotations

import numpy as np

from theorylab.validations.reference import K_SEARCH_LIMIT, max_regret_per_episode


def max_episode_regret(mdp) -> float:
    """``Delta_max = V*_1(mu0) - min_pi V^pi_1(mu0)`` of ``mdp`` (risk-neutral, exact)."""
    from theorylab.algorithms.planning import backward_induction

    return max_regret_per_episode(mdp, backward_induction(mdp).value)


def max_episode_regret_for_objective(mdp, optimal_value: float) -> float:
    """Upper bound on one episode's regret for an objective that is a risk measure of the return
    (CVaR, iterated CVaR, worst path), whose value lies in ``[H r_min, H r_max]``:
    ``optimal_value - H r_min`` (the risk-neutral ``min_pi`` recursion does not apply)."""
    r_min = float(np.asarray(mdp.R, dtype=float).min())
    return float(optimal_value - mdp.horizon * r_min)


def describe_informative(variable: str, at: int, informative: int | None) -> str:
    """``"informative from K >= 12,345"`` / ``"never informative up to K = 1e15"``."""
    if informative is None:
        return f"never informative up to {variable} = {K_SEARCH_LIMIT:.0e}"
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
