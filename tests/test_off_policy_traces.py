"""Off-policy traces (001#6, ``trajectory_traces``) and orchestrated value mapping (001#5,
``value_mapping``): trace coefficients pinned to the printed formulas (written out here), exact
operators against independent answers, the learners' input errors, and the mutations failing."""

from __future__ import annotations

import numpy as np
import pytest

import theorylab as tl
from theorylab.algorithms.policy_optimization import trajectory_traces as tt
from theorylab.algorithms.policy_optimization import value_mapping as vm
from theorylab.algorithms.policy_optimization.leverage_average import optimal_q, q_of_policy
from theorylab.mdps import TabularMDP


def small_mdp(seed: int = 0, S: int = 3, A: int = 2, gamma: float = 0.7) -> TabularMDP:
    rng = np.random.default_rng(seed)
    P = rng.dirichlet(np.ones(S), size=(S, A))
    return TabularMDP(P, rng.uniform(size=(S, A)), np.ones(S) / S, gamma=gamma)


def eps_greedy(S: int, A: int, eps: float, seed: int = 1) -> np.ndarray:
    pi = np.full((S, A), eps / A)
    pi[np.arange(S), np.random.default_rng(seed).integers(A, size=S)] += 1 - eps
    return pi


# ------------------------------------------------------------------ the printed trace formulas
@pytest.mark.parametrize("trace", tt.TRACES)
@pytest.mark.parametrize("lam", [0.0, 0.3, 0.9, 1.0])
def test_trace_coefficients_match_the_printed_formulas(trace, lam):
    rho = np.array([1.7, 0.4, 2.5, 1.0, 0.0, 3.0, 0.8])  # rho_1 .. rho_7
    # Daley et al. (2023) / the authors' eligibility_traces.py, written out term by term:
    expected = []
    for t in range(1, len(rho) + 1):
        r = rho[:t]
        if trace == "pdis":
            expected.append(np.prod(lam * r))
        elif trace == "retrace":
            expected.append(np.prod(lam * np.minimum(1.0, r)))
        elif trace == "truncated-is":
            expected.append(lam**t * min(1.0, np.prod(r)))
        else:  # rbis: beta_t = min(lam^t, rho_t beta_{t-1}), beta_0 = 1
            prev = expected[-1] if expected else 1.0
            expected.append(min(lam**t, r[-1] * prev))
    z, got = np.ones(1), []
    for t in range(1, len(rho) + 1):
        beta, z = tt.trace_step(trace, t, z, rho[t - 1 : t], lam)
        got.append(float(beta[0]))
    np.testing.assert_allclose(got, expected, rtol=1e-14, atol=0)


def test_rbis_is_bounded_by_both_lambda_t_and_the_is_product():
    rng = np.random.default_rng(3)
    rho = rng.uniform(0, 3, size=40)
    z = np.ones(1)
    for t in range(1, 41):
        beta, z = tt.trace_step("rbis", t, z, rho[t - 1 : t], 0.9)
        assert beta[0] <= 0.9**t + 1e-15
        assert beta[0] <= np.prod(rho[:t]) + 1e-12


# ---------------------------------------------------------------- exact operators, independent
@pytest.mark.parametrize("trace", tt.PER_DECISION)
@pytest.mark.parametrize("lam", [0.4, 1.0])
def test_propagated_weights_equal_the_closed_form(trace, lam):
    mdp = small_mdp()
    pi, mu = eps_greedy(3, 2, 0.2), np.full((3, 2), 0.5)
    rho = pi / mu
    c = lam * (rho if trace == "pdis" else np.minimum(1.0, rho))
    Pc = np.einsum("sat,tb->satb", mdp.dense_P(), mu * c).reshape(6, 6)
    closed = np.linalg.inv(np.eye(6) - mdp.gamma * Pc)  # written out, not imported
    W = tt.trace_weights(mdp, pi, mu, trace, lam, tol=1e-13, prune=0.0)
    np.testing.assert_allclose(W, closed, atol=1e-9)


