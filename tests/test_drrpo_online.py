"""DR-RPO online (issue 30, seed rows 000#22 / 001#49): the sampled learner on d-rectangular
linear MDPs -- two loops against each other, the exact scoring against the core's value
iteration, the TV dual against the floor's water-filling, the one-hot (tabular) case, the
optimistic Q's fixed-point equation written out, input errors and the controls."""

from __future__ import annotations

import numpy as np
import pytest

from theorylab.algorithms.planning import robust as R
from theorylab.algorithms.robust import drrpo as D
from theorylab.algorithms.robust import drrpo_online as O
from theorylab.mdps import make

KW = {"beta": 0.2, "eta": 10.0, "bonus": 3.0}


def _model(features, spec="random:S=4,A=3,gamma=0.8,seed=3"):
    mdp = make(spec)
    mdp = mdp.with_objective(gamma=mdp.gamma, horizon=None)
    return D.d_rectangular(mdp, features, 2)


@pytest.mark.parametrize("features", ["tabular", 3])
@pytest.mark.parametrize("rho", [0.0, 0.3])
def test_compiled_and_numpy_loops_agree(features, rho):
    model = _model(features)
    a = O.learn(model, 25, rho=rho, seed=4, loop="numpy", **KW)
    b = O.learn(model, 25, rho=rho, seed=4, loop="compiled", **KW)
    for x, y in ((a.policies, b.policies), (a.Lambda, b.Lambda), (a.B, b.B), (a.Q_hat, b.Q_hat)):
        assert np.abs(x - y).max() <= 1e-10
    assert np.abs(a.returns - b.returns).max() <= 1e-12


@pytest.mark.parametrize("features", ["tabular", 3])
@pytest.mark.parametrize("rho", [0.0, 0.2, 1.0])
def test_adversary_policy_iteration_equals_the_cores_value_iteration(features, rho):
    model = _model(features)
    ref = np.full((model.S, model.A), 1.0 / model.A)
    rng = np.random.default_rng(0)
    pols = rng.dirichlet(np.ones(model.A), size=(3, model.S))
    J, _, J_star = O.exact_returns(model, pols, 0.2, rho)
    for pi, j in zip(pols, J, strict=True):
        V, _, _ = D.robust_regularised_evaluation(model, pi, 0.2, ref, rho, tol=1e-12)
        assert abs(float(V @ model.mu0) - j) <= 1e-9
    V_star, _ = D.robust_soft_optimum(model, 0.2, ref, rho)
    assert J_star == float(V_star @ model.mu0) and np.all(J <= J_star + 1e-9)


def test_factor_dual_equals_water_filling_and_rho_zero_is_linear():
    rng = np.random.default_rng(7)
    for _ in range(20):
        p = rng.dirichlet(np.ones(6), size=4)
        V = rng.normal(size=6)
        for rho in (0.0, 0.1, 0.4, 1.0):
            floor, _ = R.inner_tv(p, V, rho)
            assert np.abs(O.factor_robust_estimate(p, V, rho) - floor).max() <= 1e-12
        sub = 0.7 * p  # a ridge estimate of one-hot features: N / (N + lam) p_hat, >= 0
        assert np.abs(O.factor_robust_estimate(sub, V, 0.0) - sub @ V).max() <= 1e-12


def test_one_hot_features_are_the_tabular_counts():
    model = _model("tabular")
    K, H, lam = 30, 5, 0.5
    run = O.learn(model, K, rho=0.3, lam=lam, seed=1, **KW)
    N = run.Lambda.diagonal() - lam
    assert np.all(run.Lambda - np.diag(run.Lambda.diagonal()) == 0.0)
    assert np.allclose(N, run.B.sum(axis=1), atol=1e-12) and N.sum() == K * H
    assert np.all(N == np.round(N)) and np.all(run.B == np.round(run.B))


