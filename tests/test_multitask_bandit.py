"""Multi-task linear bandits (``kind="multitask-bandit"``; seed row 001#19,
``algorithms/multitask_bandit/``): the instance against enumeration, Frank-Wolfe against cvxpy and
the Kiefer-Wolfowitz value, DouExpDes and the independent baseline (delta-correct, budget,
errors), the random-representation mutation, the result family."""

from __future__ import annotations

import numpy as np
import pytest

import theorylab as tl
from theorylab.algorithms.multitask_bandit.design import allocation, g_optimal_design, g_value
from theorylab.errors import InvalidMDPError
from theorylab.mdps import make
from theorylab.validations.claims.multitask_bandit import d_optimal_log_det


def test_instance_by_enumeration_and_gaps_free_of_d():
    p8 = make("multitask-linear:d=8,k=2,M=6,gap=0.3,seed=2")
    p24 = make("multitask-linear:d=24,k=2,M=6,gap=0.3,seed=2")
    for p in (p8, p24):
        assert p.arms.shape == (4 + p.d - 2, p.d)
        np.testing.assert_allclose(p.B.T @ p.B, np.eye(2), atol=1e-12)
        means = np.array([[x @ p.B @ p.W[:, m] for x in p.arms] for m in range(p.M)])  # (M, n)
        np.testing.assert_allclose(p.means(), means, atol=1e-12)
        assert list(p.best_arms()) == [int(np.argmax(row)) for row in means]
        np.testing.assert_allclose(means.max(axis=1), 1.0)  # w_m is an arm direction
        assert p.gaps().min() >= 0.3 - 1e-12
        np.testing.assert_allclose(means[:, 4:], 0.0, atol=1e-12)  # probes: mean 0
    np.testing.assert_allclose(p8.means()[:, :4], p24.means()[:, :4], atol=1e-12)
    lam = np.linalg.eigvalsh(p8.theta @ p8.theta.T / 6)[-2]
    assert p8.diversity() == pytest.approx(lam)


def test_candidate_class_holds_the_truth_and_is_orthonormal():
    p = make("multitask-linear:d=6,k=2,M=3,candidates=5,confusion=0.4,seed=1")
    assert p.candidates.shape == (5, 6, 2) and 0 <= p.true_index < 5
    np.testing.assert_allclose(p.candidates[p.true_index], p.B)
    for j, C in enumerate(p.candidates):
        np.testing.assert_allclose(C.T @ C, np.eye(2), atol=1e-12)
        if j != p.true_index:  # cos a = sqrt(1 - 0.4^2) on B's directions
            np.testing.assert_allclose(np.linalg.svd(p.B.T @ C)[1], np.sqrt(1 - 0.16))


def test_pull_means_is_the_mean_of_gaussian_pulls():
    p = make("multitask-linear:d=5,k=2,M=2,noise=2")
    counts = np.array([[4, 0, 1, 0, 0, 0, 0], [1] * 7])
    draws = np.stack([p.pull_means(counts, np.random.default_rng(i)) for i in range(4000)])
    assert np.all(np.isnan(draws[:, 0, 1]))
    z = (draws[:, 0, 0].mean() - p.means()[0, 0]) / (2 / np.sqrt(4) / np.sqrt(4000))
    assert abs(z) < 4
    assert draws[:, 0, 0].std() == pytest.approx(1.0, rel=0.05)  # noise / sqrt(count)


def test_frank_wolfe_matches_cvxpy_and_kiefer_wolfowitz():
    X = np.random.default_rng(5).standard_normal((9, 4))  # (n, p)
    lam = g_optimal_design(X)
    assert lam.sum() == pytest.approx(1.0) and np.all(lam >= 0)
    assert g_value(X, lam) <= 4 * (1 + 1e-3)  # G-value p at the optimum
    ld = np.linalg.slogdet(X.T @ (lam[:, None] * X))[1]
    ref = d_optimal_log_det(X)
    # the duality gap of log det at G-value p (1 + tol): 0 <= log det* - log det <= p tol
    assert -1e-6 <= ref - ld <= 4 * 1e-3
    uniform = np.full(9, 1 / 9)
    assert g_value(X, uniform) > g_value(X, lam)
    np.testing.assert_array_equal(allocation(np.array([0.5, 0.25, 0.25, 0.0]), 10), [5, 3, 3, 0])
    with pytest.raises(RuntimeError, match="after 3 Frank-Wolfe steps"):
        g_optimal_design(X, tol=1e-9, max_iter=3)
    with pytest.raises(ValueError, match="span rank 1 < 2"):
        g_optimal_design(np.array([[1.0, 0.0], [2.0, 0.0]]))