@pytest.mark.parametrize("trace", tt.TRACES)
def test_evaluation_fixed_point_is_q_pi_and_m_contracts(trace):
    mdp = small_mdp(seed=2, gamma=0.6)
    pi, mu = eps_greedy(3, 2, 0.3), np.full((3, 2), 0.5)
    W = tt.trace_weights(mdp, pi, mu, trace, 0.8, tol=1e-10, prune=1e-10)
    assert tt.contraction_modulus(mdp, pi, W) <= mdp.gamma + 1e-9
    Q = np.zeros((3, 2))
    for _ in range(200):
        Q = tt.apply_operator(mdp, Q, pi, W)
    v = np.linalg.solve(
        np.eye(3) - mdp.gamma * np.einsum("sat,sa->st", mdp.dense_P(), pi),
        (pi * mdp.reward(0)).sum(1),
    )  # V^pi by its own linear solve
    q_pi = mdp.reward(0) + mdp.gamma * mdp.dense_P() @ v
    np.testing.assert_allclose(Q, q_pi, atol=1e-12)


@pytest.mark.parametrize("trace", tt.TRACES)
def test_control_through_tl_run_reaches_q_star(trace):
    mdp = small_mdp(seed=4, gamma=0.7)
    res = tl.run("trajectory-traces", mdp, iterations=80, trace=trace, lam=1.0)
    assert res.config["q_error"][-1] <= 1e-10
    V = np.zeros(3)
    for _ in range(2000):  # Q* by plain value iteration, written out
        V = (mdp.reward(0) + mdp.gamma * mdp.dense_P() @ V).max(axis=1)
    assert abs(res.target_value - V @ mdp.mu0) <= 1e-10


def test_q_lambda_mutation_breaks_the_contraction():
    from theorylab.validations.traces_mutations import rbis_without_is

    mdp = small_mdp(seed=5, gamma=0.8)
    pi, mu = eps_greedy(3, 2, 0.1), np.full((3, 2), 0.5)
    with rbis_without_is():
        W = tt.trace_weights(mdp, pi, mu, "rbis", 1.0)
        assert tt.contraction_modulus(mdp, pi, W) > mdp.gamma


# --------------------------------------------------------------------------- sampled learner
def test_sampled_traces_agree_at_lambda_zero_and_are_seeded():
    mdp = small_mdp(seed=6)
    pi, mu = eps_greedy(3, 2, 0.2), np.full((3, 2), 0.5)
    kw = dict(episodes=50, length=10, alpha=0.1, seeds=[0, 1], record_every=10)
    runs = [tt.sampled_evaluation(mdp, pi, mu, t, 0.0, **kw) for t in tt.TRACES]
    for r in runs[1:]:  # lambda = 0: every trace is one-step expected-SARSA TD
        np.testing.assert_array_equal(r, runs[0])
    again = [tt.sampled_evaluation(mdp, pi, mu, "rbis", 0.5, **kw) for _ in range(2)]
    np.testing.assert_array_equal(again[0], again[1])


def test_sampled_learner_approaches_q_pi():
    mdp = small_mdp(seed=7, gamma=0.6)
    pi, mu = eps_greedy(3, 2, 0.2), np.full((3, 2), 0.5)
    err = tt.sampled_evaluation(mdp, pi, mu, "rbis", 0.9, episodes=3000, length=20, alpha=0.02,
                                seeds=[0], record_every=300)  # fmt: skip
    q_pi = q_of_policy(mdp, pi)
    assert err[0, -1] <= 0.05 * np.abs(q_pi).max()
    assert err[0, -1] < 0.05 * np.sqrt((q_pi**2).mean())  # the error of Q_0 = 0


# ------------------------------------------------------------------------------- input errors
@pytest.mark.parametrize(
    ("params", "match"),
    [
        ({"trace": "vtrace"}, "trace must be one of"),
        ({"lam": 1.5}, "lam must be a number in"),
        ({"behaviour_eps": 0.0}, "behaviour_eps must be"),
    ],
)
def test_trajectory_traces_bad_input(params, match):
    with pytest.raises(ValueError, match=match):
        tl.run("trajectory-traces", small_mdp(), iterations=2, **params)


