"""The command line: parseable output, the JSON fields the README promises, clean errors."""

from __future__ import annotations

import json

import pytest

from theorylab.cli import main


def test_list_mdps_json_names_every_family(capsys):
    assert main(["list", "mdps", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    names = {r["name"] for r in rows}
    assert {"riverswim", "gridworld", "chain", "deepsea", "random-sparse"} <= names
    assert all(r["summary"] for r in rows)


def test_list_algorithms_and_bounds(capsys):
    assert main(["list", "algorithms", "--json"]) == 0
    kinds = {r["name"]: r["kind"] for r in json.loads(capsys.readouterr().out)}
    assert kinds["ucbvi-bernstein"] == "online" and kinds["vi-lcb"] == "offline"
    assert main(["list", "bounds"]) == 0
    assert "azar2017-thm2" in capsys.readouterr().out


def test_solve_json_reports_value_and_time(capsys):
    assert main(["solve", "riverswim:S=2,H=2", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    # hand value (tests/test_families.py): V*_1(s=0) for RiverSwim S=2, H=2 is 0.602
    assert out["value"] == pytest.approx(0.602, abs=1e-12)
    assert out["solve_seconds"] >= 0 and out["policy_first_stage"] == [1, 1]


@pytest.mark.parametrize("method", ["value_iteration", "policy_iteration", "lp"])
def test_solve_discounted_methods_agree(capsys, method):
    assert main(["solve", "riverswim:S=4", "--gamma", "0.9", "--json", "--method", method]) == 0
    value = json.loads(capsys.readouterr().out)["value"]
    assert (
        main(["solve", "riverswim:S=4", "--gamma", "0.9", "--json", "--method", "policy_iteration"])
        == 0
    )
    assert value == pytest.approx(json.loads(capsys.readouterr().out)["value"], abs=1e-7)


def test_solve_span_stopping_reports_fewer_sweeps_with_the_same_certificate(capsys):
    argv = ["solve", "random-sparse:S=300,A=3,b=5", "--gamma", "0.99", "--tol", "1e-6", "--json"]
    outs = {}
    for rule in ("sup", "span"):
        assert main([*argv, "--stopping", rule]) == 0
        outs[rule] = json.loads(capsys.readouterr().out)
        assert outs[rule]["stopping"] == rule and outs[rule]["error_bound"] <= 1e-6
    assert outs["span"]["iterations"] < outs["sup"]["iterations"]
    assert outs["span"]["value"] == pytest.approx(outs["sup"]["value"], abs=2e-6)


def test_run_writes_the_promised_json(tmp_path, capsys):
    out = tmp_path / "run.json"
    rc = main(
        [
            "run",
            "ucbvi-bernstein",
            "riverswim:S=3,H=3",
            "--episodes",
            "20",
            "--seeds",
            "3",
            "--no-progress",
            "--json",
            str(out),
            "--plot",
            str(tmp_path / "r.svg"),
        ]
    )
    assert rc == 0
    d = json.loads(out.read_text())
    for key in ("final_regret_mean", "final_regret_ci", "episodes_per_second", "cumulative_regret"):
        assert key in d
    assert len(d["cumulative_regret"]) == 3 and len(d["cumulative_regret"][0]) == 20
    lo, hi = d["final_regret_ci"]
    assert lo <= d["final_regret_mean"] <= hi
    assert (tmp_path / "r.svg").read_text().lstrip().startswith("<?xml")


def test_run_offline_reports_suboptimality(tmp_path, capsys):
    out = tmp_path / "off.json"
    rc = main(
        [
            "run",
            "pessimistic-vi-hoeffding",
            "tempting-arms",
            "--dataset-size",
            "2000",
            "--coverage",
            "0.5",
            "--seeds",
            "2",
            "--json",
            str(out),
        ]
    )
    assert rc == 0
    d = json.loads(out.read_text())
    assert len(d["suboptimality"]) == 2 and d["N"] > 0 and d["C_star"] >= 1
    assert all(s >= -1e-12 for s in d["suboptimality"])


@pytest.mark.parametrize(
    "argv, message",
    [
        (["solve", "riverswim:S=1"], "riverswim needs S >= 2"),
        (["solve", "nosuchmdp"], "unknown MDP family 'nosuchmdp'"),
        (["run", "ucbvi-hoeffding", "riverswim", "--seeds", "2"], "needs a budget: episodes"),
        (["run", "vi-lcb", "riverswim"], "needs a budget: dataset_size"),
        (["run", "nosuchalgo", "riverswim", "-K", "2"], "unknown algorithm 'nosuchalgo'"),
        # the kind is read from the registry first: no "needs --episodes" for an unknown name
        (["run", "nosuchalgo", "riverswim"], "unknown algorithm 'nosuchalgo'; available:"),
        (
            ["run", "ucbvi-bernstein", "riverswim", "-K", "2", "-p", "nosuch=1"],
            "has no parameter 'nosuch'; its parameters: delta=0.1",
        ),
        (["run", "ucbvi-bernstein", "riverswim", "-K", "2", "--tau", "0.3"], "no parameter 'tau'"),
        (
            ["run", "vi-lcb", "riverswim", "-K", "5"],
            "has no parameter 'episodes' "
            "(episodes= is the budget of adversarial, cascading, online, preference algorithms)",
        ),
        (["run", "vi-lcb", "riverswim:S=4,H=5", "-N", "100"], "stated for discounted MDPs"),
        (["run", "greedy", "riverswim", "-N", "100"], "no parameter 'dataset_size'"),
        (["run", "ucbvi-hoeffding", "riverswim", "-K", "2", "-p", "delta"], "key=value"),
    ],
)
def test_bad_input_exits_2_with_a_specific_message(argv, message, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def test_solve_cvar_and_iterated_cvar(capsys):
    # cvar-safe-risky:H=3 by hand (mdps/families/risk_instances.py): V* = 1.6 via RISKY,
    # CVaR*_0.25 = 1.0 via SAFE; iterated CVaR at alpha = 1 is the risk-neutral V*.
    assert main(["solve", "cvar-safe-risky:H=3", "--cvar", "0.25", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["value"] == pytest.approx(1.0, abs=1e-12)
    assert out["risk_neutral_value"] == pytest.approx(1.6, abs=1e-12)
    assert main(["solve", "cvar-safe-risky:H=3", "--iterated-cvar", "1", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["value"] == pytest.approx(1.6, abs=1e-12)


def test_run_passes_risk_levels(tmp_path):
    out = tmp_path / "r.json"
    assert (
        main(
            [
                "run",
                "cvar-ucbvi",
                "cvar-safe-risky",
                "--tau",
                "0.25",
                "-K",
                "5",
                "-B",
                "2",
                "--no-progress",
                "--json",
                str(out),
            ]
        )
        == 0
    )
    cfg = json.loads(out.read_text())["config"]
    assert cfg["params"]["tau"] == 0.25 and cfg["objective"].startswith("static CVaR")
