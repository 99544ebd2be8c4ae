"""RHIP (seed row 000#55) against path enumeration, finite differences and reward recovery."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from theorylab.algorithms.inverse_rl.rhip import RouteGraph, fit_rhip, rhip_objective


def grid_dag(rows: int, cols: int, d: int, seed: int) -> RouteGraph:
    """A rows x cols grid, moves right / down (plus a diagonal), random features >= 0.1."""
    tails, heads = [], []
    for i, j in itertools.product(range(rows), range(cols)):
        u = i * cols + j
        for di, dj in ((0, 1), (1, 0), (1, 1)):
            if i + di < rows and j + dj < cols:
                tails.append(u)
                heads.append((i + di) * cols + j + dj)
    rng = np.random.default_rng(seed)
    phi = 0.1 + rng.random((len(tails), d))
    return RouteGraph(rows * cols, np.array(tails), np.array(heads), phi)


def all_routes(g: RouteGraph, s: int, dest: int) -> list[list[int]]:
    """Every edge path from s to dest, by depth-first enumeration."""
    if s == dest:
        return [[]]
    return [[e, *rest] for e in np.flatnonzero(g.tails == s)
            for rest in all_routes(g, int(g.heads[e]), dest)]  # fmt: skip


def enumerated(g: RouteGraph, theta, path, H):
    """J_H and its gradient by enumeration: P_H(tau) ~ exp(r(tau)) on the routes whose edges
    after the H-th are the best route (largest reward, ties to the lower edge index) from there."""
    r = g.phi @ theta
    origin, dest = int(g.tails[path[0]]), int(g.heads[path[-1]])
    routes = all_routes(g, origin, dest)

    def best(s):
        rs = all_routes(g, s, dest)
        vals = [sum(r[e] for e in p) for p in rs]
        top = max(vals)
        return min((p for p, v in zip(rs, vals) if v >= top - 1e-12), key=lambda p: p)

    keep = [p for p in routes if H is None or len(p) <= H or p[H:] == best(int(g.tails[p[H]]))]
    w = np.array([sum(r[e] for e in p) for p in keep])
    logz = np.log(np.exp(w - w.max()).sum()) + w.max()
    prob = np.exp(w - logz)
    feats = np.array([g.phi[p].sum(axis=0) for p in keep])
    return r[path].sum() - logz, g.phi[path].sum(axis=0) - prob @ feats


CASES = [(0, 0), (1, 1), (2, 2), (3, 3), (None, 4)]


@pytest.mark.parametrize("H,seed", CASES)
def test_matches_enumeration(H, seed):
    g = grid_dag(3, 4, 3, seed)
    rng = np.random.default_rng(seed + 10)
    theta = -(0.2 + rng.random(3))
    path = all_routes(g, 0, g.n - 1)[seed]
    J, grad = rhip_objective(g, theta, [np.array(path)], H)
    J_e, grad_e = enumerated(g, theta, path, H)
    assert abs(J - J_e) < 1e-10
    np.testing.assert_allclose(grad, grad_e, atol=1e-10)


def test_extremes_are_planner_and_maxent():
    """H = 0: r(tau) - max route reward (closed form by enumeration); H large = MaxEnt."""
    g = grid_dag(3, 3, 2, 5)
    theta = np.array([-0.7, -0.4])
    r = g.phi @ theta
    routes = all_routes(g, 0, g.n - 1)
    path = routes[1]
    vals = np.array([r[p].sum() for p in routes])
    J0, _ = rhip_objective(g, theta, [np.array(path)], 0)
    assert abs(J0 - (r[path].sum() - vals.max())) < 1e-12
    J_inf, _ = rhip_objective(g, theta, [np.array(path)], None)
    J_big, _ = rhip_objective(g, theta, [np.array(path)], 40)
    logz = np.log(np.exp(vals).sum())
    assert abs(J_inf - (r[path].sum() - logz)) < 1e-12 and abs(J_big - J_inf) < 1e-12


@pytest.mark.parametrize("H", [0, 1, 2, None])
def test_gradient_matches_finite_differences(H):
    g = grid_dag(3, 4, 3, 7)
    theta = np.array([-0.5, -0.9, -0.3])
    demos = [np.array(p) for p in all_routes(g, 0, g.n - 1)[2:5]]
    _, grad = rhip_objective(g, theta, demos, H)
    eps, fd = 1e-6, np.zeros(3)
    for i in range(3):
        e = np.eye(3)[i] * eps
        fd[i] = (rhip_objective(g, theta + e, demos, H)[0]
                 - rhip_objective(g, theta - e, demos, H)[0]) / (2 * eps)  # fmt: skip
    np.testing.assert_allclose(grad, fd, atol=1e-6)


@pytest.mark.parametrize("H", [2, None])
def test_recovers_routes(H):
    """Demonstrations are the best routes under theta*; the fitted reward's best routes match."""
    g = grid_dag(3, 4, 4, 11)
    theta_star = np.array([-1.5, -0.2, -0.8, -0.3])
    r = g.phi @ theta_star
    demos = []
    for o in (0, 1, 4, 5):
        routes = all_routes(g, o, g.n - 1)
        demos.append(np.array(routes[int(np.argmax([r[p].sum() for p in routes]))]))
    theta = fit_rhip(g, demos, H, -np.ones(4), steps=300, lr=0.5)
    r_hat = g.phi @ theta
    for p in demos:
        routes = all_routes(g, int(g.tails[p[0]]), g.n - 1)
        assert routes[int(np.argmax([r_hat[q].sum() for q in routes]))] == p.tolist()


def test_bad_input():
    g = grid_dag(2, 2, 2, 0)
    with pytest.raises(ValueError, match="edge reward"):
        rhip_objective(g, np.array([1.0, 1.0]), [np.array([0])], 1)
    with pytest.raises(ValueError, match="horizon H"):
        rhip_objective(g, -np.ones(2), [np.array([0])], -1)
    with pytest.raises(ValueError, match="connected edge path"):
        rhip_objective(g, -np.ones(2), [np.array([0, 0])], 1)