def test_behaviour_must_cover_the_target():
    mdp = small_mdp()
    pi = np.full((3, 2), 0.5)
    mu = np.tile([1.0, 0.0], (3, 1))
    with pytest.raises(ValueError, match="behaviour mu must be > 0"):
        tt.trace_weights(mdp, pi, mu, "retrace", 0.5)


# ------------------------------------------------------------------- orchestrated value mapping
def test_identity_single_channel_is_q_learning_bit_for_bit():
    mdp = small_mdp(seed=8, S=4, A=3, gamma=0.8)
    K = 300
    qs, _ = vm.mapped_q_learning(mdp, K, mapping="identity", channels="single", seed=9)
    cdf, g = np.cumsum(mdp.dense_P(), axis=2), mdp.gamma
    rng = np.random.default_rng(9)
    Q = np.zeros((4, 3))
    for k in range(K):  # textbook synchronous Q-learning, the same draws
        nxt = np.minimum((cdf < rng.random((4, 3, 1))).sum(axis=2), 3)
        target = mdp.reward(0) + g * Q[nxt, np.argmax(Q, axis=1)[nxt]]
        Q = Q + (1.0 + (1.0 - g) * k) ** -1.0 * (target - Q)
    assert np.array_equal(qs[-1], Q)


@pytest.mark.parametrize("channels", vm.CHANNELS)
def test_channels_decompose_the_reward(channels):
    R = np.random.default_rng(0).uniform(size=(4, 3))
    parts, w = vm.channel_rewards(R, channels, seed=1)
    np.testing.assert_allclose(np.tensordot(w, parts, axes=1), R, atol=1e-14)


@pytest.mark.parametrize(
    ("mapping", "channels", "beta_f"),
    [("log", "sign", 1.0), ("log", "sign", 0.5), ("identity", "shifted", 1.0),
     ("identity", "scales", 1.0), ("square", "single", 1.0)],
)  # fmt: skip
def test_mapped_configurations_converge_to_q_star(mapping, channels, beta_f):
    mdp = small_mdp(seed=10, S=4, A=2, gamma=0.7)
    res = tl.run("orchestrated-q", mdp, iterations=3000, mapping=mapping, channels=channels,
                 beta_f=beta_f, seed=3)  # fmt: skip
    scale = np.abs(optimal_q(mdp)).max()
    gap = res.config["q_error"]
    assert gap[-1] <= 0.05 * scale
    assert gap[-1] <= 0.5 * gap[300]


def test_non_injective_map_on_negative_channels_does_not_converge():
    mdp = small_mdp(seed=10, S=4, A=2, gamma=0.7)
    res = tl.run("orchestrated-q", mdp, iterations=3000, mapping="square", channels="shifted")
    assert res.config["q_error"][-1] >= 0.2 * np.abs(optimal_q(mdp)).max()


def test_folded_inverse_mutation_breaks_convergence():
    from theorylab.validations.traces_mutations import value_map_folded_inverse

    mdp = small_mdp(seed=10, S=4, A=2, gamma=0.7)
    with value_map_folded_inverse():
        qs, _ = vm.mapped_q_learning(mdp, 2000, mapping="identity", channels="shifted")
    assert np.abs(qs[-1] - optimal_q(mdp)).max() >= 0.2 * np.abs(optimal_q(mdp)).max()


@pytest.mark.parametrize(
    ("params", "match"),
    [
        ({"mapping": "cube"}, "mapping must be one of"),
        ({"channels": "many"}, "channels must be one of"),
        ({"beta_f": 1.5}, "beta_f must lie in"),
        ({"power": 0.3}, "power must lie in"),
        ({"mapping": "log", "channels": "shifted"}, "log mapping needs channel rewards >= 0"),
    ],
)
def test_orchestrated_q_bad_input(params, match):
    with pytest.raises(ValueError, match=match):
        tl.run("orchestrated-q", small_mdp(), iterations=2, **params)
