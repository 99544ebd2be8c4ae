"""Tests of OGSRL (algorithms/offline/ogsrl.py; seed-catalogue-002-004.md#C7): the support- and
cost-constrained occupancy LP on the empirical model.

Oracles: a one-state CMDP solved by hand (the LP is then a fractional knapsack over the supported
actions); enumeration of deterministic policies and their two-policy mixtures with exact linear
solves (the claim's brute force, an LP-free answer); the registered mutations failing the claim.
"""

from __future__ import annotations

import numpy as np
import pytest

import theorylab as tl
from theorylab.algorithms.dual.cmdp import InfeasibleCMDPError, solve_cmdp_lp
from theorylab.algorithms.dual.inputs import DualInputError
from theorylab.algorithms.offline.dataset import make_dataset, population_dataset
from theorylab.algorithms.offline.ogsrl import ogsrl
from theorylab.mdps import TabularMDP

GAMMA = 0.9


def one_state():
    """One state, three self-loop actions: r = (0.2, 1.0, 0.8), c = (0, 0.2, 0.5)."""
    P = np.ones((1, 3, 1))
    mdp = TabularMDP(P, np.array([[0.2, 1.0, 0.8]]), np.array([1.0]), gamma=GAMMA)
    return mdp, np.array([[0.0, 0.2, 0.5]])


def test_one_state_closed_form():
    # Data only on actions 0 and 2. The budget kappa = 2.5 on V_c = c_pi / (1 - gamma) allows
    # c_pi <= 0.25: p2 = 0.5 (knapsack: action 2 gains 0.6 over action 0 at cost 0.5), so
    # V = (0.5 * 0.2 + 0.5 * 0.8) / (1 - 0.9) = 5.0. The unguarded optimum plays the unseen
    # action 1 (r = 1 at cost 0.2 <= 0.25): V = 10.
    mdp, cost = one_state()
    ds = population_dataset(mdp, behaviour=np.array([[0.5, 0.0, 0.5]]))
    res = ogsrl(ds, costs=cost, kappa=2.5)
    np.testing.assert_allclose(res.policy[0], [[0.5, 0.0, 0.5]], atol=1e-9)
    assert res.value_estimate[0] == pytest.approx(5.0, abs=1e-9)
    assert res.info["cost_estimate"][0][0] == pytest.approx(2.5, abs=1e-9)
    assert solve_cmdp_lp(mdp, cost, [2.5]).value == pytest.approx(10.0, abs=1e-9)
    # no budget: the best supported action alone, 0.8 / 0.1
    assert ogsrl(ds).value_estimate[0] == pytest.approx(8.0, abs=1e-9)
    # an optimistic model of the unseen action changes nothing
    np.testing.assert_array_equal(ogsrl(ds, costs=cost, kappa=2.5, fill_reward=1.0).policy,
                                  res.policy)  # fmt: skip


@pytest.mark.parametrize("i", range(3))
def test_equals_brute_force_on_sampled_data(i):
    from theorylab.algorithms.dual.empirical_model import empirical_models
    from theorylab.validations.claims.offline import best_mixture, deterministic_values

    rng = np.random.default_rng(i)
    mdp = tl.make(f"random:S=5,A=3,gamma=0.9,seed={i}").with_objective(gamma=0.9, horizon=None)
    support = rng.random((5, 3)) < 0.6
    support[np.arange(5), rng.integers(3, size=5)] = True
    beh = support / support.sum(axis=1, keepdims=True)
    ds = make_dataset(
        mdp, 1500, data_distribution=population_dataset(mdp, behaviour=beh).data_distribution,
        seeds=2, seed=i,
    )  # fmt: skip
    cost = rng.random((5, 3))
    for b, (emp, d_hat) in enumerate(empirical_models(ds, "test")):
        v, c = deterministic_values(emp, d_hat > 0, cost)
        kappa = 0.5 * (c.min() + c[v >= v.max() - 1e-12].min())
        res = ogsrl(ds, costs=cost, kappa=kappa)
        assert res.value_estimate[b] == pytest.approx(best_mixture(v, c, kappa), abs=1e-8)
        seen = d_hat > 0
        assert res.policy[b][seen.any(axis=1)][~seen[seen.any(axis=1)]].sum() == 0.0


def test_input_errors():
    mdp, cost = one_state()
    ds = population_dataset(mdp, behaviour=np.array([[0.5, 0.0, 0.5]]))
    with pytest.raises(DualInputError, match="fill_reward must be in"):
        ogsrl(ds, fill_reward=2.0)
    with pytest.raises(DualInputError, match="kappa must be a number"):
        ogsrl(ds, costs=cost, kappa="x")
    with pytest.raises(DualInputError, match=r"costs must have shape \(m, 1, 3\)"):
        ogsrl(ds, costs=np.zeros((2, 2)), kappa=1.0)
    with pytest.raises(InfeasibleCMDPError, match="least achievable V_c"):
        ogsrl(ds, costs=cost + 0.1, kappa=0.5)  # least supported cost: 0.1 / 0.1 = 1 > 0.5
    finite = tl.make("random:S=3,A=2,H=3,seed=0")
    with pytest.raises(DualInputError, match="needs discounted data"):
        ogsrl(make_dataset(finite, 50, coverage=0.5))


def test_no_supported_action_is_named():
    # two states; the data only covers state 0, whose actions lead to state 1 (no data there)
    P = np.zeros((2, 2, 2))
    P[:, :, 1] = 1.0
    mdp = TabularMDP(P, np.ones((2, 2)), np.array([1.0, 0.0]), gamma=GAMMA)
    ds = make_dataset(mdp, 100, data_distribution=np.array([[0.5, 0.5], [0.0, 0.0]]))
    with pytest.raises(InfeasibleCMDPError, match=r"states without one: \[1\]"):
        ogsrl(ds)


def test_runs_through_tl_run():
    cost = np.random.default_rng(0).random((6, 3))
    spec = "random:S=6,A=3,gamma=0.9,seed=0"
    res = tl.run("ogsrl", spec, dataset_size=2000, seeds=2, coverage=0.5, costs=cost, kappa=4.0)
    assert res.suboptimality.shape == (2, 1)
    assert np.all(res.suboptimality > 0)  # the budget binds: below the unconstrained optimum


def test_claim_passes_and_mutations_fail_it():
    import theorylab.validations.mutations  # noqa: F401
    from theorylab.validations.controls import get_control
    from theorylab.validations.registry import VALIDATIONS

    claim = VALIDATIONS.get("ogsrl-support-restricted-optimum")
    assert claim.run("quick").passed
    failed = {}
    for name in ("ogsrl-support-dropped", "ogsrl-budget-dropped"):
        with get_control(name).applied(claim):
            rep = claim.run("quick")
        failed[name] = {c.name for c in rep.checks if c.status == "FAIL"}
    assert "stays on the data's support" in failed["ogsrl-support-dropped"]
    assert "cost <= kappa" in failed["ogsrl-budget-dropped"]
