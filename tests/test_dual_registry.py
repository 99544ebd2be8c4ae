"""The dual-RL algorithms on the one registry, tl.run, the result family and the CLI
(algorithms/dual/registrations.py, theorylab/runners/dual.py, theorylab/results/dual.py)."""

from __future__ import annotations

import json

import numpy as np
import pytest

import theorylab as tl
from theorylab.algorithms.dual import solve_dual_v
from theorylab.algorithms.dual.reference import behaviour_reference
from theorylab.algorithms.registry import get_algorithm, list_algorithms
from theorylab.cli import main
from theorylab.results import DualResult, SuboptimalityResult, load_result

RIVERSWIM = "riverswim:S=6,gamma=0.9"


def test_registered_with_their_kinds():
    assert {"dual-v", "regularized-primal"} <= set(list_algorithms("dual"))
    assert "optidice" in list_algorithms("offline")
    assert get_algorithm("dual-v").parameters() == {"f": "kl", "method": "newton"}
    assert get_algorithm("optidice").extra["horizon"] == "discounted"


def test_tl_run_dual_v_matches_the_direct_solve_and_certifies_itself():
    res = tl.run("dual-v", RIVERSWIM, alpha=[0.01, 0.1, 1.0], f="chi2")
    assert isinstance(res, DualResult)
    assert np.all(np.abs(res.gap) <= 1e-8) and np.all(res.flow_residual <= 1e-8)
    mdp = tl.make(RIVERSWIM).with_objective(gamma=0.9)
    direct = solve_dual_v(mdp, behaviour_reference(mdp), 0.1, "chi2")
    assert res.primal[1] == pytest.approx(direct.primal_value, abs=1e-12)
    # J(alpha) rises to the LP value as alpha falls
    assert np.all(np.diff(res.primal) < 0) and res.primal[0] <= res.lp_value


def test_dual_v_and_the_cvxpy_primal_agree_through_tl_run():
    a = tl.run("dual-v", RIVERSWIM, alpha=0.1, f="kl")
    b = tl.run("regularized-primal", RIVERSWIM, alpha=0.1, f="kl")
    assert a.primal[0] == pytest.approx(b.primal[0], abs=1e-6)


