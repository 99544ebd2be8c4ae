"""The single run protocol: one registry, one ``tl.run`` for every kind, one result family."""

from __future__ import annotations

import csv
import json
import warnings

import numpy as np
import pytest

import theorylab as tl
from theorylab.algorithms.registry import KINDS, get_algorithm, list_algorithms
from theorylab.bounds import list_bounds
from theorylab.cli import main
from theorylab.errors import UnknownNameError
from theorylab.results import RESULT_TYPES, RegretResult, Result, SuboptimalityResult, load_result

ONLINE = ("ucbvi-bernstein", "riverswim:S=6,H=20")
OFFLINE = ("vi-lcb", "random:S=8,A=3,gamma=0.9,seed=31")


@pytest.fixture(scope="module")
def online():
    return tl.run(*ONLINE, episodes=60, seeds=3)


@pytest.fixture(scope="module")
def offline():
    return tl.run(*OFFLINE, dataset_size=4000, seeds=4)


# --------------------------------------------------------------------------- one registry
def test_every_algorithm_has_a_kind_a_problem_and_real_bound_cards():
    names = list_algorithms()
    assert {"ucbvi-bernstein", "vi-lcb", "lsvi-ucb", "pevi"} <= set(names)
    cards = set(list_bounds())
    for n in names:
        e = get_algorithm(n)
        assert e.kind in KINDS and e.problem and e.summary
        assert set(e.bounds) <= cards, (n, e.bounds)
        assert not set(e.parameters()) & set(KINDS[e.kind].constructor_args)
    assert set().union(*(list_algorithms(k) for k in KINDS)) == set(names)
    assert get_algorithm("vi-lcb:c_L=0.5").name == "vi-lcb"
    assert get_algorithm("ucbvi-hoeffding").bounds == ("azar2017-thm1",)


def test_no_per_family_registry_remains():
    import importlib

    with pytest.raises(ImportError):
        importlib.import_module("theorylab.algorithms.offline.registry")
    import theorylab.algorithms.offline as off

    assert not hasattr(off, "OFFLINE_ALGORITHMS") and not hasattr(off, "list_offline_algorithms")


def test_list_algorithms_shows_kind_problem_and_bounds(capsys):
    assert main(["list", "algorithms", "--json"]) == 0
    rows = {r["name"]: r for r in json.loads(capsys.readouterr().out)}
    assert rows["vi-lcb"]["kind"] == "offline" and rows["vi-lcb"]["problem"] == "dataset"
    assert "vi-lcb-upper" in rows["vi-lcb"]["bounds"]
    assert rows["lsvi-ucb"]["kind"] == "online" and rows["lsvi-ucb"]["problem"] == "linear"
    assert rows["ucbvi-bernstein"]["bounds"] == "azar2017-thm2"


def test_unknown_name_lists_every_kind():
    with pytest.raises(UnknownNameError, match="vi-lcb") as info:
        tl.run("nosuch", "riverswim", episodes=3)
    assert "ucbvi-bernstein" in str(info.value)


# --------------------------------------------------------------------------- one tl.run
def test_tl_run_runs_both_kinds(online, offline):
    assert isinstance(online, RegretResult) and isinstance(offline, SuboptimalityResult)
    assert online.regret.shape == (3, 60) and offline.suboptimality.shape == (4, 1)
    assert online.config["kind"] == "online" and offline.config["kind"] == "offline"
    # offline default: the uniform behaviour policy, and the discounted reading of the model
    assert offline.coverage["coverage"] == 0.0 and offline.coverage["other"] == "uniform"
    assert offline.config["H"] is None and offline.config["gamma"] == 0.9
    assert np.all(offline.suboptimality >= -1e-9)


def test_offline_scores_match_a_direct_fit_and_exact_evaluation(offline):
    """tl.run's sub-optimality is the one of fitting the same dataset by hand and evaluating
    the policy exactly (an independent path through dataset, fit and policy evaluation)."""
    from theorylab.algorithms.offline import fit, make_dataset, suboptimality
    from theorylab.mdps import make

    mdp = make(OFFLINE[1])
    mdp = mdp.with_objective(gamma=mdp.gamma, horizon=None)
    ds = make_dataset(mdp, 4000, coverage=0.0, other="uniform", seeds=4, seed=0)
    direct = suboptimality(mdp, fit("vi-lcb", ds).policy)
    np.testing.assert_allclose(offline.suboptimality[:, 0], direct, rtol=0, atol=1e-12)


