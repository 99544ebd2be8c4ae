"""HNPG (seed row 000#20): the hybrid critic against independent answers, the Monte Carlo
estimator's mean, input errors, tl.run, and the claim's controls."""

from __future__ import annotations

import numpy as np
import pytest

import theorylab as tl
from theorylab.algorithms.planning.evaluation import evaluate_discounted
from theorylab.algorithms.policy_optimization import hnpg as H
from theorylab.mdps import make

SPEC = "random:S=4,A=3,gamma=0.8,seed=5"


def discounted(spec: str = SPEC):
    mdp = make(spec)
    return mdp.with_objective(gamma=mdp.gamma, horizon=None)


def q_of(mdp, pi: np.ndarray) -> np.ndarray:
    """Q^pi (S, A) = r + gamma P V^pi, V^pi by a linear solve (the planning floor)."""
    V = evaluate_discounted(mdp, pi)
    return mdp.reward(0) + mdp.gamma * np.einsum("sat,t->sa", mdp.dense_P(), V)


def random_policy(rng, S: int, A: int) -> np.ndarray:
    return rng.dirichlet(np.ones(A), size=S)


def test_population_offline_critic_is_q_pi():
    """Offline counts proportional to the true model: the critic's fixed point is Q^pi exactly,
    whatever lam and whatever on-policy data that are themselves exact."""
    mdp = discounted()
    S, A = mdp.S, mdp.A
    rng = np.random.default_rng(0)
    pi = random_policy(rng, S, A)[None]  # (1, S, A)
    w = rng.uniform(1.0, 5.0, size=(1, S, A))  # arbitrary positive data weights
    off = H.PairData(w, w * mdp.reward(0)[None], w[..., None] * mdp.dense_P()[None])
    Q_star = q_of(mdp, pi[0])
    got = H.hybrid_critic(off, H.empty_pairs(1, S, A), pi, mdp.gamma, 10.0)
    np.testing.assert_allclose(got[0], Q_star, atol=1e-7)
    n_on = rng.integers(1, 4, size=(1, S, A)).astype(float)
    on = H.PairData(n_on, n_on * Q_star[None])
    for lam in (0.1, 1.0, 100.0):
        np.testing.assert_allclose(
            H.hybrid_critic(off, on, pi, mdp.gamma, lam)[0], Q_star, atol=1e-7
        )


def test_on_policy_only_critic_is_the_monte_carlo_mean():
    rng = np.random.default_rng(1)
    S, A = 3, 2
    n = rng.integers(0, 4, size=(2, S, A)).astype(float)
    total = rng.uniform(0, 3, size=(2, S, A)) * n
    pi = np.full((2, S, A), 1.0 / A)
    got = H.hybrid_critic(H.empty_pairs(2, S, A), H.PairData(n, total), pi, 0.9, 3.0)
    want = np.where(n > 0, total / np.maximum(n, 1), 0.0)
    np.testing.assert_allclose(got, want, atol=1e-8)


def test_hybrid_critic_is_the_iterated_fixed_point():
    """Random counts: the linear solve equals Jacobi iteration of the same fixed point written
    out here, Q <- (r_sum + gamma C Pi Q + lam G_sum) / (n_off + lam n_on)."""
    rng = np.random.default_rng(2)
    S, A, lam, g = 4, 3, 2.5, 0.85
    nxt = rng.integers(0, 3, size=(1, S, A, S)).astype(float)
    n_off = nxt.sum(-1)
    off = H.PairData(n_off, rng.uniform(0, 1, size=(1, S, A)) * n_off, nxt)
    n_on = rng.integers(0, 2, size=(1, S, A)).astype(float)
    on = H.PairData(n_on, rng.uniform(0, 4, size=(1, S, A)) * n_on)
    pi = random_policy(rng, S, A)[None]
    D = n_off + lam * n_on
    Q = np.zeros((S, A))
    for _ in range(3000):
        V = (pi[0] * Q).sum(-1)  # (S,)
        num = off.total[0] + g * nxt[0] @ V + lam * on.total[0]
        Q = np.where(D[0] > 0, num / np.where(D[0] > 0, D[0], 1.0), 0.0)
    np.testing.assert_allclose(H.hybrid_critic(off, on, pi, g, lam)[0], Q, atol=1e-6)