def test_dual_result_store_frame_and_plot(tmp_path):
    res = tl.run("dual-v", RIVERSWIM, alpha=[0.01, 0.1], f="kl")
    back = tl.Result.load(res.save(tmp_path / "r"))
    assert isinstance(back, DualResult)
    np.testing.assert_array_equal(back.primal, res.primal)
    cols = res.frame_columns()
    assert len(cols["alphas"]) == 2 and set(cols) >= {"primal", "dual", "gap", "flow_residual"}
    res.plot(tmp_path / "a.png")
    assert (tmp_path / "a.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_tl_run_optidice_like_any_offline_algorithm():
    res = tl.run("optidice", "random:S=5,A=2,gamma=0.9", dataset_size=[500, 4000], seeds=3)
    assert isinstance(res, SuboptimalityResult)
    assert res.suboptimality.shape == (3, 2) and np.all(res.suboptimality >= -1e-9)


def test_dual_budget_is_checked():
    with pytest.raises((TypeError, ValueError), match="alpha"):
        tl.run("dual-v", RIVERSWIM)
    with pytest.raises((TypeError, ValueError), match="episodes"):
        tl.run("dual-v", RIVERSWIM, alpha=0.1, episodes=10)
    with pytest.raises(ValueError, match="increasing"):
        tl.run("dual-v", RIVERSWIM, alpha=[0.1, 0.01])


def test_cli_solve_dual_prints_primal_dual_gap_and_residual(capsys):
    assert main(["solve", RIVERSWIM, "--dual", "kl", "--alpha", "0.1"]) == 0
    out = capsys.readouterr().out
    for key in ("primal", "dual", "gap", "flow residual"):
        assert key in out
    assert main(["solve", RIVERSWIM, "--dual", "half-chi2", "--alpha", "0.1", "--json"]) == 0
    out = capsys.readouterr().out
    rep = json.loads(out[out.index("{") :])  # HiGHS may print its banner first
    assert abs(rep["gap"]) <= 1e-8 and rep["flow_residual"] <= 1e-8


def test_cli_solve_dual_needs_alpha(capsys):
    assert main(["solve", RIVERSWIM, "--dual", "kl"]) == 2
    assert "--alpha" in capsys.readouterr().err


# ------------------------------------------------------------------------------ kind "ope"
def test_tl_run_dualdice_is_an_ope_estimator_scored_exactly(tmp_path):
    """DualDICE through tl.run (kind "ope"): its estimates are the direct dualdice() values on the
    same datasets, the error is against the exact V^pi(mu0), and the result stores and plots."""
    from theorylab.algorithms.dual.dualdice import dualdice
    from theorylab.algorithms.offline.dataset import make_dataset
    from theorylab.algorithms.planning.evaluation import evaluate_discounted
    from theorylab.mdps import make
    from theorylab.results import OPEResult
    from theorylab.runners.ope import target_policy

    spec = "random:S=5,A=2,gamma=0.9,seed=3"
    res = tl.run("dualdice", spec, dataset_size=[500, 2000], seeds=3, target="uniform")
    assert isinstance(res, OPEResult) and res.estimates.shape == (3, 2)
    mdp = make(spec).with_objective(gamma=0.9, horizon=None)
    pi = target_policy(mdp, "uniform")
    assert res.true_value == pytest.approx(evaluate_discounted(mdp, pi) @ mdp.mu0, abs=1e-12)
    ds = make_dataset(mdp, 2000, coverage=0.0, seeds=[0, 1, 2], seed=0)
    np.testing.assert_allclose(res.estimates[:, 1], dualdice(ds, pi).value, atol=1e-10)
    np.testing.assert_allclose(res.errors, res.estimates - res.true_value)
    back = load_result(res.save(tmp_path / "ope"))
    assert isinstance(back, OPEResult)
    np.testing.assert_array_equal(back.estimates, res.estimates)
    assert len(res.to_frame()["error"]) == 6
    res.plot(tmp_path / "ope.png")
    assert (tmp_path / "ope.png").exists()


def test_cli_run_dualdice(capsys):
    assert (
        main(
            [
                "run",
                "dualdice",
                "random:S=4,A=2,gamma=0.9",
                "-N",
                "800",
                "--seeds",
                "2",
                "--no-progress",
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert "dualdice" in out and "RMSE" in out


# ------------------------------------------------------------------------------ kind "constrained"
def test_tl_run_reps_matches_the_direct_solve(tmp_path):
    from theorylab.algorithms.dual.reps import reps, stationary_state_action
    from theorylab.mdps import make
    from theorylab.results import ConstrainedResult

    spec = "random:S=5,A=2,gamma=0.9,seed=3"
    res = tl.run("reps", spec, epsilon=[0.01, 0.1])
    assert isinstance(res, ConstrainedResult)
    mdp = make(spec)
    q = stationary_state_action(mdp, np.full((mdp.S, mdp.A), 0.5))
    assert np.abs(mdp.P_flat(0).T @ q.ravel() - q.sum(axis=1)).max() <= 1e-12  # q stationary
    for j, eps in enumerate((0.01, 0.1)):
        direct = reps(mdp, q, eps)
        assert res.primal[j] == pytest.approx(direct.primal_value, abs=1e-12)
        assert res.constraint[j] == pytest.approx(eps, abs=1e-8)  # binding at these levels
        assert abs(res.gap[j]) <= 1e-8 and res.stationarity[j] <= 1e-8
    back = load_result(res.save(tmp_path / "reps"))
    np.testing.assert_array_equal(back.primal, res.primal)
    res.plot(tmp_path / "reps.png")


def test_cli_run_reps(capsys):
    assert main(["run", "reps", "random:S=4,A=2,gamma=0.9", "-p", "epsilon=0.05"]) == 0
    assert "reps" in capsys.readouterr().out


def test_tl_run_dual_v_on_a_finite_horizon_model():
    """riverswim with H and no gamma: the stage-wise problem, d^O the uniform policy's stage
    occupancies, lp_value = V*_0(mu0); the certificate holds and J(alpha) <= V*_0."""
    from theorylab.algorithms.planning import backward_induction
    from theorylab.mdps import make

    spec = "riverswim:S=5,H=8"
    res = tl.run("dual-v", spec, alpha=[0.01, 0.1], f="kl")
    mdp = make(spec)
    assert res.config["H"] == 8 and res.occupancy.shape == (2, 8, 5, 2)
    assert res.lp_value == pytest.approx(backward_induction(mdp).value, abs=1e-12)
    assert np.max(np.abs(res.gap)) <= 1e-8 and np.max(res.flow_residual) <= 1e-8
    assert np.all(res.primal <= res.lp_value + 1e-10)
    d_ref = behaviour_reference(mdp)
    direct = solve_dual_v(mdp, d_ref, 0.1, "kl")
    assert res.primal[1] == pytest.approx(direct.primal_value, abs=1e-12)