@pytest.mark.parametrize("features", ["tabular", 3])
def test_optimistic_q_solves_its_written_out_equation(features):
    """Q = min(R + gamma phi nu(V) + c sqrt(phi' Lambda^-1 phi), max R / (1 - gamma)),
    V = sum_a pi (Q - beta log(pi / ref)), mu_hat = Lambda^-1 B, nu_i = max_j (mu_hat
    min(V, V_j))_i - rho (V_j - min V): written here from the paper's ingredients, not imported."""
    model = _model(features)
    c, rho, beta, g = 3.0, 0.3, 0.2, model.gamma
    run = O.learn(model, 40, rho=rho, seed=2, **KW)
    pi = run.policies[-2]  # the policy whose Q the last episode estimated
    ref = np.full((model.S, model.A), 1.0 / model.A)
    V = (pi * (run.Q_hat - beta * np.log(pi / ref))).sum(axis=1)
    mu_hat = np.linalg.solve(run.Lambda, run.B)
    nu = np.array(
        [
            max(mu_hat[i] @ np.minimum(V, V[j]) - rho * (V[j] - V.min()) for j in range(model.S))
            for i in range(mu_hat.shape[0])
        ]
    )
    Li = np.linalg.inv(run.Lambda)
    bonus = np.array(
        [[c * np.sqrt(model.phi[s, a] @ Li @ model.phi[s, a]) for a in range(model.A)]
         for s in range(model.S)]
    )  # fmt: skip
    Q = np.minimum(model.R + g * model.phi @ nu + bonus, model.R.max() / (1 - g))
    assert np.abs(Q - run.Q_hat).max() <= 1e-7


def test_tl_run_records_the_regret_against_the_robust_optimum():
    import theorylab as tl

    res = tl.run("dr-rpo-online", "random:S=4,A=3,gamma=0.8,seed=3", iterations=12, rho=0.3)
    regret = np.asarray(res.config["regret"])
    assert regret.shape == (12,) and res.policies.shape == (13, 4, 3)
    assert np.allclose(np.diff(regret, prepend=0.0), res.target_value - res.regularised[:-1])
    assert np.all(np.diff(regret) >= -1e-12)  # J* is the optimum: every term >= 0


def test_the_controls_change_the_learner():
    from theorylab.validations.robust_mutations import dr_rpo_online_no_bonus, dr_rpo_online_nominal

    model = _model("tabular")
    base = O.learn(model, 20, rho=0.3, seed=0, **KW)
    with dr_rpo_online_no_bonus():
        nob = O.learn(model, 20, rho=0.3, seed=0, **KW)
    assert np.array_equal(
        nob.policies, O.learn(model, 20, rho=0.3, seed=0, **{**KW, "bonus": 0.0}).policies
    )
    with dr_rpo_online_nominal():
        nom = O.learn(model, 20, rho=0.3, seed=0, **KW)
    assert np.array_equal(nom.policies, O.learn(model, 20, rho=0.0, seed=0, **KW).policies)
    assert not np.allclose(base.policies, nob.policies)
    assert not np.allclose(base.policies, nom.policies)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"rho": -1.0}, "dr-rpo-online: rho must be a finite number >= 0, got -1.0"),
        ({"bonus": -0.5}, "dr-rpo-online: bonus must be a finite number >= 0, got -0.5"),
        ({"lam": 0.0}, "dr-rpo-online: lam must be a finite number > 0, got 0.0"),
        ({"horizon": -2}, "dr-rpo-online: horizon must be an integer >= 0, got -2"),
        ({"loop": "gpu"}, "dr-rpo-online: loop must be one of numpy, compiled, got 'gpu'"),
        ({"features": "x"}, "dr-rpo: features must be 'tabular' or a positive int d, got 'x'"),
    ],
)
def test_input_errors(kwargs, message):
    import theorylab as tl

    with pytest.raises(ValueError) as err:
        tl.run("dr-rpo-online", "random:S=3,A=2,gamma=0.9", iterations=2, **kwargs)
    assert message in str(err.value)
