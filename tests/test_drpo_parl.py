"""DR-PO (dataset resets, 002-004#E4) and PARL (bilevel alignment, 000#70 / 002-004#E13).

Independent answers: pi_D's value on the lock in closed form; the rollout estimator's mean against
Q^pi by a backward recursion written here; the NPG step written out; the hypergradient against
central finite differences of the exact bilevel objective; the lower level by soft policy
iteration against soft value iteration. Controls: the no-reset baseline and the myopic gradient
fail; the two registered mutations; bad input refused in one line.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.special import logsumexp

import theorylab as tl
import theorylab.validations.mutations  # noqa: F401  (registers the mutations)
from theorylab.algorithms.planning.soft_value_iteration import soft_value_iteration
from theorylab.algorithms.preference import drpo, parl
from theorylab.mdps import make
from theorylab.validations.controls import get_control

LOCK = "combination-lock:H=6,A=3,code_seed=3"


# ------------------------------------------------------------------ DR-PO
@pytest.mark.parametrize("noise", [0.0, 0.1, 0.5])
def test_pi_d_value_on_the_lock_is_the_closed_form(noise):
    mdp = make(LOCK)
    res = tl.run("dr-po", mdp, iterations=1, noise=noise, pairs=50, resets=4)
    assert res.config["value_pi_D"] == pytest.approx((1 - noise + noise / 3) ** 6, abs=1e-12)


def _q_by_recursion(mdp, pi, reward):
    """Q^pi_h (H, S, A) under reward (H, S, A), written out with the dense P."""
    P = mdp.dense_P()
    H = mdp.horizon
    Q = np.zeros((H, mdp.S, mdp.A))
    V = np.zeros(mdp.S)
    for h in range(H - 1, -1, -1):
        Q[h] = reward[h] + P @ V
        V = (pi[h] * Q[h]).sum(-1)
    return Q


def test_rollout_draws_are_unbiased_for_q():
    mdp = make("random:S=4,A=3,H=4,seed=2")
    rng = np.random.default_rng(0)
    pi = rng.dirichlet(np.ones(3), size=(4, 4))  # (H, S, A)
    reward = rng.standard_normal((4, 4, 3))
    Q = _q_by_recursion(mdp, pi, reward)
    n = 40000
    for h, s, a in [(0, 0, 1), (2, 3, 0), (3, 1, 2)]:
        draws = drpo.rollout(mdp, pi, np.full(n, h), np.full(n, s), np.full(n, a), reward, rng)
        se = draws.std() / np.sqrt(n)
        assert abs(draws.mean() - Q[h, s, a]) <= 5 * se + 1e-12


def test_npg_step_written_out():
    rng = np.random.default_rng(1)
    logits = rng.standard_normal((3, 4, 2))
    logits -= logsumexp(logits, axis=-1, keepdims=True)
    stages, states = np.array([0, 0, 2]), np.array([1, 1, 3])
    q = rng.standard_normal((3, 2))
    new = drpo.npg_step(logits, stages, states, q, eta=0.7)
    want = logits.copy()
    want[0, 1] += 0.7 * q[:2].mean(0)
    want[2, 3] += 0.7 * q[2]
    want -= logsumexp(want, axis=-1, keepdims=True)
    np.testing.assert_allclose(new, want, atol=1e-14)
    untouched = np.ones((3, 4), bool)
    untouched[0, 1] = untouched[2, 3] = False
    np.testing.assert_allclose(new[untouched], logits[untouched], atol=1e-14)


def test_outcome_mle_ranks_the_goal_first():
    mdp = make("combination-lock:H=5,A=3,code_seed=1")
    rng = np.random.default_rng(0)
    data = drpo.preference_data(mdp, drpo.noisy_expert(mdp, 0.2), 4000, rng)
    theta = drpo.fit_outcome_reward(mdp, data, 10.0)[-1]  # (S, A)
    code_last = int(np.argmax(mdp.reward(0)[4]))
    assert np.unravel_index(np.argmax(theta), theta.shape) == (4, code_last)
    assert abs(theta.sum()) < 1e-9  # the identifiable set: 1' theta = 0


def test_dataset_resets_open_the_lock_and_the_baseline_does_not():
    kw = dict(iterations=25, pairs=1000, sample_seed=0)
    res = tl.run("dr-po", LOCK, **kw)
    base = tl.run("dr-po", LOCK, reset="initial", **kw)
    v_d = res.config["value_pi_D"]
    assert res.objective[-1] >= v_d - 0.05
    assert base.objective[-1] < 0.05 < v_d - 0.05
    # the true reward gives the same picture
    assert tl.run("dr-po", LOCK, reward="true", **kw).objective[-1] >= v_d - 0.05


def test_the_no_reset_mutation_is_the_baseline():
    kw = dict(iterations=6, pairs=300, sample_seed=4)
    base = tl.run("dr-po", LOCK, reset="initial", **kw)
    with get_control("drpo-no-dataset-reset").applied(None):
        mutated = tl.run("dr-po", LOCK, **kw)
    np.testing.assert_array_equal(mutated.policies, base.policies)


@pytest.mark.parametrize(
    "params, message",
    [
        ({"reset": "prefix"}, "dr-po: reset must be one of"),
        ({"reward": "learned"}, "dr-po: reward must be one of"),
        ({"pairs": 0}, "dr-po: pairs must be a positive integer, got 0"),
        ({"resets": 2.5}, "dr-po: resets must be a positive integer"),
        ({"eta": -1.0}, "dr-po: eta must be a finite number > 0"),
        ({"noise": 1.5}, r"dr-po: noise must lie in \[0, 1\]"),
    ],
)
def test_drpo_refuses_bad_input(params, message):
    with pytest.raises(ValueError, match=message):
        tl.run("dr-po", LOCK, iterations=2, **params)


# ------------------------------------------------------------------ PARL
def _discounted(seed):
    return make(f"random:S=4,A=3,gamma=0.9,seed={seed}").with_objective(horizon=None, gamma=0.9)


@pytest.mark.parametrize("features", ["tabular", 3])
def test_hypergradient_equals_central_differences(features):
    prob = parl.bilevel_problem(_discounted(5), features=features, seed=1)
    theta = np.random.default_rng(2).standard_normal(prob.phi.shape[-1])
    h = 1e-4
    fd = np.array(
        [
            (parl.upper_objective(prob, theta + h * e) - parl.upper_objective(prob, theta - h * e))
            / (2 * h)
            for e in np.eye(theta.size)
        ]
    )
    grad, F = parl.hypergradient(prob, theta)
    assert F == pytest.approx(parl.upper_objective(prob, theta), abs=1e-14)
    np.testing.assert_allclose(grad, fd, atol=1e-6 * np.abs(fd).max())
    myopic, _ = parl.hypergradient(prob, theta, myopic=True)
    assert np.abs(myopic - fd).max() > 1e-2 * np.abs(fd).max()  # the control fails


def test_lower_level_agrees_with_soft_value_iteration():
    prob = parl.bilevel_problem(_discounted(7))
    theta = 2.0 * np.random.default_rng(3).standard_normal(prob.phi.shape[-1])
    np.testing.assert_allclose(
        parl.lower_level(prob, theta), parl.lower_level_by_value_iteration(prob, theta), atol=1e-10
    )


def test_soft_value_iteration_reward_keyword_replaces_the_model_reward():
    mdp = _discounted(1)
    r = np.random.default_rng(0).random((4, 3))
    replaced = mdp._replace(R=r)
    a = soft_value_iteration(mdp, 0.3, reward=r)
    b = soft_value_iteration(replaced, 0.3)
    np.testing.assert_allclose(a.V, b.V, atol=1e-12)


def test_parl_ascent_is_monotone_and_meets_the_one_over_t_bound():
    res = tl.run("parl", "random:S=4,A=3,gamma=0.9,seed=3", iterations=150, alpha=1.0)
    F, g2 = res.regularised, np.array(res.config["grad_norm"]) ** 2
    assert np.all(np.diff(F) >= -1e-12)
    T = np.arange(1, F.size)
    assert np.all(np.minimum.accumulate(g2[:-1]) <= 2 * (F[1:] - F[0]) / T + 1e-12)
    myopic = tl.run("parl", "random:S=4,A=3,gamma=0.9,seed=3", iterations=150, myopic=True)
    assert myopic.regularised[-1] < F[-1]


def test_the_myopic_mutation_drops_the_decision_term():
    prob = parl.bilevel_problem(_discounted(2))
    theta = np.random.default_rng(0).standard_normal(prob.phi.shape[-1])
    with get_control("parl-myopic-gradient").applied(None):
        mutated, _ = parl.hypergradient(prob, theta)
    np.testing.assert_allclose(mutated, parl.hypergradient(prob, theta, myopic=True)[0])


@pytest.mark.parametrize(
    "spec, params, message",
    [
        ("random:S=4,A=3,gamma=0.9", {"alpha": 0.0}, "parl: alpha must be a finite number > 0"),
        ("random:S=4,A=3,gamma=0.9", {"tau": -1.0}, "parl: tau must be a finite number > 0"),
        ("random:S=4,A=3,gamma=0.9", {"features": "rbf"}, "parl: features must be 'tabular'"),
        ("random:S=4,A=3,gamma=0.9", {"myopic": "yes"}, "parl: parameter myopic=.yes. is a str"),
        ("combination-lock:H=4", {}, "parl is stated for discounted MDPs"),
    ],
)
def test_parl_refuses_bad_input(spec, params, message):
    with pytest.raises(ValueError, match=message):
        tl.run("parl", spec, iterations=2, **params)


# ------------------------------------------------------------------ CAL (000#36)
def _binding_cmdp():
    from theorylab.validations.claims.dual import binding_cmdp

    return binding_cmdp(np.random.default_rng(3))


def test_cal_at_rho_zero_is_lagrangian_gda():
    from theorylab.algorithms.dual import cal, cmdp

    mdp, c, b = _binding_cmdp()
    base = cmdp.lagrangian_gda(mdp, c, [b], steps=60, eta=1.0)
    same = cal.cal_primal_dual(mdp, c, [b], steps=60, eta=1.0, rho=0.0)
    np.testing.assert_array_equal(same.occupancies, base.occupancies)


def test_cal_last_iterate_reaches_the_linprog_optimum():
    from theorylab.validations.claims.dual import cmdp_linprog

    mdp, c, b = _binding_cmdp()
    v_star, _ = cmdp_linprog(mdp, c, b)
    res = tl.run("cal", mdp, iterations=300, cost=c, threshold=b)
    assert abs(res.primal[-1] - v_star) <= 1e-6
    assert res.constraint[-1] <= 1e-6


def test_conservative_cost_is_an_upper_estimate_with_the_written_width():
    from theorylab.algorithms.dual import cal

    mdp, c, _ = _binding_cmdp()
    costs = c[None]
    rng = np.random.default_rng(0)
    ucb = cal.conservative_cost(mdp, costs, 500, 2.0, rng, 0.8)
    plain = cal.conservative_cost(mdp, costs, 500, 0.0, np.random.default_rng(0), 0.8)
    # the same draws: the UCB is the plain mean plus 2 / sqrt(n), clipped at 1
    assert np.all(ucb >= plain - 1e-15)
    assert np.all(ucb <= 1.0)
    assert cal.conservative_cost(mdp, costs, 0, 2.0, rng, 0.8) is costs


def test_the_no_augmentation_mutation_is_gda():
    from theorylab.algorithms.dual import cal

    mdp, c, b = _binding_cmdp()
    gda = cal.cal_primal_dual(mdp, c, [b], steps=40, rho=0.0)
    with get_control("cal-no-augmentation").applied(None):
        mutated = cal.cal_primal_dual(mdp, c, [b], steps=40, rho=5.0)
    np.testing.assert_array_equal(mutated.occupancies, gda.occupancies)


@pytest.mark.parametrize(
    "params, message",
    [
        ({"rho": -1.0}, "cal: rho must be a finite number >= 0"),
        ({"kappa": float("nan")}, "cal: kappa must be a finite number >= 0"),
        ({"samples": -3}, "cal: samples must be an integer >= 0"),
    ],
)
def test_cal_refuses_bad_input(params, message):
    with pytest.raises(ValueError, match=message):
        tl.run("cal", "random:S=4,A=2,gamma=0.8,seed=3", iterations=2, **params)
