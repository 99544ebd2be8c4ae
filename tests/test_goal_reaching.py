"""QRL (Wang, Torralba, Isola & Zhang 2023; seed rows 000#65, 001#73): the exact LP against
Floyd-Warshall written here, the greedy policy by roll-outs, the stochastic case against a
linear solve, the relaxation, the mutations and the input errors."""

from __future__ import annotations

import numpy as np
import pytest

import theorylab as tl
from theorylab.algorithms.goal_reaching import qrl
from theorylab.algorithms.planning.goal_distances import goal_cost_to_go
from theorylab.mdps import make


def floyd_warshall(S: int, src: np.ndarray, dst: np.ndarray, c: float, cap: float) -> np.ndarray:
    """All-pairs shortest paths over the edges src -> dst of cost c, capped (written out)."""
    D = np.full((S, S), np.inf)
    for s, t in zip(src.tolist(), dst.tolist(), strict=True):
        D[s, t] = min(D[s, t], c)
    np.fill_diagonal(D, 0.0)
    for w in range(S):
        for s in range(S):
            for g in range(S):
                if D[s, w] + D[w, g] < D[s, g]:
                    D[s, g] = D[s, w] + D[w, g]
    return np.minimum(D, cap)


def successors(mdp) -> np.ndarray:
    """(S, A) the next state of a deterministic model."""
    P = mdp.dense_P()
    assert np.all(P.max(axis=2) == 1.0)
    return P.argmax(axis=2)


@pytest.mark.parametrize(
    "spec", ["digraph:S=9,A=2,seed=0", "digraph:S=11,A=3,seed=5", "gridworld:rows=3,cols=4,walls=5"]
)
def test_lp_equals_floyd_warshall_and_is_a_quasimetric(spec):
    mdp = make(spec)
    data = qrl.support_data(mdp.dense_P())
    fit = qrl.fit_qrl_lp(data)
    assert fit.cap == mdp.S * 1.0  # cap = S c, above every finite distance
    truth = floyd_warshall(mdp.S, data.src, data.dst, 1.0, mdp.S)
    np.testing.assert_array_equal(fit.distances, truth)
    d = fit.distances
    assert np.max(d[:, None, :] - d[:, :, None] - d[None, :, :]) <= 0.0
    assert np.all(d[data.src, data.dst] <= 1.0)  # the local constraints, d(s, s') <= c


def test_step_cost_scales_the_distances_and_cap_caps_them():
    mdp = make("digraph:S=8,A=2,seed=3")
    data = qrl.support_data(mdp.dense_P())
    fit = qrl.fit_qrl_lp(data, step_cost=2.5, cap=6.0)
    np.testing.assert_allclose(fit.distances, floyd_warshall(8, data.src, data.dst, 2.5, 6.0))
    assert fit.distances.max() == 6.0


def test_asymmetry_on_the_ring():
    S = 10
    fit = qrl.fit_qrl_lp(qrl.support_data(make(f"digraph:S={S},A=1").dense_P()))
    s = np.arange(S)
    assert np.all(fit.distances[s, (s + 1) % S] == 1.0)
    assert np.all(fit.distances[(s + 1) % S, s] == S - 1)  # one-way: all the way round


def test_unreachable_goals_get_the_cap():
    # gridworld with an absorbing terminal state: nothing leaves it
    mdp = make("gridworld:rows=2,cols=2")
    fit = qrl.fit_qrl_lp(qrl.support_data(mdp.dense_P()))
    term = mdp.S - 1
    others = np.arange(mdp.S - 1)
    assert np.all(fit.distances[term, others] == mdp.S)


def test_greedy_policy_reaches_every_goal_in_the_shortest_number_of_steps():
    mdp = make("digraph:S=12,A=3,seed=7")
    succ = successors(mdp)
    res = tl.run("qrl", mdp)
    d = res.distances[0]
    pi = qrl.greedy_goal_policy(mdp.dense_P(), d, 1.0)
    for s in range(mdp.S):
        for g in range(mdp.S):
            x, steps = s, 0
            while x != g and steps <= mdp.S:
                x, steps = succ[x, pi[x, g]], steps + 1
            assert x == g and steps == d[s, g]
    assert res.policy_gap.max() == 0.0
    np.testing.assert_array_equal(res.target, d)


