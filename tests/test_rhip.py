"""RHIP (seed row 000#55) against route enumeration, finite differences and reward recovery.

The enumeration (``validations/claims/inverse_rl_rhip.py``: every route of a small DAG, depth
first) shares no code with ``algorithms/inverse_rl/rhip.py``; the H = 0 and MaxEnt closed forms
are written out here again."""

from __future__ import annotations

import numpy as np
import pytest

import theorylab as tl
from theorylab.algorithms.inverse_rl.rhip import (
    RouteGraph,
    fit_rhip,
    layered_graph,
    rhip_objective,
)
from theorylab.mdps import make
from theorylab.validations.claims.inverse_rl_rhip import (
    RHIPHorizonExtremes,
    all_routes,
    best_route,
    enumerated,
    grid_dag,
)


@pytest.mark.parametrize("H,seed", [(0, 0), (1, 1), (2, 2), (3, 3), (None, 4)])
def test_matches_enumeration(H, seed):
    g = grid_dag(3, 4, 3, seed)
    theta = -(0.2 + np.random.default_rng(seed + 10).random(3))
    path = all_routes(g, 0, g.n - 1)[seed]
    J, grad = rhip_objective(g, theta, [np.array(path)], H)
    J_e, grad_e = enumerated(g, theta, path, H)
    assert abs(J - J_e) < 1e-10
    np.testing.assert_allclose(grad, grad_e, atol=1e-10)


def test_extremes_are_planner_and_maxent():
    """H = 0: r(tau) - max_route r; H = None (and any H >= the longest route): r(tau) -
    log sum_routes exp r (MaxEnt IRL)."""
    g = grid_dag(3, 3, 2, 5)
    theta = np.array([-0.7, -0.4])
    r = g.phi @ theta
    routes = all_routes(g, 0, g.n - 1)
    path = np.array(routes[1])
    vals = np.array([r[p].sum() for p in routes])
    J0, grad0 = rhip_objective(g, theta, [path], 0)
    assert abs(J0 - (r[path].sum() - vals.max())) < 1e-12
    best = routes[int(np.argmax(vals))]
    np.testing.assert_allclose(grad0, g.phi[path].sum(0) - g.phi[best].sum(0), atol=1e-12)
    J_inf, _ = rhip_objective(g, theta, [path], None)
    J_big, _ = rhip_objective(g, theta, [path], 40)
    logz = np.log(np.exp(vals).sum())
    assert abs(J_inf - (r[path].sum() - logz)) < 1e-12 and abs(J_big - J_inf) < 1e-12


@pytest.mark.parametrize("H", [0, 1, 2, None])
def test_gradient_matches_finite_differences(H):
    g = grid_dag(3, 4, 3, 7)
    theta = np.array([-0.5, -0.9, -0.3])
    demos = [np.array(p) for p in all_routes(g, 0, g.n - 1)[2:5]]
    _, grad = rhip_objective(g, theta, demos, H)
    fd = np.zeros(3)
    for i in range(3):
        e = np.eye(3)[i] * 1e-6
        fd[i] = (rhip_objective(g, theta + e, demos, H)[0]
                 - rhip_objective(g, theta - e, demos, H)[0]) / 2e-6  # fmt: skip
    np.testing.assert_allclose(grad, fd, atol=1e-6)


@pytest.mark.parametrize("H", [2, None])
def test_recovers_routes(H):
    """Demonstrations are the best routes under theta*; the fitted reward's best routes match,
    where theta = -1's do not."""
    g = grid_dag(3, 4, 4, 11)
    r_star = g.phi @ np.array([-1.5, -0.2, -0.8, -0.3])
    origins = (0, 1, 4, 5)
    demos = [best_route(g, r_star, o, g.n - 1) for o in origins]
    start = [best_route(g, g.phi @ -np.ones(4), o, g.n - 1) for o in origins]
    assert start != demos
    theta = fit_rhip(g, [np.array(p) for p in demos], H, -np.ones(4), steps=300, lr=0.5)
    assert [best_route(g, g.phi @ theta, o, g.n - 1) for o in origins] == demos


def test_claim_passes_and_control_fails():
    from theorylab.validations.rhip_mutations import rhip_soft_tail

    claim = RHIPHorizonExtremes()
    assert claim.run("quick").passed
    with rhip_soft_tail():
        rep = claim.run("quick")
    failed = {c.name for c in rep.checks if c.status == "FAIL"}
    assert "H = 0 (deterministic planner) equals route enumeration" in failed


def test_irl_kind_run_matches_expert():
    res = tl.run("rhip", "combination-lock:H=5,A=2,code_seed=3", rounds=3, seeds=2, horizon=1)
    assert res.round_value_gap.shape == (2, 3)
    assert np.all(np.abs(res.round_value_gap[:, -1]) < 1e-12)


def test_bad_input():
    g = grid_dag(2, 2, 2, 0)
    with pytest.raises(ValueError, match="edge reward"):
        rhip_objective(g, np.array([1.0, 1.0]), [np.array([0])], 1)
    with pytest.raises(ValueError, match="horizon H"):
        rhip_objective(g, -np.ones(2), [np.array([0])], -1)
    with pytest.raises(ValueError, match="connected edge path"):
        rhip_objective(g, -np.ones(2), [np.array([0, 0])], 1)
    with pytest.raises(ValueError, match="acyclic"):
        cyc = RouteGraph(2, np.array([0, 1]), np.array([1, 0]), np.ones((2, 1)))
        rhip_objective(cyc, -np.ones(1), [np.array([0])], None)
    with pytest.raises(ValueError, match="stochastic"):
        layered_graph(make("riverswim:H=4"))
