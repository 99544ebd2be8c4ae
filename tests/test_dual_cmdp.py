"""Tests of constrained MDPs (algorithms/dual/cmdp.py; Altman 1999 ch. 3; ReLOAD, Moskovitz et al.
ICML 2023; OGDA, Wei et al. ICLR 2021).

Oracles: Lagrangian strong duality V*_CMDP = max_pi V^pi_{r - lambda* c}(mu) + lambda* b with the
inner max by value iteration (independent of the LP); the multiplier as the derivative of the
optimal value in the threshold (finite difference); exact policy evaluation of the LP's policy;
cvxpy for the Euclidean projection onto the occupancy polytope.
"""

from __future__ import annotations

import cvxpy as cp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from theorylab.algorithms.dual.cmdp import (
    InfeasibleCMDPError,
    lagrangian_gda,
    project_onto_occupancies,
    solve_cmdp_lp,
)
from theorylab.algorithms.dual.inputs import DualInputError
from theorylab.algorithms.planning.lp import discounted_lp, discounted_lp_matrix, flow_residual
from theorylab.mdps import TabularMDP


def instance(seed: int, S: int = 4, A: int = 2, gamma: float = 0.8, tight: float = 0.8):
    """A random CMDP whose cost bound is ``tight`` times the cost of the unconstrained optimum
    (binding when tight < 1) and above the least achievable cost."""
    rng = np.random.default_rng(seed)
    mdp = TabularMDP(
        rng.dirichlet(np.ones(S), size=(S, A)),
        rng.uniform(size=(S, A)),
        np.ones(S) / S,
        gamma=gamma,
    )
    c = rng.uniform(size=(1, S, A))
    lp = discounted_lp(mdp)
    c_opt = float(np.sum(c[0] * lp.occupancy)) / (1 - gamma)
    M = discounted_lp_matrix(mdp, gamma)
    from theorylab.algorithms.dual.cmdp import least_cost

    c_min = least_cost(mdp, M, c[0].ravel(), gamma, mdp.mu0)
    return mdp, c, [c_min + tight * (c_opt - c_min)]


def value_iteration(mdp, reward: np.ndarray, tol: float = 1e-13) -> np.ndarray:
    V = np.zeros(mdp.S)
    while True:
        V_new = (reward + mdp.gamma * mdp.expected_next(V)).max(axis=1)
        if np.max(np.abs(V_new - V)) <= tol * (1 - mdp.gamma):
            return V_new
        V = V_new


@settings(max_examples=20)
@given(seed=st.integers(0, 10_000), tight=st.sampled_from([0.2, 0.5, 0.9, 1.5]))
def test_cmdp_lp_strong_lagrangian_duality_and_multipliers(seed, tight):
    mdp, c, b = instance(seed, tight=tight)
    sol = solve_cmdp_lp(mdp, c, b)
    lam = sol.multipliers
    assert lam.min() >= -1e-9
    assert np.all(sol.cost_values <= np.array(b) + 1e-8)
    # complementary slackness
    assert abs(lam[0] * (sol.cost_values[0] - b[0])) <= 1e-8
    # strong duality: the optimal Lagrangian's unconstrained optimum plus lambda b
    V_lag = value_iteration(mdp, mdp.reward(0) - lam[0] * c[0])
    assert sol.value == pytest.approx(float(mdp.mu0 @ V_lag) + lam[0] * b[0], abs=1e-8)
    # the LP's policy attains the value (exact policy evaluation)
    from theorylab.algorithms.planning.lp import occupancy_measure

    d = occupancy_measure(mdp, sol.policy)
    assert float(np.sum(d * mdp.reward(0))) / (1 - mdp.gamma) == pytest.approx(sol.value, abs=1e-8)
    if tight >= 1:  # the unconstrained optimum is feasible
        assert sol.value == pytest.approx(discounted_lp(mdp).value, abs=1e-8)
        if sol.cost_values[0] < b[0] - 1e-6:  # slack (not the degenerate c_opt = c_min case)
            assert lam[0] <= 1e-9


def test_multiplier_is_the_derivative_in_the_threshold():
    mdp, c, b = instance(0)
    lam = solve_cmdp_lp(mdp, c, b).multipliers[0]
    h = 1e-5
    up = solve_cmdp_lp(mdp, c, [b[0] + h]).value
    down = solve_cmdp_lp(mdp, c, [b[0] - h]).value
    assert lam > 0.1
    assert (up - down) / (2 * h) == pytest.approx(lam, abs=1e-6)


def test_infeasible_cmdp_names_the_least_cost():
    mdp, c, b = instance(1)
    with pytest.raises(InfeasibleCMDPError, match=r"constraint i=0: the least achievable"):
        solve_cmdp_lp(mdp, c, [-1.0])


def test_cost_shape_is_checked():
    mdp, c, b = instance(1)
    with pytest.raises(DualInputError, match="costs must have shape"):
        solve_cmdp_lp(mdp, np.ones((1, 2, 2)), b)