def test_goal_cost_to_go_of_a_policy_solves_the_linear_system_under_slip():
    mdp = make("digraph:S=7,A=2,seed=1,slip=0.3")
    P = mdp.dense_P()
    rng = np.random.default_rng(0)
    pi = rng.integers(0, 2, size=(7, 7))
    D = goal_cost_to_go(P, np.ones((7, 2)), 1e6, pi, tol=1e-13)
    for g in range(7):
        rest = [s for s in range(7) if s != g]
        Ppi = P[np.arange(7), pi[:, g]][np.ix_(rest, rest)]  # (S-1, S-1)
        V = np.linalg.solve(np.eye(6) - Ppi, np.ones(6))
        np.testing.assert_allclose(D[rest, g], V, rtol=1e-9)


def test_stochastic_dynamics_give_the_optimistic_support_distance():
    mdp = make("digraph:S=8,A=2,seed=0,slip=0.3")
    P = mdp.dense_P()
    data = qrl.support_data(P)
    d = qrl.fit_qrl_lp(data).distances
    off = ~np.eye(8, dtype=bool)
    np.testing.assert_array_equal(d[off], 1.0)  # every state is a possible next state
    optimal = goal_cost_to_go(P, np.ones((8, 2)), 8.0)
    assert np.all(optimal[off] > d[off] + 0.5)
    res = tl.run("qrl", mdp)
    assert res.distance_error.max() > 0.5 and res.policy_gap.max() > 0.0


def test_sampled_transitions_give_the_observed_graphs_distances():
    mdp = make("digraph:S=10,A=2,seed=2")
    res = tl.run("qrl", mdp, transitions=15, seeds=3, seed=4)
    assert res.distances.shape == (3, 10, 10)
    from theorylab.seeding import ENV_STREAM, generators

    for i, rng in enumerate(generators(4, [0, 1, 2], ENV_STREAM)):
        data = qrl.sampled_data(mdp.dense_P(), 15, rng)
        np.testing.assert_array_equal(
            res.distances[i], floyd_warshall(10, data.src, data.dst, 1.0, 10.0)
        )
    assert np.all(res.distances >= res.target[None])  # fewer edges: never shorter


def test_embedding_relaxation_is_a_quasimetric_close_to_the_distances():
    mdp = make("digraph:S=12,A=2,seed=0")
    res = tl.run("qrl-embedding", mdp)
    d = res.distances[0]
    assert np.max(d[:, None, :] - d[:, :, None] - d[None, :, :]) <= 1e-12  # by construction
    # measured (module docstring): every pair within 1/2 of the shortest path, so the greedy
    # policy (unit steps: successors differ by >= 1) is optimal
    assert res.distance_error.max() < 0.5
    assert res.policy_gap.max() == 0.0
    assert res.config["local_violation_rms"] <= 0.06


def test_embedding_gradient_matches_finite_differences():
    rng = np.random.default_rng(1)
    z = rng.normal(size=(5, 4))
    G = rng.normal(size=(5, 5))
    d, k = qrl.embedding_distances(z)
    grad = qrl.embedding_gradient(z, k, d, G)
    h = 1e-6
    for i in range(5):
        for j in range(4):
            e = np.zeros_like(z)
            e[i, j] = h
            fd = (np.sum(G * qrl.embedding_distances(z + e)[0]) - np.sum(G * d)) / h
            assert abs(fd - grad[i, j]) < 1e-4


