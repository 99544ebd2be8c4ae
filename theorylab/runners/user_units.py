"""A run's numbers in the user's reward units, for a model whose rewards were mapped to [0, 1].

A model built from rewards on another scale (``TabularMDP.from_arrays(..., reward_range=...)``,
a gymnasium env's ``P``) holds ``r' = (r - offset) / scale`` in [0, 1] and records the map as
``mdp.reward_map`` (:mod:`theorylab.mdps.reward_map`). Every algorithm, exact regret and bound
is computed on that [0, 1] model (the theorems are stated for rewards in [0, 1]);
:func:`to_user_units` then maps what the result reports back, exactly:

* a difference of values (regret, sub-optimality) times ``scale``;
* a value ``V_1(mu0)`` (the optimum, a policy's value, an agent's estimate) by
  ``scale * V + H * offset`` (finite horizon) or ``scale * V + offset / (1 - gamma)``;
* a realised return over H steps by ``scale * G + H * offset``.

``config["reward_map"]`` records the map, that the numbers are in the user's units, and the bound
convention (a bound card's regret bound holds for the mapped problem; times ``scale`` it bounds
the user's regret: :func:`theorylab.validations.reference.regret_reference` draws it so).
Result kinds other than regret and sub-optimality are left on the mapped problem and
``config["reward_map"]["units"]`` says so.
"""

from __future__ import annotations

from typing import Any

import numpy as np

BOUND_CONVENTION = (
    "bound cards are stated for rewards in [0, 1]: they are evaluated on the mapped problem, "
    "and times scale they bound the regret in your units"
)


def _value_map(rmap, horizon, gamma):
    def user_value(V):
        return rmap.user_value(V, horizon=horizon, gamma=gamma)

    return user_value


def to_user_units(result, rmap) -> Any:
    """``result`` (a RegretResult or SuboptimalityResult computed on the mapped model) with
    its numbers in the user's units (in place; returned). ``rmap``: the model's RewardMap."""
    cfg = result.config
    record: dict[str, Any] = {
        "offset": rmap.offset,
        "scale": rmap.scale,
        "map": rmap.describe(),
        "bounds": BOUND_CONVENTION,
    }
    kind = getattr(result, "result_kind", "")
    H, gamma = cfg.get("H"), cfg.get("gamma")
    if kind == "regret" and cfg.get("objective") == "expected return" and H is not None:
        user_value = _value_map(rmap, H, None)
        result.regret = rmap.user_gap(result.regret)
        result.returns = rmap.scale * np.asarray(result.returns, dtype=float) + H * rmap.offset
        result.value_estimates = user_value(result.value_estimates)
        result.optimal_value = float(user_value(result.optimal_value))
        record["units"] = "user"
    elif kind == "suboptimality" and (H is not None or gamma is not None):
        user_value = _value_map(rmap, H, gamma if H is None else None)
        result.suboptimality = rmap.user_gap(result.suboptimality)
        result.policy_value = user_value(result.policy_value)
        result.value_estimate = user_value(result.value_estimate)
        result.optimal_value = float(user_value(result.optimal_value))
        record["units"] = "user"
    else:
        record["units"] = "mapped [0, 1] rewards (this result kind is not mapped back)"
    cfg["reward_map"] = record
    return result
