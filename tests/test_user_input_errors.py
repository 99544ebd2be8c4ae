"""Bad input a new user hits (issue 16): each gets a clear, specific error instead of being
ignored, silently replaced by a default, or surfacing as a raw exception."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

import theorylab as tl
from theorylab.algorithms.planning import backward_induction, solve, value_iteration
from theorylab.cli import main
from theorylab.mdps import make


@pytest.fixture(scope="module")
def river():
    return make("riverswim:S=4,H=4")


def test_solve_refuses_an_unknown_method(river):
    with pytest.raises(ValueError, match="unknown method 'nosuch'; methods: auto, backward"):
        solve(river, method="nosuch")


@pytest.mark.parametrize("keyword", [{"tol": 1e-3}, {"stopping": "span"}, {"max_iter": 5}])
def test_solve_refuses_keywords_backward_induction_does_not_take(river, keyword):
    with pytest.raises(TypeError, match="backward_induction takes no keywords"):
        tl.solve(river, **keyword)


def test_solve_passes_keywords_to_the_method_that_takes_them(river):
    sol = solve(river, gamma=0.9, tol=1e-6, stopping="span")
    assert sol.info["stopping"] == "span" and sol.info["error_bound"] <= 1e-6
    with pytest.raises(TypeError, match="policy_iteration takes gamma, max_iter"):
        solve(river, "policy_iteration", gamma=0.9, tol=1e-6)
    assert solve(river, "backward_induction").value == backward_induction(river).value


@pytest.mark.parametrize("tol", [-1.0, 0.0, float("nan"), float("inf")])
def test_value_iteration_refuses_a_non_positive_tolerance(river, tol):
    with pytest.raises(ValueError, match="tol must be a positive number"):
        value_iteration(river, gamma=0.9, tol=tol)


def test_cli_solve_refuses_a_negative_tolerance_and_tol_on_backward_induction(capsys):
    with pytest.raises(SystemExit) as info:
        main(["solve", "riverswim:S=4,H=4", "--gamma", "0.9", "--tol", "-1"])
    assert info.value.code == 2
    assert "--tol: must be a positive number, got -1" in capsys.readouterr().err
    assert main(["solve", "riverswim:S=4,H=4", "--tol", "1e-3"]) == 2
    assert "the method here is backward_induction" in capsys.readouterr().err


def test_validate_refuses_an_unknown_scale():
    with pytest.raises(ValueError, match=r"has scales \['full', 'quick'\], not 'huge'"):
        tl.validate("lsvi-ucb-onehot-count-bonus", scale="huge")


def test_lp_policy_agrees_with_backward_induction_and_marks_unreachable_states(capsys):
    assert main(["solve", "riverswim:S=4,H=4", "--method", "lp", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    bi = backward_induction(make("riverswim:S=4,H=4")).policy[0]
    shown = out["policy_first_stage"]
    assert shown[0] == bi[0]  # mu0 is state 0: the only state reachable at h = 0
    assert shown[1:] == [None, None, None]
    assert out["policy_undetermined_states"] == 3
    assert main(["solve", "riverswim:S=4,H=4", "--method", "lp"]) == 0
    text = capsys.readouterr().out
    assert "policy   h=0 1 - - -" in text and "undetermined" in text


def test_lp_prints_no_solver_banner():
    code = (
        "from theorylab.mdps import make\n"
        "from theorylab.algorithms.planning.lp import lp_solve\n"
        "sol = lp_solve(make('riverswim:S=3,H=3'))\n"
        "print('value', round(sol.value, 6))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert proc.stdout.splitlines() == [f"value {round(float(_v3()), 6)}"], proc.stdout


def _v3() -> float:
    return backward_induction(make("riverswim:S=3,H=3")).value


def test_tables_have_no_trailing_spaces(capsys):
    assert main(["list", "bounds"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines and all(line == line.rstrip() for line in lines)


def test_demo_refuses_zero_episodes_or_seeds(capsys):
    for flag in ("--episodes", "--seeds"):
        assert main(["demo", flag, "0", "--no-progress", "--out", "x.png"]) == 2
        assert "positive integer" in capsys.readouterr().err


def test_policy_iteration_values_match_value_iteration(river):
    # an exactness check beside the input checks above: the methods of solve() agree
    pi = solve(river, "policy_iteration", gamma=0.9)
    vi = solve(river, gamma=0.9, tol=1e-12)
    np.testing.assert_allclose(pi.V, vi.V, atol=1e-9)


def test_plot_destination_is_checked_before_running(capsys, monkeypatch):
    import theorylab.experiment as experiment

    def must_not_run(*args, **kwargs):
        raise AssertionError("ran before checking the destination")

    monkeypatch.setattr(experiment, "run", must_not_run)
    code = main(
        ["run", "ucbvi-bernstein", "riverswim:S=3,H=3", "-K", "5", "--plot", "/proc/nosuch/x.png"]
    )
    assert code == 2
    assert "cannot write /proc/nosuch/x.png" in capsys.readouterr().err


def test_ctrl_c_exits_130_with_one_line(capsys, monkeypatch):
    import theorylab.cli as cli

    def interrupted(args):
        raise KeyboardInterrupt

    monkeypatch.setattr(cli, "cmd_run", interrupted)
    monkeypatch.setattr(cli, "cmd_sweep", interrupted)
    assert main(["run", "greedy", "riverswim:S=3,H=3", "-K", "5"]) == 130
    err = capsys.readouterr().err.strip()
    assert err == "theorylab run: interrupted"
    assert main(["sweep", "g.toml", "--store", "s"]) == 130
    assert "run the same command to resume" in capsys.readouterr().err


def test_version_and_help_texts(capsys):
    with pytest.raises(SystemExit) as info:
        main(["--version"])
    assert info.value.code == 0 and capsys.readouterr().out.startswith("theorylab ")
    from theorylab.cli import build_parser

    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    for command, flag in [
        ("run", "--seeds"),
        ("validate", "--scale"),
        ("run", "--no-progress"),
        ("demo", "--seeds"),
        ("bench", "which"),
    ]:
        action = next(
            a for a in sub.choices[command]._actions if flag in a.option_strings or a.dest == flag
        )
        assert action.help, f"{command} {flag} has no help text"


def test_list_fits_the_terminal(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "100")
    for what in ("mdps", "algorithms"):
        assert main(["list", what]) == 0
        lines = capsys.readouterr().out.splitlines()
        assert max(map(len, lines)) <= 100, what
        assert all(line == line.rstrip() for line in lines)


def test_validate_all_plot_writes_one_figure_per_claim_or_says_why_not(
    tmp_path, capsys, monkeypatch
):
    import theorylab.validations as validations

    class Rep:
        def __init__(self, name, plot):
            self.name, self.scale, self.passed, self.seconds = name, "quick", True, 0.0
            self.figure = None
            if name == "draws":
                from pathlib import Path

                Path(plot).write_bytes(b"png")
                self.figure = plot

        def format(self):
            return f"PASS {self.name}"

        def to_dict(self):
            return {"name": self.name}

    monkeypatch.setattr(validations, "list_validations", lambda: ["draws", "exact"])
    monkeypatch.setattr(validations, "validate", lambda n, scale, plot, progress: Rep(n, plot))
    assert main(["validate", "--all", "--plot", str(tmp_path / "figs")]) == 0
    out = capsys.readouterr().out
    assert (tmp_path / "figs" / "draws.png").exists()
    assert f"wrote {tmp_path / 'figs' / 'draws.png'}" in out
    assert "(no figure: exact checks exact identities or values and draws none)" in out


def test_bench_planning_reports_progress_per_size(capsys, monkeypatch):
    import theorylab.bench.planning as planning

    monkeypatch.setattr(planning, "_bench_size", lambda S, *args: {"S": S})
    rows = planning.bench_planning(sizes=(1000, 4000), read_gbs=1.0, peers=False)
    assert [r["S"] for r in rows] == [1000, 4000]
    err = capsys.readouterr().err.splitlines()
    assert err[0].startswith("planning: 2 size(s) S = 1e+03, 4e+03")
    assert "planning: S = 1e+03 (1 of 2) ..." in err
    assert any(
        line.startswith("planning: S = 1e+03 took") and "remaining sizes" in line for line in err
    )
    assert err[-1].startswith("planning: done in")


def test_bench_planning_says_how_long_before_the_first_size(capsys, monkeypatch):
    import theorylab.bench.planning as planning

    calls = []

    def fake_size(S, *args):
        calls.append(S)
        return {"S": S}

    clock = iter(range(0, 1000, 3))  # each perf_counter call advances 3 s
    monkeypatch.setattr(planning, "_bench_size", fake_size)
    monkeypatch.setattr(planning.time, "perf_counter", lambda: float(next(clock)))
    rows = planning.bench_planning(sizes=(10**5, 10**6), read_gbs=1.0, peers=False)
    assert [r["S"] for r in rows] == [10**5, 10**6]
    assert calls[0] == planning.CALIBRATION_S  # the calibration runs first, off the table
    err = capsys.readouterr().err.splitlines()
    estimate = [i for i, line in enumerate(err) if "estimated total" in line]
    first = err.index("planning: S = 1e+05 (1 of 2) ...")
    assert estimate and estimate[0] < first
    # 3 s at S = 1e4 scaled to 1.1e6 states: 330 s
    assert "about 6 min" in err[estimate[0]], err[estimate[0]]


def test_ctrl_c_during_run_keeps_the_finished_episodes_with_save(tmp_path, capsys, monkeypatch):
    from theorylab.algorithms.online.greedy import CertaintyEquivalentGreedy as cls
    from theorylab.results import load_result

    real_update, calls = cls.update, []

    def update_then_interrupt(self, traj):
        calls.append(1)
        if len(calls) == 7:
            raise KeyboardInterrupt
        return real_update(self, traj)

    monkeypatch.setattr(cls, "update", update_then_interrupt)
    save = tmp_path / "partial"
    argv = ["run", "greedy", "riverswim:S=3,H=3", "-K", "50", "-B", "2", "--save", str(save)]
    assert main([*argv, "--no-progress"]) == 130
    err = capsys.readouterr().err
    assert "interrupted after 6 episodes; saved those" in err
    res = load_result(save)
    assert res.regret.shape == (2, 6) and res.config["interrupted_after"] == 6
    assert res.config["algorithm"] == "greedy"
    calls.clear()
    full = tl.run("greedy", "riverswim:S=3,H=3", episodes=6, seeds=2)
    np.testing.assert_array_equal(res.regret, full.regret)  # the same episodes, bit for bit


def test_plot_is_written_for_offline_runs_too(tmp_path, capsys):
    out = tmp_path / "offline.png"
    argv = ["run", "vi-lcb", "random:S=4,A=2,gamma=0.9,seed=3", "-N", "500", "-B", "2"]
    assert main([*argv, "--plot", str(out), "--no-progress"]) == 0
    assert out.stat().st_size > 0
    assert f"wrote {out}" in capsys.readouterr().out


def test_a_spec_discount_is_honoured_or_refused_everywhere_never_dropped(capsys):
    """Issue 25: ``riverswim:S=6,gamma=0.9`` carries the family's H = 20 beside the discount.
    solve honours the discount (the same V* as --gamma 0.9, not the undiscounted H = 20 value
    3.397); what can only use the H-step return refuses it naming gamma; names show it."""
    assert main(["solve", "riverswim:S=6,gamma=0.9", "--json"]) == 0
    spec = json.loads(capsys.readouterr().out)
    assert main(["solve", "riverswim:S=6", "--gamma", "0.9", "--json"]) == 0
    flag = json.loads(capsys.readouterr().out)
    assert spec["method"] == "value_iteration" and spec["H"] is None and spec["gamma"] == 0.9
    assert spec["value"] == pytest.approx(flag["value"], abs=1e-9)
    assert abs(spec["value"] - 3.397263959) > 1
    assert main(["solve", "riverswim:S=6,gamma=0.9"]) == 0
    assert "its H = 20 is not used" in capsys.readouterr().out
    # either-objective offline algorithms solve the discounted problem too; finite-horizon
    # ones (online learners, pessimistic VI, backward induction) refuse it
    off = tl.run("naive-vi", "random:S=4,A=2,gamma=0.9,seed=1", dataset_size=200, seeds=2)
    assert off.config["gamma"] == 0.9 and off.config["H"] is None
    for name, budget in [
        ("pessimistic-vi-hoeffding", {"dataset_size": 200}),
        ("ucbvi-bernstein", {"episodes": 5}),
        ("pr-lsvi", {"episodes": 5}),
    ]:
        with pytest.raises(ValueError, match=r"gamma=0\.9 \(with H=4\); drop gamma"):
            tl.run(name, "random:S=4,A=2,H=4,gamma=0.9", **budget)
    # names: a discount is shown when there is one, gamma=0.0 never
    assert make("riverswim:S=6,gamma=0.9").name == "riverswim:S=6,H=20,gamma=0.9"
    assert "gamma" not in make("random:S=4").name and "gamma" not in make("riverswim:S=4").name
    for spec_text in (
        "random:S=4,gamma=0.5",
        "random-sparse:S=6,b=2,gamma=0.5",
        "tempting-arms:gamma=0.5",
        "tempting-arms:H=2",
    ):
        mdp = make(spec_text)
        again = make(mdp.name)
        assert (again.horizon, again.gamma) == (mdp.horizon, mdp.gamma)
        assert ("gamma=0.5" in mdp.name) == ("gamma=0.5" in spec_text)
        assert ("H=" in mdp.name) == (mdp.horizon is not None)


def test_bench_runs_is_checked_before_any_work(capsys, monkeypatch):
    import theorylab.bench.machine as machine

    def no_work(**kwargs):
        raise AssertionError("the machine was measured before --runs was checked")

    monkeypatch.setattr(machine, "machine_info", no_work)
    assert main(["bench", "llm", "--quick", "--runs", "0"]) == 2
    err = capsys.readouterr().err
    assert "--runs must be a positive integer, got 0" in err and len(err.strip().splitlines()) == 1
    assert main(["bench", "planning", "--runs", "3"]) == 2
    err = capsys.readouterr().err
    assert "--runs applies to theorylab bench llm only, got bench planning" in err
    assert "Traceback" not in err
    with pytest.raises(SystemExit) as info:
        main(["bench", "llm", "--runs", "three"])
    assert info.value.code == 2 and "invalid int value: 'three'" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("algorithm", "budget", "message"),
    [
        (
            "ftrl-log-barrier-linear-q",
            {"episodes": 2},
            "ftrl-log-barrier-linear-q is an adversarial algorithm and needs a problem with a loss "
            "sequence (e.g. adversarial-linear:S=4,A=3,d=4,H=3); got 'riverswim:S=4,H=4'",
        ),
        (
            "config",
            {"iterations": 2},
            "config is a GP-bandit algorithm and needs a grid problem (gp-constrained, e.g. "
            "gp-constrained:m=50); got 'riverswim:S=4,H=4'",
        ),
        (
            "multi-batch-pe",
            {"queries": 30, "batches": 1},
            "multi-batch-pe is a multi-batch algorithm and needs a query problem (pointer-chase, "
            "e.g. pointer-chase:d=16,H=8); got 'riverswim:S=4,H=4'",
        ),
        (
            "subsample-q",
            {"k": 2},
            "subsample-q is a local-agents algorithm and needs a global agent with n local agents "
            "(local-agents, e.g. local-agents:n=64); got 'riverswim:S=4,H=4'",
        ),
        (
            "pessimistic-nash",
            {"dataset_size": 100},
            "pessimistic-nash is an offline Markov-game algorithm and needs a zero-sum Markov game "
            "(random-game, e.g. random-game:S=3,A=3,B=3,H=3); got 'riverswim:S=4,H=4'",
        ),
    ],
)
def test_a_runner_refuses_a_problem_of_another_class_in_one_line(river, algorithm, budget, message):
    """theorylab.runners.problems.require_problem: the whole message, written out here."""
    with pytest.raises(ValueError) as err:
        tl.run(algorithm, river, seeds=1, **budget)
    assert str(err.value) == message


def test_the_cascading_runner_refuses_a_tabular_mdp_in_one_line(river):
    from theorylab.algorithms.registry import list_algorithms

    cascading = list_algorithms("cascading")
    assert cascading
    with pytest.raises(ValueError) as err:
        tl.run(cascading[0], river, episodes=2, seeds=1)
    assert str(err.value) == (
        f"{cascading[0]} is a cascading algorithm and needs a cascading MDP (e.g. "
        "cascading:S=3,N=5,m=2,H=3); got 'riverswim:S=4,H=4'"
    )