def test_nested_dataset_sizes_give_an_n_curve():
    res = tl.run("pevi-tabular", "random:S=4,A=2,H=3,seed=2", dataset_size=[300, 900], seeds=3)
    assert res.suboptimality.shape == (3, 2)
    assert list(res.dataset_sizes) == [300, 900]
    frame = res.frame_columns()
    assert list(frame["dataset_size"]) == [300, 900] * 3
    with pytest.raises(ValueError, match="increasing"):
        tl.run("pevi-tabular", "random:S=4,A=2,H=3", dataset_size=[900, 300])


@pytest.mark.parametrize(
    "name, problem, kwargs, match",
    [
        (
            *OFFLINE,
            {"episodes": 10},
            r"no parameter 'episodes' \(episodes= is the budget of adversarial, cascading, online",
        ),
        (*ONLINE, {"dataset_size": 10}, "no parameter 'dataset_size'"),
        (*OFFLINE, {}, "needs a budget: dataset_size"),
        (*ONLINE, {}, "needs a budget: episodes"),
        (*ONLINE, {"episodes": 5, "nosuch": 1}, "has no parameter 'nosuch'; its parameters: delta"),
        (*OFFLINE, {"dataset_size": 50, "tau": 0.2}, "no parameter 'tau'"),
    ],
)
def test_a_wrong_budget_for_the_kind_is_a_clear_error(name, problem, kwargs, match):
    with pytest.raises(ValueError, match=match):
        tl.run(name, problem, seeds=1, **kwargs)


def test_run_offline_alias_warns_and_agrees(offline):
    with pytest.warns(DeprecationWarning):
        old = tl.run_offline(OFFLINE[0], OFFLINE[1], 4000, 0.0, seeds=4)
    assert old["suboptimality"] == offline.suboptimality[:, 0].tolist()
    assert old["C_star"] == offline.coverage["C_star"]


# --------------------------------------------------------------------------- one result family
@pytest.mark.parametrize("which", ["online", "offline"])
def test_results_summarise_plot_frame_and_round_trip(which, online, offline, tmp_path):
    res = {"online": online, "offline": offline}[which]
    assert isinstance(res, Result) and type(res) in RESULT_TYPES.values()
    s = res.summary()
    assert s["algorithm"] == res.config["algorithm"] and s["seeds"] == res.n_seeds
    png = tmp_path / "fig.png"
    res.plot(png)
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    cols = res.frame_columns()
    lengths = {len(v) for v in cols.values()}
    assert len(lengths) == 1 and sorted(set(cols["seed"])) == res.config["seeds"]
    res.save(tmp_path / "r")
    back = load_result(tmp_path / "r")
    assert type(back) is type(res) and back.config == json.loads(json.dumps(res.config))
    for name, arr in res.arrays().items():
        np.testing.assert_array_equal(back.arrays()[name], arr)
    assert type(res).load(tmp_path / "r").summary() == pytest.approx(res.summary())
    other = SuboptimalityResult if which == "online" else RegretResult
    with pytest.raises(ValueError, match="not a"):
        other.load(tmp_path / "r")


def test_to_frame_is_a_dataframe_with_pandas_and_columns_without(online, monkeypatch):
    pd = pytest.importorskip("pandas")
    frame = online.to_frame()
    assert isinstance(frame, pd.DataFrame) and len(frame) == 3 * 60
    last = frame[frame.episode == 60].sort_values("seed").cumulative_regret.to_numpy()
    np.testing.assert_allclose(last, online.cumulative_regret[:, -1])
    import builtins

    real_import = builtins.__import__

    def no_pandas(name, *args, **kwargs):
        if name == "pandas":
            raise ImportError("no pandas")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_pandas)
    cols = online.to_frame()
    assert isinstance(cols, dict) and len(cols["episode"]) == 3 * 60


