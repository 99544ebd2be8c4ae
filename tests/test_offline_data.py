"""Offline datasets and coverage: exact occupancies and C* against brute force, sampling
frequencies against the behaviour occupancy, seed reproducibility, and input validation."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import scipy.stats as st

from theorylab.algorithms.offline import (
    EmptyDatasetError,
    InvalidCoverageError,
    InvalidDatasetError,
    InvalidDatasetSizeError,
    behaviour_policy,
    clipped_concentrability,
    concentrability,
    dataset_concentrability,
    fit,
    make_dataset,
    occupancy,
    pevi_coverage,
    population_dataset,
)
from theorylab.algorithms.offline.coverage import optimal_solution
from theorylab.algorithms.registry import get_algorithm, list_algorithms
from theorylab.mdps import make
from theorylab.mdps.families.offline_instances import (
    naive_failure_limit,
    tempting_arms_coverage,
)

FAIL_PROB = 1e-6


def _random_finite(seed: int, S: int = 3, A: int = 2, H: int = 3):
    return make(f"random:S={S},A={A},H={H},seed={seed}")


def _random_discounted(seed: int, S: int = 4, A: int = 2, gamma: float = 0.7):
    return make(f"random:S={S},A={A},seed={seed},gamma={gamma}").with_objective(gamma=gamma)


# ------------------------------------------------------------------------------ brute force
def _brute_force_stage_occupancy(mdp, pi: np.ndarray) -> np.ndarray:
    """d_h(s, a) by enumerating every path (s_0, a_0, ..., s_{H-1}, a_{H-1}) and its probability."""
    H, S, A = mdp.horizon, mdp.S, mdp.A
    P = mdp.dense_P()
    d = np.zeros((H, S, A))
    for path in itertools.product(range(S), range(A), repeat=H):
        states, actions = path[0::2], path[1::2]
        prob = mdp.mu0[states[0]]  # probability of the whole path
        for h in range(H):
            prob *= pi[h, states[h], actions[h]]
            if h + 1 < H:
                prob *= P[states[h], actions[h], states[h + 1]]
        for h in range(H):  # marginalise: the path contributes to each (h, s_h, a_h)
            d[h, states[h], actions[h]] += prob
    return d


def _brute_force_discounted_occupancy(mdp, pi: np.ndarray, steps: int = 4000) -> np.ndarray:
    """(1 - gamma) sum_t gamma^t Pr(s_t, a_t) by propagating the state distribution."""
    g, P = mdp.gamma, mdp.dense_P()
    state = np.array(mdp.mu0, dtype=float)
    d = np.zeros((mdp.S, mdp.A))
    for t in range(steps):
        sa = state[:, None] * pi
        d += (1 - g) * g**t * sa
        state = np.einsum("sa,sat->t", sa, P)
    return d


def _brute_force_ratio(d_star, mu, clip=None):
    target = d_star if clip is None else np.minimum(d_star, clip)
    best = 0.0
    for idx in np.ndindex(*d_star.shape):
        if target[idx] > 0:
            best = max(best, np.inf if mu[idx] == 0 else target[idx] / mu[idx])
    return best


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("other", ["uniform", "adversarial"])
def test_finite_horizon_concentrability_equals_brute_force(seed, other):
    mdp = _random_finite(seed)
    sol = optimal_solution(mdp)
    pi_b = behaviour_policy(mdp, 0.3, other, solution=sol)
    d_star = _brute_force_stage_occupancy(mdp, np.eye(mdp.A)[sol.policy])
    mu = _brute_force_stage_occupancy(mdp, pi_b)
    np.testing.assert_allclose(occupancy(mdp, pi_b), mu, rtol=0, atol=1e-14)
    np.testing.assert_allclose(occupancy(mdp, sol.policy), d_star, rtol=0, atol=1e-14)
    ds = make_dataset(mdp, 30, coverage=0.3, other=other)
    cover = dataset_concentrability(mdp, ds)
    assert cover["C_star"] == pytest.approx(_brute_force_ratio(d_star, mu), rel=1e-12)
    assert cover["C_star_clipped"] == pytest.approx(
        _brute_force_ratio(d_star, mu, clip=1.0 / mdp.S), rel=1e-12
    )


@pytest.mark.parametrize("seed", [0, 3])
def test_discounted_concentrability_equals_brute_force(seed):
    mdp = _random_discounted(seed)
    sol = optimal_solution(mdp)
    pi_b = behaviour_policy(mdp, 0.4, "adversarial", solution=sol)
    d_star = _brute_force_discounted_occupancy(mdp, np.eye(mdp.A)[sol.policy])
    mu = _brute_force_discounted_occupancy(mdp, pi_b)
    np.testing.assert_allclose(occupancy(mdp, pi_b), mu, atol=1e-12)
    ratio = _brute_force_ratio(d_star, mu)
    assert concentrability(occupancy(mdp, sol.policy), occupancy(mdp, pi_b)) == pytest.approx(
        ratio, rel=1e-9
    )
    clipped = _brute_force_ratio(d_star, mu, clip=1.0 / mdp.S)
    assert clipped_concentrability(d_star, mu, mdp.S) == pytest.approx(clipped, rel=1e-9)


def test_occupancy_agrees_with_the_lp_module_when_present():
    lp = pytest.importorskip("theorylab.algorithms.planning.lp")
    mdp = _random_discounted(5)
    pi_b = behaviour_policy(mdp, 0.2, "uniform")
    np.testing.assert_allclose(occupancy(mdp, pi_b), lp.occupancy_measure(mdp, pi_b), atol=1e-12)
    fh = _random_finite(5)
    pi_f = behaviour_policy(fh, 0.2, "uniform")
    np.testing.assert_allclose(occupancy(fh, pi_f), lp.occupancy_measure(fh, pi_f), atol=1e-12)


def test_contextual_bandit_concentrability_is_one_over_weight():
    """Contexts do not depend on actions, so C* = 1 / pi_b(a* | s) exactly."""
    mdp = make("multiscale-bandit:n_gap=3,n_mass=3")
    for w in (0.1, 0.5, 1.0):
        ds = make_dataset(mdp, 10, coverage=w, other="adversarial")
        assert dataset_concentrability(mdp, ds)["C_star"] == pytest.approx(1.0 / w, rel=1e-12)
        ds = make_dataset(mdp, 10, coverage=w, other="uniform")
        assert dataset_concentrability(mdp, ds)["C_star"] == pytest.approx(
            1.0 / (w + (1 - w) / 2), rel=1e-12
        )
    ds = make_dataset(mdp, 10, coverage=0.0, other="adversarial")
    assert dataset_concentrability(mdp, ds)["C_star"] == np.inf


# ------------------------------------------------------------------------------ frequencies
def _binomial_ok(counts, n, p, n_tests):
    """Two-sided binomial acceptance region at total failure probability FAIL_PROB."""
    alpha = FAIL_PROB / (2 * n_tests)
    lo = st.binom.ppf(alpha, n, p)
    hi = st.binom.isf(alpha, n, p)
    return (counts >= lo) & (counts <= hi)


@pytest.mark.parametrize("kind", ["trajectories", "samples"])
def test_finite_horizon_frequencies_match_the_behaviour_occupancy(kind):
    mdp = make("random:S=4,A=3,H=3,seed=7")
    ds = make_dataset(mdp, 60_000, coverage=0.3, other="adversarial", kind=kind, seeds=2, seed=3)
    mu = ds.data_distribution  # (H, S, A)
    H, S, A = mu.shape
    P = mdp.dense_P()
    for b in range(ds.n_seeds):
        flat = (ds.stages[b] * S + ds.states[b]) * A + ds.actions[b]
        counts = np.bincount(flat, minlength=H * S * A)
        if kind == "trajectories":  # one sample per stage per episode: Bin(K, d_h(s, a))
            n, p = ds.n_episodes, mu.ravel()
        else:  # N i.i.d. draws of (h, s, a) ~ d_h / H
            n, p = ds.N, mu.ravel() / H
        assert np.all(_binomial_ok(counts, n, p, counts.size))
        # next states given (h, s, a): Bin(n_hsa, P(s'|s, a))
        trans = np.bincount(flat * S + ds.next_states[b], minlength=H * S * A * S)
        n_sa = np.repeat(counts, S)
        p_next = np.tile(P.reshape(S * A, S), (H, 1)).ravel()
        assert np.all(_binomial_ok(trans, n_sa, p_next, trans.size))


def test_discounted_samples_match_the_discounted_occupancy_and_rewards():
    mdp = make("multiscale-bandit:n_gap=3,n_mass=3,gamma=0.6")
    ds = make_dataset(mdp, 80_000, coverage=0.5, other="uniform", seeds=2)
    mu = ds.data_distribution.ravel()
    for b in range(2):
        flat = ds.states[b] * mdp.A + ds.actions[b]
        counts = np.bincount(flat, minlength=mu.size)
        assert np.all(_binomial_ok(counts, ds.N, mu, mu.size))
        # Bernoulli rewards: the number of ones per pair is Bin(n_sa, R(s, a))
        ones = np.bincount(flat, weights=ds.rewards[b], minlength=mu.size)
        assert np.all(_binomial_ok(ones, counts, mdp.R.ravel(), mu.size))


def test_population_dataset_is_the_expected_counts():
    mdp = make("random:S=3,A=2,H=2,seed=1")
    ds = population_dataset(mdp, coverage=0.5, mass=1e6)
    H, S, A = ds.data_distribution.shape
    flat = (ds.stages[0] * S + ds.states[0]) * A + ds.actions[0]
    counts = np.bincount(flat, weights=ds.weights[0], minlength=H * S * A)
    np.testing.assert_allclose(counts, 1e6 * ds.data_distribution.ravel(), rtol=1e-12)


# ------------------------------------------------------------------------------ reproducibility
@pytest.mark.parametrize(
    "spec,kind",
    [
        ("random:S=5,A=3,H=4,seed=2", "trajectories"),
        ("random:S=5,A=3,H=4,seed=2", "samples"),
        ("multiscale-bandit:n_gap=3,n_mass=3,gamma=0.8", "samples"),
        ("multiscale-bandit:n_gap=3,n_mass=3,gamma=0.8", "trajectories"),
    ],
)
def test_a_seed_draws_the_same_data_alone_or_batched(spec, kind):
    mdp = make(spec)
    batch = make_dataset(mdp, 500, coverage=0.4, kind=kind, seeds=4, seed=11)
    for i in range(4):
        alone = make_dataset(mdp, 500, coverage=0.4, kind=kind, seeds=[i], seed=11)
        for name in ("states", "actions", "rewards", "next_states", "stages"):
            a, b = getattr(alone, name), getattr(batch, name)
            if a is None:
                assert b is None
            else:
                np.testing.assert_array_equal(a[0], b[i])
    other_root = make_dataset(mdp, 500, coverage=0.4, kind=kind, seeds=4, seed=12)
    assert not np.array_equal(other_root.states, batch.states)
    assert batch.info["coverage"] == 0.4 and batch.seed == 11 and batch.N == 500


def test_trajectory_layout_and_head():
    mdp = make("random:S=4,A=2,H=5,seed=0")
    ds = make_dataset(mdp, 103, coverage=0.5, seeds=2)
    assert ds.n_episodes == 20 and ds.N == 100  # whole episodes: N = K H recorded
    np.testing.assert_array_equal(ds.stages[0], np.tile(np.arange(5), 20))
    # consecutive steps of an episode chain: s_{h+1} = s'_h
    s = ds.states.reshape(2, 20, 5)
    nxt = ds.next_states.reshape(2, 20, 5)
    np.testing.assert_array_equal(s[:, :, 1:], nxt[:, :, :-1])
    small = ds.head(50)
    assert small.N == 50 and small.n_episodes == 10
    np.testing.assert_array_equal(small.states, ds.states[:, :50])
    with pytest.raises(InvalidDatasetSizeError):
        ds.head(51)


# ------------------------------------------------------------------------------ PEVI coverage
def test_pevi_coverage_term_equals_the_sample_sum():
    mdp = make("offline-linear:S=6,A=3,d=3,H=3,seed=4")
    ds = make_dataset(mdp, 90, coverage=0.5, seeds=2)
    d_star = occupancy(mdp, optimal_solution(mdp).policy)
    got = pevi_coverage(mdp, ds, mdp.phi, lam=1.0)
    for b in range(2):
        total = 0.0
        for h in range(mdp.horizon):
            m = ds.stages[b] == h
            X = mdp.phi[ds.states[b][m], ds.actions[b][m]]  # (n_h, d) sample features
            Lam = X.T @ X + np.eye(3)
            inv = np.linalg.inv(Lam)
            quad = np.einsum("sad,de,sae->sa", mdp.phi, inv, mdp.phi)
            total += float((d_star[h] * np.sqrt(quad)).sum())
        assert got[b] == pytest.approx(total, rel=1e-10)
    # one-hot features: the dense computation equals the closed form 1 / sqrt(n + lambda)
    tab = make("random:S=6,A=3,H=3,seed=4")  # no phi attribute
    data = make_dataset(tab, 90, coverage=0.5, seeds=2)
    one_hot = np.eye(18).reshape(6, 3, 18)
    np.testing.assert_allclose(
        pevi_coverage(tab, data, one_hot), pevi_coverage(tab, data, None), rtol=1e-12
    )


# ------------------------------------------------------------------------------ validation
def test_invalid_inputs_raise_specific_errors():
    mdp = make("random:S=3,A=2,H=2,seed=0")
    with pytest.raises(InvalidDatasetSizeError):
        make_dataset(mdp, -1, coverage=0.5)
    with pytest.raises(InvalidDatasetSizeError):
        make_dataset(mdp, 2.5, coverage=0.5)
    for bad in (-0.1, 1.5, float("nan"), "x"):
        with pytest.raises(InvalidCoverageError):
            make_dataset(mdp, 10, coverage=bad)
    with pytest.raises(InvalidCoverageError):
        behaviour_policy(mdp, 2.0)
    with pytest.raises(InvalidDatasetError):
        make_dataset(mdp, 10, coverage=0.5, other="bogus")
    with pytest.raises(InvalidDatasetError):
        make_dataset(mdp, 10)  # neither coverage nor behaviour
    with pytest.raises(InvalidDatasetError):
        make_dataset(mdp, 10, coverage=0.5, behaviour=np.full((2, 3, 2), 0.5))
    with pytest.raises(InvalidDatasetError):
        make_dataset(mdp, 10, behaviour=np.full((2, 3, 2), 0.7))  # rows do not sum to 1
    assert issubclass(InvalidCoverageError, ValueError)
    empty = make_dataset(mdp, 0, coverage=0.5, seeds=2)
    assert empty.N == 0
    disc = make_dataset(_random_discounted(0), 0, coverage=0.5)
    for name in list_algorithms("offline"):  # an empty dataset of the kind each one takes
        discounted = get_algorithm(name).extra.get("horizon") == "discounted"
        data = disc if discounted else empty
        with pytest.raises(EmptyDatasetError):
            fit(name, data)
    short = make_dataset(mdp, 1, coverage=0.5)  # fewer transitions than one episode
    with pytest.raises(EmptyDatasetError):
        fit("naive-vi", short)


def test_tempting_arms_coverage_and_failure_limit():
    w = tempting_arms_coverage(30_000, m=2.0, K=20, H=3)
    assert w == pytest.approx(1 - 2 * 21 * 3 / 30_000)
    mdp = make("tempting-arms")
    pi_b = behaviour_policy(mdp, w, "uniform")
    episodes = 30_000 // 3
    assert episodes * pi_b[0, 0, 0] == pytest.approx(2.0)  # each tempting arm tried m times
    with pytest.raises(ValueError):
        tempting_arms_coverage(100)
    # Poisson-limit failure probability, against a direct Monte Carlo of the limit event
    rng = np.random.default_rng(0)
    n = rng.poisson(2.0, size=(20_000, 20))
    j = rng.binomial(n, 0.3)
    fails = ((n > 0) & (j >= 0.6 * n - 1e-12)).any(axis=1).mean()
    assert naive_failure_limit() == pytest.approx(fails, abs=0.01)