def test_learners_identify_every_best_arm():
    spec = "multitask-linear:d=8,k=2,M=16,seed=3"
    a = tl.run("douexpdes", spec, rounds=10**9, seeds=3)
    b = tl.run("independent-elimination", spec, rounds=10**9, seeds=3)
    best = make(spec).best_arms()
    for r in (a, b):
        np.testing.assert_array_equal(r.recommended, np.broadcast_to(best, (3, 16)))
        assert r.stopped.all() and r.correct().all()
    s = a.diagnostics["sin_theta"]
    assert np.nanmax(s) < 0.5 and np.isnan(s[:, -1]).all()
    assert a.config["learner"]["c_rep"] == 16.0


def test_budget_cap_stops_tasks_unresolved():
    r = tl.run("independent-elimination", "multitask-linear:d=8,k=2,M=2", rounds=100, seeds=1)
    assert not r.stopped.any() and np.all(r.samples == 0)


def test_random_representation_breaks_the_planned_misspecification():
    from theorylab.validations.multitask_bandit_mutations import douexpdes_random_representation

    with douexpdes_random_representation():
        r = tl.run("douexpdes", "multitask-linear:d=16,k=2,M=16", rounds=10**9, seeds=2)
    eps = 2.0 ** -np.arange(1, r.diagnostics["sin_theta"].shape[1] + 1)
    assert np.nanmax(r.diagnostics["sin_theta"] / (eps / 4)) > 1.0


@pytest.mark.parametrize(
    "spec, match",
    [
        ("multitask-linear:k=0", "k must be an integer >= 1"),
        ("multitask-linear:d=2,k=2", "d must be an integer >= 3"),
        ("multitask-linear:M=0", "M must be an integer >= 1"),
        ("multitask-linear:gap=0", "gap must be in"),
        ("multitask-linear:noise=0", "noise must be a finite number > 0"),
        ("multitask-linear:k=1,informative=3", "no 3 unit vectors of R\\^1"),
    ],
)
def test_instance_input_errors(spec, match):
    with pytest.raises(InvalidMDPError, match=match):
        make(spec)


def test_learner_input_errors():
    spec = "multitask-linear:d=4,k=2,M=2"
    with pytest.raises(ValueError, match="delta must be in \\(0, 1\\), got 1.5"):
        tl.run("douexpdes", spec, rounds=1000, delta=1.5)
    with pytest.raises(ValueError, match="c_rep must be > 0"):
        tl.run("douexpdes", spec, rounds=1000, c_rep=0.0)
    with pytest.raises(ValueError, match="rounds"):
        tl.run("douexpdes", spec, rounds=0)
    with pytest.raises(ValueError, match="needs a multi-task linear bandit"):
        tl.run("douexpdes", "riverswim:S=4,H=5", rounds=10)


@pytest.mark.slow  # test_validations runs the claim and its controls at quick scale
def test_claim_passes_and_controls_fail():
    from theorylab.validations import validate

    rep = validate("douexpdes-samples-scale-with-k", "quick")
    assert rep.verdict == "PASS", rep.format()
    assert {c["control"]: c["verdict"] for c in rep.controls} == {
        "douexpdes-random-representation": "FAIL",
        "douexpdes-independent-tasks": "FAIL",
    }


