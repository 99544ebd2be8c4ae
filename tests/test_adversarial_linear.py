"""Adversarial linear-Q MDPs (seed row 002-004#A1): the FTRL step against cvxpy, the estimator's
exact expectation by enumerating trajectories, the hindsight comparator against enumerating
policies, the runner's regret, the tabular special case, the paper's constants, input errors and
the controls."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import theorylab as tl
from theorylab.algorithms.adversarial import linear_q_estimator
from theorylab.algorithms.adversarial.policy_optimization import (
    ExplorationMixBaseline,
    LogBarrierFTRL,
    MagnitudeReducedExpWeights,
    SimulatorFreeLogBarrierFTRL,
)
from theorylab.algorithms.adversarial.simplex_ftrl import entropy_ftrl, log_barrier_ftrl
from theorylab.errors import InvalidMDPError
from theorylab.mdps import make
from theorylab.mdps.adversarial import Simulator

TINY = "adversarial-linear:S=2,A=2,d=2,H=2,feature_concentration=0.3,seed=1"


@pytest.fixture(scope="module")
def tiny():
    return make(TINY)


# ------------------------------------------------------------------------- the FTRL step
@pytest.mark.parametrize("eta", [0.01, 0.3, 5.0])
def test_log_barrier_step_equals_cvxpy_on_the_simplex(eta):
    cp = pytest.importorskip("cvxpy")
    rng = np.random.default_rng(3)
    for _ in range(4):
        L = rng.normal(scale=20.0, size=4)  # arbitrarily negative losses
        p = cp.Variable(4)
        cp.Problem(cp.Minimize(L @ p - cp.sum(cp.log(p)) / eta), [cp.sum(p) == 1]).solve()
        ours = log_barrier_ftrl(L, eta)
        assert np.all(ours > 0) and abs(ours.sum() - 1) < 1e-12

        def objective(q, L=L):
            return L @ q - np.log(q).sum() / eta

        # ours is the exact minimiser: never worse than the conic solver's answer, and close to it
        assert objective(ours) <= objective(p.value) + 1e-9 * max(1.0, abs(objective(ours)))
        assert np.allclose(ours, p.value, atol=1e-4)
        # first-order condition written out: p_a = 1 / (eta (L_a + lambda)), one lambda
        lam = 1.0 / (eta * ours) - L
        assert np.ptp(lam) < 1e-8 * max(1.0, np.abs(lam).max())


def test_ftrl_iterates_ignore_a_per_state_shift():
    rng = np.random.default_rng(5)
    L = rng.normal(size=(3, 4, 5))
    shift = rng.normal(scale=50.0, size=(3, 4, 1))
    assert np.allclose(log_barrier_ftrl(L + shift, 0.7), log_barrier_ftrl(L, 0.7), atol=1e-12)
    assert np.allclose(entropy_ftrl(L + shift, 0.7), entropy_ftrl(L, 0.7), atol=1e-12)


# ------------------------------------------------------------------------- the estimator
def test_symmetric_pinv_equals_numpy_pinv_including_singular_matrices():
    rng = np.random.default_rng(8)
    X = rng.normal(size=(6, 5, 4, 2))  # rank <= 2 covariances of dimension 4
    singular = np.einsum("nbij,nbkj->nbik", X, X)
    full = singular + np.eye(4)
    for cov in (singular, full):
        want = np.linalg.pinv(cov, rcond=linear_q_estimator.PINV_RCOND, hermitian=True)
        assert np.allclose(linear_q_estimator.symmetric_pinv(cov), want, atol=1e-10)


def enumerated_expectation(mdp, policy, theta, estimator):
    """E[estimator(trajectory)] by enumerating every trajectory of ``policy (H, S, A)``."""
    P = np.broadcast_to(mdp.model.dense_P(), (mdp.H, mdp.S, mdp.A, mdp.S))
    total = 0.0
    for s0 in range(mdp.S):
        for path in itertools.product(range(mdp.S), range(mdp.A), repeat=mdp.H):
            states, actions = np.array(path[0::2]), np.array(path[1::2])
            if states[0] != s0:
                continue
            prob = mdp.mu0[s0]
            for h in range(mdp.H):
                prob *= policy[h, states[h], actions[h]]
                if h + 1 < mdp.H:
                    prob *= P[h, states[h], actions[h], states[h + 1]]
            if prob == 0:
                continue
            losses = np.array([mdp.phi[states[h], actions[h]] @ theta[h] for h in range(mdp.H)])
            total = total + prob * estimator(states[None], actions[None], losses[None])[0]
    return total


@pytest.mark.parametrize(
    "spec",
    [
        TINY,
        "adversarial-linear:S=2,A=3,d=3,H=2,seed=2",
        "adversarial-linear:S=2,A=2,H=2,features=onehot",
    ],
)
def test_estimator_is_exactly_unbiased(spec):
    from theorylab.validations.claims.adversarial import exact_q

    mdp = make(spec)
    rng = np.random.default_rng(11)
    policy = rng.dirichlet(np.ones(mdp.A), size=(mdp.H, mdp.S))  # (H, S, A)
    theta = mdp.loss_parameters(3)[2]
    cov = mdp.covariance(policy[None])

    def estimator(states, actions, losses):
        return linear_q_estimator.linear_q_estimate(mdp.phi, cov, states, actions, losses)

    expectation = enumerated_expectation(mdp, policy, theta, estimator)
    exact = exact_q(mdp, policy, np.einsum("sad,hd->hsa", mdp.phi, theta))
    assert np.allclose(expectation, exact, atol=1e-10)


def test_estimator_without_the_inverse_covariance_is_biased(tiny):
    from theorylab.validations.adversarial_mutations import adv_linear_q_no_inverse_covariance
    from theorylab.validations.claims.adversarial import exact_q

    policy = np.full((tiny.H, tiny.S, tiny.A), 0.5)
    theta = tiny.loss_parameters(1)[0]
    cov = tiny.covariance(policy[None])
    exact = exact_q(tiny, policy, np.einsum("sad,hd->hsa", tiny.phi, theta))
    with adv_linear_q_no_inverse_covariance():

        def estimator(states, actions, losses):
            return linear_q_estimator.linear_q_estimate(tiny.phi, cov, states, actions, losses)

        biased = enumerated_expectation(tiny, policy, theta, estimator)
    assert np.abs(biased - exact).max() > 0.05


def test_one_hot_estimator_is_the_importance_weight():
    mdp = make("adversarial-linear:S=3,A=2,H=3,features=onehot,seed=1")
    rng = np.random.default_rng(2)
    pol = rng.dirichlet(np.ones(2), size=(4, 3, 3))  # (B, H, S, A)
    theta = mdp.loss_parameters(1)[0]
    states, actions, losses = mdp.rollout(pol, theta, [np.random.default_rng(i) for i in range(4)])
    linear = linear_q_estimator.linear_q_estimate(
        mdp.phi, mdp.covariance(pol), states, actions, losses
    )
    tabular = linear_q_estimator.importance_weighted_q(mdp.occupancy(pol), states, actions, losses)
    assert np.allclose(linear, tabular, atol=1e-9)


def test_covariance_from_simulator_rollouts_approaches_the_exact_one(tiny):
    pol = np.full((1, tiny.H, tiny.S, tiny.A), 0.5)
    agent = LogBarrierFTRL(tiny, 1, [np.random.default_rng(0)], 10, covariance_rollouts=20000)
    agent._policy = pol
    sampled = agent.covariance(Simulator(tiny))
    assert np.abs(sampled - tiny.covariance(pol)).max() < 0.02


# ------------------------------------------------------------------------- exact scoring
def test_hindsight_comparator_equals_enumeration_of_policies():
    mdp = make("adversarial-linear:S=3,A=2,d=3,H=2,seed=6")
    loss = mdp.loss_tables(mdp.loss_parameters(40)).sum(axis=0)  # (H, S, A)
    best = min(
        mdp.expected_loss(np.eye(mdp.A)[np.array(pi).reshape(mdp.H, mdp.S)][None], loss)[0]
        for pi in itertools.product(range(mdp.A), repeat=mdp.H * mdp.S)
    )
    assert mdp.best_fixed_policy(loss)[1] == pytest.approx(best, abs=1e-12)


def test_expected_loss_equals_tabular_policy_evaluation():
    from theorylab.algorithms.planning.evaluation import policy_values
    from theorylab.mdps.tabular import TabularMDP

    mdp = make("adversarial-linear:S=3,A=2,d=3,H=3,seed=6")
    loss = mdp.loss_tables(mdp.loss_parameters(1)[0])  # (H, S, A) in [0, 1]
    pols = np.random.default_rng(1).dirichlet(np.ones(2), size=(5, 3, 3))
    as_rewards = TabularMDP(mdp.P, loss, mdp.mu0, horizon=mdp.H)
    assert np.allclose(mdp.expected_loss(pols, loss), policy_values(as_rewards, pols), atol=1e-12)


def test_run_regret_is_learner_loss_minus_the_best_fixed_policy(tiny):
    K = 60
    res = tl.run("ftrl-log-barrier-linear-q", TINY, episodes=K, seeds=3, eta_scale=16.0)
    total = tiny.loss_tables(tiny.loss_parameters(K)).sum(axis=0)
    best = min(
        tiny.expected_loss(np.eye(2)[np.array(pi).reshape(2, 2)][None], total)[0]
        for pi in itertools.product(range(2), repeat=4)
    )
    assert np.allclose(res.cumulative_regret[:, -1], res.returns.sum(axis=1) - best, atol=1e-9)
    from theorylab.runners.adversarial import prefix_regret

    assert np.allclose(prefix_regret(tiny, res.returns, [K])[:, 0], res.cumulative_regret[:, -1])


def test_one_hot_run_equals_the_tabular_loop():
    from theorylab.validations.claims.adversarial import TABULAR_INSTANCE, tabular_twin

    mdp = make(TABULAR_INSTANCE)
    run = tl.run("ftrl-log-barrier-linear-q", mdp, episodes=40, seeds=3, seed=7, eta_scale=4.0)
    assert np.abs(run.returns - tabular_twin(mdp, 40, 3, 7, 4.0)).max() <= 1e-9


def test_loss_sequence_is_oblivious_and_a_prefix(tiny):
    assert np.array_equal(tiny.loss_parameters(30)[:10], tiny.loss_parameters(10))
    a = tl.run("ftrl-log-barrier-linear-q", TINY, episodes=20, seeds=2, seed=1)
    b = tl.run("exp-weights-exploration-mix", TINY, episodes=20, seeds=2, seed=1)
    # the comparator depends on the losses only, never on the learner
    assert a.config["comparator_total_loss"] == b.config["comparator_total_loss"]


# ------------------------------------------------------------------------- the paper's constants
def test_learning_rates_and_exploration_written_out(tiny):
    rng = [np.random.default_rng(0)]
    lb = LogBarrierFTRL(tiny, 1, rng, 100, eta_scale=3.0)
    base = ExplorationMixBaseline(tiny, 1, rng, 100, eta_scale=3.0)
    for k in (1, 7, 1000):
        lb.k = base.k = k
        assert lb.learning_rate() == pytest.approx(3.0 / (2 * np.sqrt(2 * k)))  # c/(H sqrt(A k))
        assert base.learning_rate() == pytest.approx(3.0 * k ** (-2 / 3) / 2)  # c k^(-2/3) / H
        assert base.exploration() == pytest.approx(min(0.5, k ** (-1 / 3)))


def test_algorithm_2_rates_written_out_have_no_action_count():
    rng = [np.random.default_rng(0)]
    for spec in (TINY, "adversarial-linear:S=2,A=16,d=2,H=2,feature_concentration=0.3,seed=1"):
        agent = MagnitudeReducedExpWeights(
            make(spec), 1, rng, 100, eta_scale=3.0, exploration_scale=0.5
        )
        for k in (1, 7, 1000):
            agent.k = k
            assert agent.learning_rate() == pytest.approx(3.0 / (2 * np.sqrt(k)))  # c/(H sqrt k)
            assert agent.exploration() == pytest.approx(min(0.5, 0.5 * 3.0 / (2 * np.sqrt(k))))


def test_algorithm_2_plays_the_mixture_and_its_estimate_is_bounded(tiny):
    from scipy.special import softmax

    agent = MagnitudeReducedExpWeights(tiny, 1, [np.random.default_rng(0)], 100, eta_scale=4.0)
    agent.cumulative[:] = np.random.default_rng(2).normal(scale=30.0, size=agent.cumulative.shape)
    agent.k = 50
    pol = agent._iterate()
    eta = 4.0 / (2 * np.sqrt(50))
    gamma = min(0.5, eta)
    assert np.allclose(pol, (1 - gamma) * softmax(-eta * agent.cumulative, axis=-1) + gamma / 2)
    # the magnitude the mixture buys: |Q_hat| <= H max ||phi||^2 / lambda_min(Sigma), and
    # lambda_min(Sigma_1) >= gamma lambda_min(uniform policy's Sigma_1) (first step: same mu0)
    uniform = np.full((1, 2, 2, 2), 0.5)
    lam0 = np.linalg.eigvalsh(tiny.covariance(uniform)[0, 0]).min()
    lam = np.linalg.eigvalsh(tiny.covariance(pol)[0, 0]).min()
    assert lam0 > 0 and lam >= gamma * lam0 - 1e-12


def test_exploration_per_action_mutation_scales_the_share_by_a():
    from theorylab.validations.adversarial_mutations import adv_exp_weights_exploration_per_action

    mdp = make("adversarial-linear:S=2,A=8,d=2,H=2,feature_concentration=0.3,seed=1")
    agent = MagnitudeReducedExpWeights(mdp, 1, [np.random.default_rng(0)], 100, eta_scale=1.0)
    agent.k = 10_000
    clean = agent.exploration()
    with adv_exp_weights_exploration_per_action():
        assert agent.exploration() == pytest.approx(8 * clean)
    assert agent.exploration() == clean


# ------------------------------------------------------------------------- input errors
def test_input_errors_name_the_key_and_value():
    with pytest.raises(ValueError, match="needs a problem with a loss sequence"):
        tl.run("ftrl-log-barrier-linear-q", "riverswim:S=4,H=4", episodes=5, seeds=1)
    with pytest.raises(ValueError, match="eta_scale must be a positive number, got eta_scale=-1"):
        tl.run("ftrl-log-barrier-linear-q", TINY, episodes=5, seeds=1, eta_scale=-1.0)
    with pytest.raises(ValueError, match="covariance_rollouts must be >= 0"):
        tl.run("ftrl-log-barrier-linear-q", TINY, episodes=5, seeds=1, covariance_rollouts=-2)
    with pytest.raises(ValueError, match="episodes must be a positive integer"):
        tl.run("ftrl-log-barrier-linear-q", TINY, episodes=0, seeds=1)
    with pytest.raises(InvalidMDPError, match="features must be one of"):
        make("adversarial-linear:features=dense")
    with pytest.raises(InvalidMDPError, match="feature_concentration must be > 0"):
        make("adversarial-linear:feature_concentration=0")
    with pytest.raises(ValueError, match="eta must be > 0"):
        log_barrier_ftrl(np.zeros(3), 0.0)
    with pytest.raises(ValueError, match="exploration_scale must be a positive number"):
        tl.run(
            "exp-weights-magnitude-reduced-linear-q", TINY, episodes=5, seeds=1, exploration_scale=0
        )


def test_baseline_runs_with_simulator_rollouts():
    res = tl.run("exp-weights-exploration-mix", TINY, episodes=30, seeds=2, covariance_rollouts=50)
    assert res.regret.shape == (2, 30) and np.all(np.isfinite(res.regret))


def test_uniform_exploration_mutation_mixes_the_baseline_exploration(tiny):
    from theorylab.validations.adversarial_mutations import adv_ftrl_uniform_exploration

    agent = LogBarrierFTRL(tiny, 1, [np.random.default_rng(0)], 100, eta_scale=16.0)
    agent.cumulative[:] = np.array([0.0, 500.0])  # action 1 far worse at every state
    agent.k = 64
    clean = agent._iterate()
    with adv_ftrl_uniform_exploration():
        mixed = agent._iterate()
    gamma = 64 ** (-1 / 3)
    assert clean[..., 1].max() < 0.01
    assert np.allclose(mixed, (1 - gamma) * clean + gamma / 2)


# ------------------------------------------------------------------------- simulator-free
def test_simulator_free_learner_never_asks_the_simulator_and_uses_its_own_features(tiny):
    class Refusing:
        def covariance(self, policies):
            raise AssertionError("asked the simulator for a covariance")

        def rollout(self, policies, rngs):
            raise AssertionError("asked the simulator for a roll-out")

    agent = SimulatorFreeLogBarrierFTRL(tiny, 2, [np.random.default_rng(i) for i in range(2)], 9)
    env = [np.random.default_rng([5, i]) for i in range(2)]
    theta = tiny.loss_parameters(8)
    second = np.zeros((2, tiny.H, tiny.d, tiny.d))
    for k in range(8):
        pol = np.asarray(agent.policy())
        gamma = min(0.5, (k + 1) ** (-1 / 3))
        assert pol.min() >= gamma / tiny.A - 1e-12  # the uniform share written out
        # the covariance it will use: past features only, plus the ridge k^(-1/3) I
        expected = second / max(k, 1) + (k + 1) ** (-1 / 3) * np.eye(tiny.d)
        assert np.allclose(agent.covariance(None), expected, atol=1e-12)
        states, actions, observed = tiny.rollout(pol, theta[k], env)
        agent.update(states, actions, observed, Refusing())
        x = tiny.phi[states, actions]  # (B, H, d)
        second += np.einsum("bhi,bhj->bhij", x, x)


def test_simulator_free_rejects_covariance_rollouts():
    with pytest.raises(ValueError, match="covariance_rollouts needs a simulator"):
        tl.run(
            "ftrl-log-barrier-linear-q-simulator-free",
            TINY,
            episodes=5,
            seeds=1,
            covariance_rollouts=10,
        )


def test_never_decaying_exploration_mutation_sticks_at_one_half(tiny):
    from theorylab.validations.adversarial_mutations import (
        adv_simulator_free_exploration_never_decays,
    )

    agent = SimulatorFreeLogBarrierFTRL(tiny, 1, [np.random.default_rng(0)], 100)
    agent.k = 1000
    assert agent.exploration() == pytest.approx(0.1)
    with adv_simulator_free_exploration_never_decays():
        assert agent.exploration() == 0.5


# ------------------------------------------------------------------------- algorithm 2: tabular,
# its estimator's magnitude bound and the controls of its claims
def test_one_hot_algorithm_2_run_equals_the_tabular_exp_weights_loop():
    from theorylab.validations.adversarial_mutations import adv_exp_weights_baseline_exploration
    from theorylab.validations.claims.adversarial import TABULAR_INSTANCE, tabular_twin

    mdp = make(TABULAR_INSTANCE)
    twin = tabular_twin(mdp, 40, 3, 7, 4.0, learner="exp-weights")
    algo = "exp-weights-magnitude-reduced-linear-q"
    run = tl.run(algo, mdp, episodes=40, seeds=3, seed=7, eta_scale=4.0)
    assert np.abs(run.returns - twin).max() <= 1e-9
    with adv_exp_weights_baseline_exploration():  # the control of the claim departs from it
        bad = tl.run(algo, mdp, episodes=40, seeds=3, seed=7, eta_scale=4.0)
    assert np.abs(bad.returns - twin).max() > 1e-6


def test_tabular_exp_weights_written_out_by_hand():
    from theorylab.validations.claims.adversarial import tabular_exp_weights

    L = np.array([0.0, 2.0, -1.0]).reshape(1, 1, 1, 3)  # (B, H=1, S=1, A=3)
    k, c, c2 = 9, 6.0, 0.5
    eta = c / (1 * 3.0)  # c / (H sqrt k), H = 1, sqrt 9 = 3
    gamma = min(0.5, c2 * eta)  # = 0.5 (capped)
    w = np.array([1.0, np.exp(-4.0), np.exp(2.0)])  # exp(-eta L)
    expected = (1 - gamma) * w / w.sum() + gamma / 3
    assert np.allclose(tabular_exp_weights(L, k, c, c2)[0, 0, 0], expected, atol=1e-15)


def test_support_magnitude_equals_a_loop_over_pairs(tiny):
    from theorylab.validations.claims.adversarial import support_magnitude

    rng = np.random.default_rng(3)
    pol = rng.dirichlet(np.ones(2), size=(2, 2, 2))  # (B, H, S, A)
    cov = tiny.covariance(pol)
    got = support_magnitude(tiny.phi, cov)
    for b in range(2):
        best = 0.0
        for h in range(tiny.H):
            inv = np.linalg.pinv(cov[b, h], rcond=1e-10, hermitian=True)
            for s, a, t, e in itertools.product(range(2), range(2), range(2), range(2)):
                value = abs(tiny.phi[s, a] @ inv @ tiny.phi[t, e]) * (tiny.H - h)
                best = max(best, value)
        assert got[b] == pytest.approx(best, rel=1e-9)


@pytest.mark.parametrize("gamma", [0.02, 0.2, 0.5])
def test_magnitude_bound_holds_for_mixed_policies_and_is_written_out(gamma):
    from theorylab.validations.claims.adversarial import magnitude_bound, support_magnitude

    mdp = make("adversarial-linear:S=4,A=3,d=4,H=3,seed=2")
    rng = np.random.default_rng(5)
    base = rng.dirichlet(np.full(3, 0.05), size=(6, 3, 4))  # (B, H, S, A) nearly deterministic
    pol = (1 - gamma) * base + gamma / 3
    bound = magnitude_bound(mdp, pol, gamma)
    assert np.all(support_magnitude(mdp.phi, mdp.covariance(pol)) <= bound)
    # the bound by hand for seed 0: state distribution by a forward recursion
    P = np.broadcast_to(mdp.model.dense_P(), (3, 4, 3, 4))
    d, lams = mdp.mu0.copy(), []
    for h in range(3):
        uniform = sum(
            d[s] * np.outer(mdp.phi[s, a], mdp.phi[s, a]) for s in range(4) for a in range(3)
        )
        lams.append(np.linalg.eigvalsh(uniform / 3)[0])
        d = np.einsum("s,sa,sat->t", d, pol[0, h], P[h])
    norm2 = max(float(mdp.phi[s, a] @ mdp.phi[s, a]) for s in range(4) for a in range(3))
    assert bound[0] == pytest.approx(3 * norm2 / (gamma * min(lams)), rel=1e-9)


def test_magnitude_mutations_set_the_share():
    from theorylab.validations.adversarial_mutations import (
        adv_exp_weights_baseline_exploration,
        adv_exp_weights_no_uniform_share,
    )

    agent = MagnitudeReducedExpWeights(make(TINY), 1, [np.random.default_rng(0)], 100)
    agent.k = 1000
    clean = agent.exploration()
    with adv_exp_weights_no_uniform_share():
        assert agent.exploration() == 0.0
    with adv_exp_weights_baseline_exploration():
        assert agent.exploration() == pytest.approx(1000 ** (-1 / 3))
    assert agent.exploration() == clean


def test_without_the_share_the_estimate_leaves_the_bound():
    from theorylab.validations.adversarial_mutations import adv_exp_weights_no_uniform_share
    from theorylab.validations.claims.adversarial import MAGNITUDE_INSTANCES, magnitude_trace

    spec = MAGNITUDE_INSTANCES[1]
    clean = magnitude_trace(spec, 60, 2, 0)
    assert np.all(clean["reduced"] <= clean["bound"])
    with adv_exp_weights_no_uniform_share():
        bad = magnitude_trace(spec, 60, 2, 0)
    assert np.any(bad["reduced"] > bad["bound"])
    assert np.allclose(bad["reduced"], bad["raw"])


def test_one_hot_algorithm_2_is_the_tabular_map_at_every_step():
    from theorylab.validations.adversarial_mutations import adv_exp_weights_baseline_exploration
    from theorylab.validations.claims.adversarial import TABULAR_INSTANCE, tabular_map_gap

    mdp = make(TABULAR_INSTANCE)
    assert tabular_map_gap(mdp, 60, 2, 3, 4.0) <= 1e-9
    with adv_exp_weights_baseline_exploration():
        assert tabular_map_gap(mdp, 60, 2, 3, 4.0) > 1e-6