@pytest.mark.parametrize("name", ["qrl-symmetric", "qrl-no-triangle", "qrl-no-spread"])
def test_each_mutation_breaks_the_recovery(name):
    from theorylab.validations import mutations  # noqa: F401  (registers the controls)
    from theorylab.validations.controls import CONTROLS

    mdp = make("digraph:S=9,A=2,seed=0")
    data = qrl.support_data(mdp.dense_P())
    truth = floyd_warshall(9, data.src, data.dst, 1.0, 9.0)
    with CONTROLS[name].applied(None):
        d = qrl.fit_qrl_lp(data).distances
    assert np.abs(d - truth).max() >= 1.0
    if name == "qrl-symmetric":
        np.testing.assert_array_equal(d, d.T)
    np.testing.assert_array_equal(qrl.fit_qrl_lp(data).distances, truth)  # restored


def test_result_round_trips_through_the_store(tmp_path):
    res = tl.run("qrl", "digraph:S=6,A=2")
    back = type(res).load(res.save(tmp_path / "r"))
    np.testing.assert_array_equal(back.distances, res.distances)
    assert back.summary()["distance_error"] == 0.0


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: tl.run("qrl", "digraph:S=6", transitions=0), "transitions must be 'all'"),
        (lambda: tl.run("qrl", "digraph:S=6", transitions="some"), "transitions must be 'all'"),
        (lambda: tl.run("qrl", "digraph:S=6", step_cost=0.0), "step_cost must be positive"),
        (lambda: tl.run("qrl", "digraph:S=6", cap=0.5), "cap must be at least step_cost"),
        (lambda: tl.run("qrl-embedding", "digraph:S=6", lr=-1.0), "lr must be positive"),
        (lambda: make("digraph:S=6,slip=2"), "slip must be a probability"),
        (lambda: tl.run("qrl", "tokentree:V=2,L=2"), "qrl is a goal-reaching algorithm"),
    ],
)
def test_input_errors_name_the_value(call, message):
    with pytest.raises(Exception, match=message):
        call()


def test_mountaincar_grid_follows_gymnasium_and_qrl_recovers_its_distances():
    mdp = make("mountaincar-grid")  # nx = 6, nv = 6, repeat = 10
    succ = successors(mdp)
    xs, vs = np.linspace(-1.2, 0.6, 6), np.linspace(-0.07, 0.07, 6)
    for s in (0, 14, 20, 35):  # one cell at a time, MountainCar-v0's step written out here
        for a in range(3):
            x, v = xs[s // 6], vs[s % 6]
            for _ in range(10):
                v = min(max(v + (a - 1) * 0.001 + np.cos(3 * x) * (-0.0025), -0.07), 0.07)
                x = min(max(x + v, -1.2), 0.6)
                if x == -1.2 and v < 0:
                    v = 0.0
            assert succ[s, a] == np.abs(xs - x).argmin() * 6 + np.abs(vs - v).argmin()
    data = qrl.support_data(mdp.dense_P())
    d = qrl.fit_qrl_lp(data).distances
    truth = floyd_warshall(mdp.S, data.src, data.dst, 1.0, mdp.S)
    np.testing.assert_array_equal(d, truth)
    assert np.any(d == mdp.S)  # some pairs cannot reach each other on the coarse grid
    start = int(mdp.mu0.argmax())
    goals = [i * 6 + j for i in range(6) for j in range(6) if xs[i] >= 0.5]
    assert d[start, goals].min() == 6  # the module docstring's "6 moves"


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_any_positive_weighting_of_the_spread_gives_the_same_optimum(seed, monkeypatch):
    """d* is the pointwise-largest feasible d, so QRL's optimum does not depend on how the pairs
    are weighted (the paper's increasing transform of d in the objective, Sec. 3.2)."""
    mdp = make(f"digraph:S=8,A=2,seed={seed}")
    data = qrl.support_data(mdp.dense_P())
    truth = floyd_warshall(8, data.src, data.dst, 1.0, 8.0)
    rng = np.random.default_rng(seed)
    monkeypatch.setattr(qrl, "spread_weights", lambda S: rng.uniform(0.01, 1.0, size=S * S))
    np.testing.assert_array_equal(qrl.fit_qrl_lp(data).distances, truth)