@settings(max_examples=15)
@given(seed=st.integers(0, 10_000), scale=st.sampled_from([0.1, 1.0, 10.0]))
def test_projection_onto_occupancies_matches_cvxpy(seed, scale):
    mdp, _, _ = instance(seed)
    rng = np.random.default_rng(seed)
    z = rng.normal(size=mdp.S * mdp.A) * scale
    M = discounted_lp_matrix(mdp, mdp.gamma)
    rhs = (1 - mdp.gamma) * mdp.mu0
    d, _ = project_onto_occupancies(M, z, rhs)
    assert np.max(np.abs(flow_residual(mdp, d.reshape(mdp.S, mdp.A)))) <= 1e-10
    x = cp.Variable(z.size, nonneg=True)
    # CLARABEL at tight tolerances: at its defaults (relative gap 1e-8 on an objective ~ 900 at
    # scale 10) its point was 8.9e-5 from the projection (seed 3288), ours 1.3e-8 from this one
    cp.Problem(cp.Minimize(cp.sum_squares(x - z)), [M.T @ x == rhs]).solve(
        solver="CLARABEL", tol_gap_abs=1e-12, tol_gap_rel=1e-12, tol_feas=1e-12
    )
    assert np.sum((d - z) ** 2) <= np.sum((x.value - z) ** 2) + 1e-7
    np.testing.assert_allclose(d, x.value, atol=1e-5)


def test_ogda_last_iterate_converges_gda_only_on_average():
    """ReLOAD's phenomenon, exactly: GDA's last iterate keeps oscillating (tail error stays
    large) while its average converges; OGDA's last iterate converges (to solver precision)."""
    mdp, c, b = instance(0)
    gda = lagrangian_gda(mdp, c, b, steps=1500, eta=1.0)
    ogda = lagrangian_gda(mdp, c, b, steps=1500, eta=1.0, optimistic=True)
    assert gda.tail()["last_iterate"] >= 0.05
    assert gda.tail()["average_iterate"] <= 0.01
    assert ogda.tail()["last_iterate"] <= 1e-6
    np.testing.assert_allclose(ogda.lam[-1], gda.optimum.multipliers, atol=1e-6)


def test_lambda_box_must_contain_the_multipliers():
    mdp, c, b = instance(0)
    with pytest.raises(DualInputError, match="lambda_max"):
        lagrangian_gda(mdp, c, b, steps=10, lambda_max=0.1)


# ------------------------------------------------------------------ ReLOAD through tl.run (000#1)
def test_tl_run_reload_is_the_direct_ogda_run(tmp_path):
    """`reload` under kind constrained: every iterate's numbers are lagrangian_gda's, the LP
    optimum is the cvxpy LP's, the result round-trips and plots."""
    import theorylab as tl
    from theorylab.results import ConstrainedResult, load_result

    mdp, c, b = instance(0)
    res = tl.run("reload", mdp, iterations=300, cost=c[0], threshold=float(b[0]))
    direct = lagrangian_gda(mdp, c, b, steps=300, eta=1.0, optimistic=True)
    assert isinstance(res, ConstrainedResult) and res.axis == "iteration"
    np.testing.assert_array_equal(res.primal, direct.reward)
    np.testing.assert_array_equal(res.constraint, direct.cost[:, 0] - b[0])
    np.testing.assert_array_equal(res.multiplier, direct.lam[:, 0])
    assert res.optimum[0] == solve_cmdp_lp(mdp, c, b).value
    assert res.stationarity.max() <= 1e-10
    np.testing.assert_allclose(
        res.last_iterate_error(), np.maximum(direct.reward_gap, direct.violation)
    )
    back = load_result(res.save(tmp_path / "reload"))
    np.testing.assert_array_equal(back.average_primal, res.average_primal)
    res.plot(tmp_path / "reload.png")
    assert res.summary()["iterations"] == 300


def test_reload_default_cost_and_binding_threshold():
    """cost="random" draws from the run's seed; threshold="binding" puts b strictly between the
    least cost and the unconstrained optimum's, so the LP multiplier is positive."""
    import theorylab as tl

    spec = "random:S=4,A=2,gamma=0.8,seed=3"
    a = tl.run("reload", spec, iterations=20, seed=1)
    again = tl.run("reload", spec, iterations=20, seed=1)
    other = tl.run("reload", spec, iterations=20, seed=2)
    assert a.config["cost"] == again.config["cost"] != other.config["cost"]
    assert a.config["optimal_multiplier"] > 0


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({}, "needs a budget: iterations"),
        ({"iterations": 10, "epsilon": 0.1}, "epsilon= is the budget of KL-constrained"),
        ({"iterations": 0}, "iterations must be a positive integer"),
        ({"iterations": 10, "cost": "ones"}, "cost must be 'random' or an"),
        ({"iterations": 10, "cost": np.ones((3, 3))}, r"cost must be an \(4, 2\) array"),
        ({"iterations": 10, "threshold": "tight"}, "threshold must be a number or 'binding'"),
        ({"iterations": 10, "threshold": -5.0}, "no policy meets cost constraint"),
    ],
)
def test_reload_budget_errors(kwargs, message):
    import theorylab as tl

    with pytest.raises(ValueError, match=message):
        tl.run("reload", "random:S=4,A=2,gamma=0.8,seed=3", **kwargs)


def test_reps_refuses_the_cost_budget():
    import theorylab as tl

    with pytest.raises(ValueError, match="iterations= is the budget of cost-constrained"):
        tl.run("reps", "random:S=4,A=2,gamma=0.8,seed=3", epsilon=0.1, iterations=5)
    with pytest.raises(ValueError, match="needs a budget: epsilon"):
        tl.run("reps", "random:S=4,A=2,gamma=0.8,seed=3")


def test_cli_run_reload(capsys):
    from theorylab.cli import main

    assert main(["run", "reload", "random:S=4,A=2,gamma=0.8", "--iterations", "50"]) == 0
    assert "reload" in capsys.readouterr().out