def test_result_summarises_plots_frames_and_round_trips(tmp_path):
    from theorylab.results import MultitaskBanditResult, load_result

    r = tl.run("douexpdes", "multitask-linear:d=6,k=2,M=4", rounds=10**9, seeds=2)
    assert isinstance(r, MultitaskBanditResult)
    s = r.summary()
    assert s["correct"] == 1.0 and s["true_representation_selected"] is None
    back = load_result(r.save(tmp_path / "run"))
    np.testing.assert_array_equal(back.samples, r.samples)
    np.testing.assert_array_equal(back.diagnostics["sin_theta"], r.diagnostics["sin_theta"])
    assert back.true_representation == -1 and back.regret.shape == (2, 0)
    cols = r.frame_columns()
    assert len(cols["samples"]) == 8 and set(cols["task"]) == {0, 1, 2, 3}
    r.plot(tmp_path / "mt.png")
    assert (tmp_path / "mt.png").exists() and "pulls per task" in r.table_row()


# ----------------------------------------------------------------------------- GFUCB (001#20)
def test_gfucb_joint_loss_equals_direct_ridge_on_the_replayed_data():
    from theorylab.algorithms.multitask_bandit.gfucb import gfucb_loop
    from theorylab.seeding import ENV_STREAM, generators

    p = make("multitask-linear:d=5,k=2,M=3,candidates=4,confusion=0.8,nuisance=1,seed=4")
    out = gfucb_loop(p, 30, generators(7, [0, 1], ENV_STREAM), 0.05, True)
    for b, rng in enumerate(generators(7, [0, 1], ENV_STREAM)):
        ys = np.stack([p.pull(out.choices[b, t], rng) for t in range(30)])  # (T, M) replayed
        for j in range(4):
            loss = 0.0
            for m in range(3):
                F = p.arms[out.choices[b, :, m]] @ p.candidates[j]  # (T, k)
                w = np.linalg.solve(F.T @ F + np.eye(2), F.T @ ys[:, m])  # ridge, lambda = 1
                loss += np.sum((ys[:, m] - F @ w) ** 2) + w @ w
            assert out.diagnostics["final_loss"][b, j] == pytest.approx(loss, rel=1e-9)
    assert np.all(out.selected == np.argmin(out.diagnostics["final_loss"], axis=1))


def test_gfucb_is_the_per_task_learner_at_one_task_and_shares_beyond():
    spec = "multitask-linear:d=8,k=2,M=1,candidates=16,confusion=0.8,nuisance=1"
    a = tl.run("gfucb", spec, rounds=200, seeds=2)
    b = tl.run("gfucb-independent", spec, rounds=200, seeds=2)
    np.testing.assert_array_equal(a.regret, b.regret)
    spec4 = spec.replace("M=1", "M=4")
    a4 = tl.run("gfucb", spec4, rounds=200, seeds=2)
    b4 = tl.run("gfucb-independent", spec4, rounds=200, seeds=2)
    assert a4.diagnostics["set_size"][:, -1].mean() < b4.diagnostics["set_size"][:, -1].mean()
    assert np.all(np.diff(a4.regret, axis=1) >= 0) and a4.samples.min() == 200


def test_gfucb_independent_tasks_mutation_turns_gfucb_into_the_baseline():
    from theorylab.validations.multitask_bandit_mutations import gfucb_independent_tasks

    spec = "multitask-linear:d=6,k=2,M=3,candidates=8,confusion=0.8,nuisance=1"
    base = tl.run("gfucb-independent", spec, rounds=60, seeds=1)
    with gfucb_independent_tasks():
        mut = tl.run("gfucb", spec, rounds=60, seeds=1)
    np.testing.assert_array_equal(mut.regret, base.regret)


def test_gfucb_input_errors():
    with pytest.raises(ValueError, match="needs a class of candidate representations"):
        tl.run("gfucb", "multitask-linear:d=4,k=2,M=2", rounds=10)
    with pytest.raises(ValueError, match="delta must be in"):
        tl.run("gfucb", "multitask-linear:d=4,k=2,M=2,candidates=3", rounds=10, delta=0.0)
    with pytest.raises(InvalidMDPError, match="nuisance must be a finite number >= 0"):
        make("multitask-linear:nuisance=-1")


def test_regret_result_table_and_selection():
    r = tl.run("gfucb", "multitask-linear:d=6,k=2,M=2,candidates=4,confusion=0.8,nuisance=1",
               rounds=50, seeds=2)  # fmt: skip
    row = r.table_row()
    assert "regret per task" in row and "true phi selected" in row
    assert r.regret.shape == (2, 50) and r.summary()["true_representation_selected"] is not None