def test_a_format_1_result_still_loads(online, tmp_path):
    online.save(tmp_path / "r")
    meta = json.loads((tmp_path / "r" / "result.json").read_text())
    meta["format"] = "theorylab.RunResult/1"
    del meta["result_kind"]
    (tmp_path / "r" / "result.json").write_text(json.dumps(meta))
    back = load_result(tmp_path / "r")
    assert isinstance(back, RegretResult)
    np.testing.assert_array_equal(back.regret, online.regret)


def test_cli_run_offline_with_csv_and_no_coverage(tmp_path, capsys):
    out = tmp_path / "out.csv"
    argv = ["run", *OFFLINE, "-N", "4000", "--seeds", "4", "--csv", str(out), "--no-progress"]
    assert main(argv) == 0
    printed = capsys.readouterr().out
    assert "vi-lcb" in printed and "0.0 (uniform)" in printed
    with open(out, newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == 4 and {r["dataset_size"] for r in rows} == {"4000"}
    direct = tl.run(*OFFLINE, dataset_size=4000, seeds=4)
    got = [float(r["suboptimality"]) for r in rows]
    np.testing.assert_allclose(got, direct.suboptimality[:, 0], rtol=0, atol=0)


def test_cli_run_online_csv_and_parquet(tmp_path):
    pytest.importorskip("pyarrow")
    pd = pytest.importorskip("pandas")
    argv = ["run", *ONLINE, "-K", "20", "-B", "2", "--no-progress"]
    argv += ["--csv", str(tmp_path / "a.csv"), "--parquet", str(tmp_path / "a.parquet")]
    assert main(argv) == 0
    a = pd.read_csv(tmp_path / "a.csv")
    b = pd.read_parquet(tmp_path / "a.parquet")
    assert len(a) == len(b) == 40
    np.testing.assert_allclose(a.cumulative_regret.to_numpy(), b.cumulative_regret.to_numpy())


def test_cli_plot_for_an_offline_run_writes_the_figure(tmp_path, capsys):
    png = tmp_path / "off.png"
    argv = ["run", *OFFLINE, "-N", "2000", "-B", "3", "--plot", str(png), "--no-progress"]
    assert main(argv) == 0
    assert png.read_bytes()[:4] == b"\x89PNG"
    assert "without reference lines: suboptimality result" in capsys.readouterr().out


def test_agent_classes_still_run_without_registration():
    from sweep_test_agents import RandomPolicyAgent  # tests/ is on sys.path (conftest.py)

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        res = tl.run(RandomPolicyAgent, "riverswim:S=3,H=3", episodes=5, seeds=2)
    assert isinstance(res, RegretResult) and res.config["algorithm"] == "RandomPolicyAgent"


def test_long_table_resolution_full_is_every_episode_and_grid_says_what_it_drops(tmp_path):
    """to_frame() is one row per seed x episode whatever K (README); "grid" thins a long run
    to the log-spaced episode grid and thinning() says so; short runs are never thinned."""
    from theorylab.results import RegretResult

    B, K = 2, 20_000
    regret = np.random.default_rng(0).random((B, K))
    long = RegretResult(regret, regret, np.full((B, K), np.nan), 1.0, 1.0, {"seeds": [3, 5]})
    full = long.frame_columns()  # the default: every episode
    assert len(full["episode"]) == B * K and list(full["seed"][[0, K]]) == [3, 5]
    np.testing.assert_array_equal(
        full["cumulative_regret"][K - 1 :: K], regret.cumsum(axis=1)[:, -1]
    )
    grid = long.frame_columns("grid")
    n = len(long.episode_grid())
    assert len(grid["episode"]) == B * n and n < 100
    assert long.thinning() == f"{n} log-spaced episodes of 20,000 per seed"
    assert long.default_resolution() == "grid"
    short = RegretResult(regret[:, :50], regret[:, :50], regret[:, :50], 1.0, 1.0, {})
    assert short.thinning() is None and short.default_resolution() == "full"
    assert len(short.frame_columns("grid")["episode"]) == 100
    long.to_csv(tmp_path / "g.csv", "grid")
    assert len((tmp_path / "g.csv").read_text().splitlines()) == 1 + B * n
    with pytest.raises(ValueError, match="resolution must be 'full' or 'grid', got 'half'"):
        long.to_frame(resolution="half")
