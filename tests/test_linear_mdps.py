"""Linear, misspecified and low-rank MDPs and linear bandits: exact models, families, validation.

* ``LinearMDP.to_tabular`` equals a TabularMDP built entry by entry from (phi, mu, theta);
* the one-hot embedding of a TabularMDP is the same MDP;
* every invalid input raises InvalidMDPError naming the offending index and value;
* the family constructions (simplex, hard instance, misspecified, low-rank, bandit) have the
  properties their docstrings state.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import settings as hsettings
from hypothesis import strategies as st

from theorylab.algorithms.planning import backward_induction, evaluate_policies
from theorylab.errors import InvalidMDPError
from theorylab.mdps import TabularMDP, list_families, make
from theorylab.mdps.linear import LinearBandit, LinearMDP, MisspecifiedLinearMDP, one_hot_linear
from theorylab.mdps.lowrank import LowRankMDP, random_simplex, simplex_feature_class

LINEAR_FAMILIES = (
    "linear-simplex",
    "onehot",
    "hard-linear",
    "linear-misspecified",
    "lowrank-simplex",
    "linear-bandit",
)


def simplex_parts(seed=0, S=4, A=3, d=3, H=3):
    rng = np.random.default_rng(seed)
    phi = random_simplex(rng, (S, A), d)  # (S, A, d)
    mu = random_simplex(rng, (H, d), S)  # (H, d, S)
    theta = rng.uniform(size=(H, d))  # (H, d)
    return phi, mu, theta


def test_families_are_registered():
    names = list_families()
    for fam in LINEAR_FAMILIES:
        assert fam in names


def test_to_tabular_equals_direct_construction():
    phi, mu, theta = simplex_parts()
    S, A, d = phi.shape
    H = mu.shape[0]
    lin = LinearMDP(phi, mu, theta, horizon=H)
    P = np.zeros((H, S, A, S))
    R = np.zeros((H, S, A))
    for h in range(H):
        for s in range(S):
            for a in range(A):
                R[h, s, a] = sum(phi[s, a, i] * theta[h, i] for i in range(d))
                for t in range(S):
                    P[h, s, a, t] = sum(phi[s, a, i] * mu[h, i, t] for i in range(d))
    direct = TabularMDP(P, R, horizon=H)
    tab = lin.to_tabular()
    assert type(tab) is TabularMDP
    np.testing.assert_allclose(tab.P, direct.P, rtol=0, atol=1e-15)
    np.testing.assert_allclose(tab.R, direct.R, rtol=0, atol=1e-15)
    np.testing.assert_array_equal(tab.mu0, direct.mu0)
    assert tab.stage_dependent and tab.horizon == H
    assert backward_induction(tab).value == pytest.approx(
        backward_induction(direct).value, abs=1e-12
    )
    # the LinearMDP itself is the same exact model (it is a TabularMDP)
    pi = np.random.default_rng(1).integers(0, A, size=(5, H, S))
    np.testing.assert_allclose(
        evaluate_policies(lin, pi, batched=True),
        evaluate_policies(direct, pi, batched=True),
        atol=1e-13,
    )


def test_stationary_factors_give_stationary_model():
    phi, mu, theta = simplex_parts(H=4)
    lin = LinearMDP(phi, mu[0], theta[0], horizon=4)
    assert not lin.stage_dependent and lin.P.shape == (4, 3, 4)
    assert lin.R.shape == (4, 3)
    assert lin.mu.shape == (4, 3, 4) and lin.theta.shape == (4, 3)
    mixed = LinearMDP(phi, mu[0], theta, horizon=4)  # stationary P, stage-dependent rewards
    assert not mixed.stage_dependent and mixed.R.shape == (4, 4, 3)


def test_one_hot_embedding_is_the_same_mdp():
    base = make("riverswim:S=6,H=20")
    lin = one_hot_linear(base)
    assert lin.d == base.S * base.A
    np.testing.assert_array_equal(lin.phi.reshape(12, 12), np.eye(12))
    tab = lin.to_tabular()
    assert not tab.stage_dependent
    np.testing.assert_array_equal(tab.P, base.dense_P())
    np.testing.assert_array_equal(tab.R, base.R)
    assert backward_induction(tab).value == backward_induction(base).value
    fam = make("onehot:base=riverswim;S=6;H=20")
    np.testing.assert_array_equal(fam.P, lin.P)
    assert fam.name == "onehot:base=riverswim;S=6;H=20"


# ------------------------------------------------------------------ invalid inputs
def test_feature_norm_above_one_names_the_pair():
    phi, mu, theta = simplex_parts()
    phi = phi.copy()
    phi[2, 1] = [1.0, 1.0, 0.0]
    with pytest.raises(InvalidMDPError, match=r"\|\|phi\(s=2, a=1\)\|\|_2 = 1.41421 > 1"):
        LinearMDP(phi, mu, theta, horizon=3)


def test_negative_transition_names_h_s_a():
    phi, mu, theta = simplex_parts()
    mu = mu.copy()
    mu[1, :, 0] -= 0.5  # every pair at h = 1 loses mass on s' = 0
    mu[1, :, 1] += 0.5
    with pytest.raises(
        InvalidMDPError, match=r"not a distribution at \(h=1, s=0, a=0\): probability of s'=0"
    ):
        LinearMDP(phi, mu, theta, horizon=3)


def test_row_sum_names_h_s_a_and_value():
    phi, mu, theta = simplex_parts()
    mu = mu.copy()
    mu[2] *= 1.1
    with pytest.raises(InvalidMDPError, match=r"at \(h=2, s=0, a=0\): it sums to 1.1"):
        LinearMDP(phi, mu, theta, horizon=3)


def test_reward_out_of_range_names_h_s_a():
    phi, mu, theta = simplex_parts()
    theta = theta.copy()
    theta[0] = 2.0  # r = 2 everywhere at h = 0
    with pytest.raises(InvalidMDPError, match=r"\(h=0, s=0, a=0\) is 2, rewards must lie in"):
        LinearMDP(phi, mu, theta, horizon=3)


@pytest.mark.parametrize(
    "change, message",
    [
        (lambda p, m, t: (p[..., :2], m, t), r"mu must have shape \(H, d, S\) = \(3, 2, 4\)"),
        (lambda p, m, t: (p, m[:2], t), r"mu must have shape \(H, d, S\) = \(3, 3, 4\)"),
        (lambda p, m, t: (p, m, t[:, :2]), r"theta must have shape \(H, d\) = \(3, 3\)"),
        (lambda p, m, t: (p[0], m, t), r"phi must have shape \(S, A, d\)"),
    ],
)
def test_shape_errors(change, message):
    phi, mu, theta = change(*simplex_parts())
    with pytest.raises(InvalidMDPError, match=message):
        LinearMDP(phi, mu, theta, horizon=3)


def test_non_finite_and_horizon_errors():
    phi, mu, theta = simplex_parts()
    bad = phi.copy()
    bad[1, 2, 0] = np.nan
    with pytest.raises(InvalidMDPError, match=r"phi is not finite at \(s=1, a=2, i=0\)"):
        LinearMDP(bad, mu, theta, horizon=3)
    with pytest.raises(InvalidMDPError, match="horizon must be a positive integer"):
        LinearMDP(phi, mu, theta, horizon=0)


def test_round_off_zeros_are_accepted():
    # exact zeros computed as -1e-17 must not be rejected (hard instance: 1 - delta - Delta = 0)
    m = make("hard-linear:d=3,H=4,gap=1.0")
    assert m.P.min() >= 0.0


# ------------------------------------------------------------------ families
def test_linear_simplex_law_and_determinism():
    m = make("linear-simplex:S=7,A=2,d=4,H=3,seed=5")
    assert isinstance(m, LinearMDP) and m.d == 4 and m.stage_dependent
    np.testing.assert_allclose(m.phi.sum(-1), 1.0)
    assert m.phi.min() >= 0
    np.testing.assert_allclose(m.mu.sum(-1), 1.0)
    np.testing.assert_allclose(m.theta.sum(-1), 1.0)  # rewards=simplex
    again = make("linear-simplex:S=7,A=2,d=4,H=3,seed=5")
    np.testing.assert_array_equal(m.P, again.P)
    other = make("linear-simplex:S=7,A=2,d=4,H=3,seed=6")
    assert not np.array_equal(m.P, other.P)
    cube = make("linear-simplex:S=7,A=2,d=4,H=3,seed=5,rewards=cube,stationary=true")
    assert not cube.stage_dependent and cube.theta.max() > 0
    with pytest.raises(InvalidMDPError, match="rewards must be 'simplex' or 'cube'"):
        make("linear-simplex:rewards=gauss")


@hsettings(max_examples=25)
@given(
    S=st.integers(1, 6),
    A=st.integers(1, 4),
    d=st.integers(1, 5),
    H=st.integers(1, 4),
    seed=st.integers(0, 10**6),
    conc=st.sampled_from([0.1, 1.0, 3.0]),
)
def test_random_simplex_mdps_are_valid(S, A, d, H, seed, conc):
    m = make(f"linear-simplex:S={S},A={A},d={d},H={H},seed={seed},concentration={conc}")
    P = np.broadcast_to(m.dense_P(), (H, S, A, S))
    np.testing.assert_allclose(P, np.einsum("sad,hdt->hsat", m.phi, m.mu), atol=1e-15)
    assert np.all(np.linalg.norm(m.phi, axis=-1) <= 1 + 1e-12)


def test_hard_linear_instance():
    d, H, gap = 4, 10, 0.5
    m = make(f"hard-linear:d={d},H={H},gap={gap},sign_seed=3")
    delta, Delta = 1 / H, gap / H
    signs = np.random.default_rng(3).choice([-1.0, 1.0], size=d - 1)
    theta = signs * Delta / (d - 1)
    assert m.S == 2 and m.A == 2 ** (d - 1) and m.d == d + 1
    np.testing.assert_allclose(np.linalg.norm(m.phi, axis=-1), 1.0)
    import itertools

    actions = np.array(list(itertools.product([-1.0, 1.0], repeat=d - 1)))
    np.testing.assert_allclose(m.P[0, :, 1], delta + actions @ theta, atol=1e-14)
    np.testing.assert_allclose(m.P[1, :, 1], 1 - delta, atol=1e-14)
    np.testing.assert_array_equal(m.R[0], 0.0)
    np.testing.assert_array_equal(m.R[1], 1.0)
    best = int(np.argmax(actions @ theta))
    np.testing.assert_array_equal(actions[best], signs)
    sol = backward_induction(m)
    assert np.all(sol.policy[:-1, 0] == best)  # the last step's action does not matter
    with pytest.raises(InvalidMDPError, match="gap must lie in"):
        make("hard-linear:gap=0")


def test_misspecified_is_within_epsilon():
    m = make("linear-misspecified:S=6,A=3,d=3,H=4,epsilon=0.2")
    assert isinstance(m, MisspecifiedLinearMDP)
    assert 0 < m.misspecification["tv"] <= 0.2 + 1e-12
    assert 0 < m.misspecification["reward"] <= 0.2 + 1e-12
    np.testing.assert_array_equal(m.phi, m.nominal.phi)
    zero = MisspecifiedLinearMDP(m.nominal, 0.0)
    np.testing.assert_allclose(zero.P, np.broadcast_to(m.nominal.dense_P(), zero.P.shape))
    with pytest.raises(InvalidMDPError, match="epsilon must lie in"):
        MisspecifiedLinearMDP(m.nominal, 1.5)


def test_lowrank_hides_the_truth_and_contains_it():
    m = make("lowrank-simplex:S=6,A=2,d=3,H=3,seed=1,n_random=3,n_perturbed=2")
    assert isinstance(m, LowRankMDP) and m.n_candidates == 6
    assert not hasattr(m, "phi") and not hasattr(m, "features")
    truth = m.reveal()
    np.testing.assert_array_equal(m.candidates[truth.index], truth.phi)
    others = [j for j in range(m.n_candidates) if j != truth.index]
    assert all(not np.array_equal(m.candidates[j], truth.phi) for j in others)
    np.testing.assert_allclose(m.to_linear().P, m.P)
    np.testing.assert_allclose(m.candidates.sum(-1), 1.0)  # a simplex class
    # near distractors differ from the truth on a fraction of the pairs only
    diff = (m.candidates != truth.phi[None]).any(-1).mean(axis=(1, 2))  # (M,)
    assert sorted(diff)[0] == 0.0 and np.sum((diff > 0) & (diff < 1)) == 2


def test_lowrank_realisability_is_checked():
    phi, mu, theta = simplex_parts()
    cands, idx = simplex_feature_class(phi, np.random.default_rng(0), n_random=2, n_perturbed=0)
    LowRankMDP(phi, mu, theta, cands, horizon=3)
    without = np.delete(cands, idx, axis=0)
    with pytest.raises(InvalidMDPError, match="does not contain the true features"):
        LowRankMDP(phi, mu, theta, without, horizon=3)


def test_linear_bandit():
    m = make("linear-bandit:d=4,A=10,seed=2")
    assert isinstance(m, LinearBandit) and m.horizon == 1 and m.S == 1
    np.testing.assert_allclose(np.linalg.norm(m.arms, axis=1), 1.0)
    assert np.linalg.norm(m.theta) == pytest.approx(1.0)
    np.testing.assert_allclose(m.R[0], m.arms @ m.theta)
    assert m.R.min() >= 0 and m.R.max() <= 1 and m.reward_model == "bernoulli"
    assert m.gap.min() == 0.0
    with pytest.raises(InvalidMDPError, match="arm a=0 is -0.5"):
        LinearBandit(np.array([[1.0, 0.0]]), np.array([-0.5, 0.0]))
