"""PR-LSVI: the ridge BTL MLE against an independent solve, the perturbation's covariance, the
active-query rule and its elliptical-potential count, batch invariance."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import minimize

import theorylab as tl
from theorylab.agent import env_spec
from theorylab.algorithms.preference.pr_lsvi import PRLSVI, btl_ridge_mle, query_bound
from theorylab.mdps import make
from theorylab.mdps.preference import TrajectoryBTLOracle

MDP = "linear-simplex:S=5,A=3,d=3,H=3,stationary=true,rewards=cube"


def _objective(theta, X, y, nu):
    z = X @ theta
    return float(
        np.sum(np.logaddexp(0, -z) * y + np.logaddexp(0, z) * (1 - y)) + nu / 2 * theta @ theta
    )


def test_ridge_mle_matches_an_independent_solve_and_masks_rows():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(2, 40, 3))
    y = (rng.random((2, 40)) < 0.6).astype(float)
    mask = np.ones((2, 40), bool)
    mask[1, 25:] = False  # seed 1 has only 25 labels
    got = btl_ridge_mle(X, y, mask, 0.5, np.zeros((2, 3)))
    for b, n in ((0, 40), (1, 25)):
        ref = minimize(
            _objective,
            np.zeros(3),
            args=(X[b, :n], y[b, :n], 0.5),
            method="BFGS",
            options={"gtol": 1e-10},
        )
        np.testing.assert_allclose(got[b], ref.x, atol=1e-6)


def test_ridge_mle_recovers_theta_with_many_labels():
    rng = np.random.default_rng(1)
    theta = np.array([1.0, -0.5, 0.3])
    X = rng.normal(size=(1, 20000, 3))
    y = (rng.random((1, 20000)) < 1 / (1 + np.exp(-X[0] @ theta))).astype(float)
    est = btl_ridge_mle(X, y, np.ones((1, 20000), bool), 1.0, np.zeros((1, 3)))[0]
    assert np.abs(est - theta).max() < 0.06


def _agent(threshold=0.1, seeds=(0,), **kw):
    mdp = make(MDP)
    rngs = [np.random.default_rng(10 + s) for s in seeds]
    oracle = TrajectoryBTLOracle(mdp.R, mdp.horizon, [np.random.default_rng(s) for s in seeds])
    env = env_spec(mdp, known_rewards=False)
    return PRLSVI(env, len(seeds), rngs, oracle, episodes=10, threshold=threshold, **kw)


def test_reward_perturbation_has_covariance_sigma_r2_sigma_inverse():
    agent = _agent(sigma_r=0.7)
    A = np.array([[2.0, 0.3, 0.0], [0.3, 1.5, 0.2], [0.0, 0.2, 1.0]])
    agent.Sigma[0] = A
    agent.theta_hat[0] = [0.1, -0.2, 0.3]
    draws = []
    for _ in range(6000):
        agent._perturb()
        draws.append(agent.theta_tilde[0] - agent.theta_hat[0])
    cov = np.cov(np.array(draws).T)
    np.testing.assert_allclose(cov, 0.49 * np.linalg.inv(A), atol=0.02)


@pytest.mark.parametrize("threshold", [0.05, 0.3])
def test_queries_follow_the_rule_and_the_elliptical_count(threshold):
    res = tl.run("pr-lsvi", MDP, episodes=300, seeds=3, threshold=threshold)
    mdp = make(MDP)
    X = 2 * mdp.horizon * float(np.linalg.norm(mdp.features, axis=-1).max())
    q = res.queries[:, -1]
    assert (q <= [query_bound(int(n), 3, 1.0, X, threshold) for n in q]).all()
    assert (np.diff(res.queries, axis=1) >= 0).all() and (np.diff(res.queries, axis=1) <= 1).all()
    assert (res.queries[:, 0] == 0).all()  # episode 1 has no older trajectory to compare with


def test_threshold_zero_asks_whenever_the_trajectories_differ_and_a_huge_one_never():
    from theorylab.algorithms.objectives import RISK_NEUTRAL

    mdp = make(MDP)
    agent = _agent(threshold=0.0, seeds=(0, 1))
    env_rngs = [np.random.default_rng(s + 100) for s in (0, 1)]
    prev, expected = None, np.zeros(2, np.int64)
    for _ in range(40):
        traj = RISK_NEUTRAL.rollout(mdp, agent.policy(), env_rngs)
        psi = mdp.features[traj.states, traj.actions].sum(axis=1)  # (B, d)
        if prev is not None:
            expected += np.abs(psi - prev).max(axis=1) > 0  # x != 0 has a positive width
        prev = psi
        agent.update(traj)
        np.testing.assert_array_equal(agent.queries, expected)
    assert expected.min() >= 30  # identical consecutive trajectories are the exception
    never = tl.run("pr-lsvi", MDP, episodes=50, seeds=2, threshold=1e6)
    np.testing.assert_array_equal(never.queries[:, -1], 0)


def test_seed_is_the_same_alone_or_batched():
    both = tl.run("pr-lsvi", MDP, episodes=80, seeds=[0, 1], seed=4, threshold=0.1)
    alone = tl.run("pr-lsvi", MDP, episodes=80, seeds=[1], seed=4, threshold=0.1)
    np.testing.assert_allclose(both.values[1], alone.values[0], atol=1e-12)
    np.testing.assert_array_equal(both.queries[1], alone.queries[0])


def test_bad_parameters_raise():
    with pytest.raises(ValueError, match="threshold must be a finite number >= 0"):
        tl.run("pr-lsvi", MDP, episodes=2, threshold=-1.0)
    with pytest.raises(ValueError, match="nu"):
        tl.run("pr-lsvi", MDP, episodes=2, nu=0.0)
    with pytest.raises(ValueError, match="takes feedback btl"):
        tl.run("pr-lsvi", MDP, episodes=2, feedback="matrix")


def test_tradeoff_plot_draws_one_point_per_threshold_and_checks_shapes(tmp_path):
    from theorylab.plotting import plot_regret_query_tradeoff, save_figure

    regret = np.array([[100.0, 120.0], [200.0, 260.0], [400.0, 380.0]])
    queries = np.array([[900.0, 1000.0], [100.0, 120.0], [10.0, 12.0]])
    ax = plot_regret_query_tradeoff([0.05, 0.2, 0.8], regret, queries)
    line = ax.lines[0]
    np.testing.assert_allclose(line.get_xdata(), queries.mean(axis=1))
    np.testing.assert_allclose(line.get_ydata(), regret.mean(axis=1))
    assert [t.get_text() for t in ax.texts] == ["eps = 0.05", "eps = 0.2", "eps = 0.8"]
    save_figure(ax, tmp_path / "t.png")
    assert (tmp_path / "t.png").stat().st_size > 0
    with pytest.raises(ValueError, match="M = 2 thresholds"):
        plot_regret_query_tradeoff([0.1, 0.2], regret, queries)