def test_monte_carlo_returns_are_unbiased():
    """The mean of m rollouts per pair is Q^pi within 5 standard errors."""
    mdp = discounted()
    rng = np.random.default_rng(3)
    pi = random_policy(rng, mdp.S, mdp.A)
    m = 4000
    on = H.on_policy_pairs(mdp, pi[None], m, rng)
    assert np.all(on.n == m)
    mean = on.total[0] / m
    # |G| <= the number of steps, geometric with mean 1 / (1 - gamma): sd <= 1 / (1 - gamma)
    se = 1.0 / (1.0 - mdp.gamma) / np.sqrt(m)
    assert np.all(np.abs(mean - q_of(mdp, pi)) <= 5 * se)


def test_offline_data_kinds():
    mdp = discounted()
    good = H.offline_pairs(mdp, "uniform", 600, 2, 0)
    inv = H.offline_pairs(mdp, "inverted-rewards", 600, 2, 0)
    np.testing.assert_array_equal(good.n, inv.n)
    np.testing.assert_allclose(inv.total, good.n - good.total)  # rewards 1 - r
    bad = H.offline_pairs(mdp, "bad-actions", 600, 2, 0)
    from theorylab.algorithms.planning.value_iteration import value_iteration

    a_star = np.asarray(value_iteration(mdp, tol=1e-12).policy)
    assert bad.n[:, np.arange(mdp.S), a_star].sum() == 0  # never an optimal action
    assert H.offline_pairs(mdp, "none", 600, 2, 0).n.sum() == 0


def test_tl_run_records_every_run_and_the_optimum():
    res = tl.run("hnpg", SPEC, iterations=5, runs=3, seed=1)
    values = np.array(res.config["values"])
    assert values.shape == (3, 6)
    np.testing.assert_allclose(res.objective, values.mean(axis=0))
    from theorylab.algorithms.planning.value_iteration import value_iteration

    mdp = discounted()
    V = np.asarray(value_iteration(mdp, tol=1e-13).V).ravel()
    assert res.target_value == pytest.approx(float(V @ mdp.mu0), abs=1e-9)
    assert np.all(values <= res.target_value + 1e-9)
    again = tl.run("hnpg", SPEC, iterations=5, runs=3, seed=1)
    np.testing.assert_array_equal(again.objective, res.objective)


@pytest.mark.parametrize(
    "kwargs, fragment",
    [
        ({"offline": "expert"}, "offline must be one of"),
        ({"critic": "exact"}, "critic must be one of"),
        ({"critic": "offline-only", "offline": "none"}, "needs offline data"),
        ({"on_policy": 0}, "on_policy must be an integer >= 1"),
        ({"runs": 1.5}, "runs must be an integer >= 1"),
        ({"lam": -1.0}, "lam must be a finite number > 0"),
        ({"eta": float("nan")}, "eta must be a finite number > 0"),
    ],
)
def test_bad_input_is_one_line(kwargs, fragment):
    with pytest.raises(ValueError, match=fragment):
        H.hnpg_path(discounted(), 3, **kwargs)


def test_undiscounted_model_is_refused():
    with pytest.raises(ValueError, match="stated for discounted MDPs"):
        H.hnpg_path(make("random:S=4,A=3,H=5,seed=1"), 3)


def test_mutations_change_the_critic():
    """The two registered mutations: HNPG's critic becomes the offline-only / on-policy-only
    fit (what makes each control fail the claim)."""
    import theorylab.validations.mutations  # noqa: F401
    from theorylab.validations.controls import get_control

    mdp = discounted()
    off = H.offline_pairs(mdp, "uniform", 300, 1, 0)
    rng = np.random.default_rng(4)
    pi = random_policy(rng, mdp.S, mdp.A)[None]
    on = H.on_policy_pairs(mdp, pi, 2, rng)
    only_off = H.hybrid_critic(off, H.empty_pairs(1, mdp.S, mdp.A), pi, mdp.gamma, 10.0)
    only_on = H.hybrid_critic(H.empty_pairs(1, mdp.S, mdp.A), on, pi, mdp.gamma, 10.0)
    with get_control("hnpg-drops-on-policy-fit").applied(None):
        np.testing.assert_allclose(H.hybrid_critic(off, on, pi, mdp.gamma, 10.0), only_off)
    with get_control("hnpg-drops-offline-data").applied(None):
        np.testing.assert_allclose(H.hybrid_critic(off, on, pi, mdp.gamma, 10.0), only_on)
    both = H.hybrid_critic(off, on, pi, mdp.gamma, 10.0)
    assert not np.allclose(both, only_off) and not np.allclose(both, only_on)
