"""What the CLI and the benchmarks print, as a reader sees it (issue 25, "Display").

* ``theorylab list`` prints every summary in full, wrapped to the terminal, and ``--json``;
* ``bench ucbvi``'s ``*`` has a legend; ``bench planning`` gives no share of memory bandwidth to
  a sweep that reads from cache (it showed 113-196%) and its byte model counts the arrays' bytes;
* ``bench llm`` without TRL says so and runs its rows against plain PyTorch;
* ``validate`` says which scale's settings ran, and a claim's figure carries its final verdict;
* the demo's help names the algorithms the demo runs.
"""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

from theorylab.cli import build_parser, main

LISTS = ("algorithms", "mdps", "bounds", "validations", "losses")


@pytest.mark.parametrize("columns", [80, 160])
@pytest.mark.parametrize("what", LISTS)
def test_list_prints_every_summary_in_full_within_the_terminal(what, columns, monkeypatch, capsys):
    if what == "losses":
        pytest.importorskip("torch")
    monkeypatch.setenv("COLUMNS", str(columns))
    assert main(["list", what, "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert main(["list", what]) == 0
    out = capsys.readouterr().out
    too_wide = [line for line in out.splitlines() if len(line) > columns]
    assert too_wide == []
    flat = " ".join(out.split())
    for row in rows:
        assert row["name"] in flat
        summary = " ".join(str(row["summary"]).split())
        assert summary in flat, f"{row['name']}: summary not printed in full"


def test_list_algorithms_shows_bounds_and_parameters(monkeypatch, capsys):
    monkeypatch.setenv("COLUMNS", "100")
    assert main(["list", "algorithms"]) == 0
    flat = " ".join(capsys.readouterr().out.split())
    assert "bounds: azar2017-thm2" in flat
    assert "parameters: " in flat and "delta=0.1" in flat


def test_bench_ucbvi_explains_its_star():
    from theorylab.bench.ucbvi import format_table

    row = {
        "algorithm": "ucbvi-hoeffding", "backend": "numpy", "mdp": "chain", "S": 10, "H": 20,
        "B": 1, "plan_s": 1.0, "counts_s": 1.0, "regret_s": 1.0, "rollout_s": 1.0,
        "policy_s": 1.0, "batch_episodes_per_s": 100.0, "seed_episodes_per_s": 100.0,
    }  # fmt: skip
    starred = format_table([{**row, "speedup_vs_rlberry_reference": 3.0}])
    assert "3x*" in starred
    legend = [line for line in starred.splitlines() if line.startswith("* ")]
    assert legend and "not measured in this run" in " ".join(starred.split())
    measured = format_table([{**row, "speedup_vs_rlberry_measured": 3.0}])
    assert "3x" in measured and "*" not in measured


def test_bench_planning_byte_model_counts_the_arrays_a_sweep_reads():
    from theorylab.bench.planning import _build, sweep_bytes
    from theorylab.kernels.bellman import csr_arrays

    S, A, b = 300, 3, 4
    mdp = _build(S, A, b, 0.9, 0)
    M = csr_arrays(mdp.P)
    V = np.zeros(S)
    arrays = M.data.nbytes + M.indices.nbytes + M.indptr.nbytes + mdp.R.nbytes + V.nbytes
    assert sweep_bytes(S, A, mdp.nnz, index_bytes=M.indices.itemsize) == arrays


def test_bench_planning_gives_no_bandwidth_share_to_a_sweep_in_cache():
    from theorylab.bench.planning import _bench_size, format_table, sweep_bytes

    S, A, b = 200, 2, 3
    kwargs = dict(repeats=1, gamma=0.9, tol=1e-3, seed=0, solve=False, float32=False, peers=False)
    cached = _bench_size(S, A, b, read_gbs=1.0, llc=2**30, **kwargs)
    assert all(sw["in_cache"] and sw["bw_fraction"] is None for sw in cached["sweeps"])
    table = format_table([cached])
    assert "cache" in table and "%" not in table.split("byte model")[0].split("\n", 2)[2]
    assert "last-level cache" in table
    # a working set larger than the cache is held against the memory bandwidth
    small_cache = sweep_bytes(S, A, S * A * b) - 1
    in_memory = _bench_size(S, A, b, read_gbs=1.0, llc=small_cache, **kwargs)
    assert all(not sw["in_cache"] for sw in in_memory["sweeps"])
    assert all(sw["bw_fraction"] == pytest.approx(sw["gbs"]) for sw in in_memory["sweeps"])
    assert "last-level cache" not in format_table([in_memory])


def test_last_level_cache_is_the_largest_data_cache():
    from theorylab.bench.machine import last_level_cache_bytes

    llc = last_level_cache_bytes()
    assert llc is None or llc >= 2**16


def test_bench_llm_without_trl_says_so_and_runs_against_plain_pytorch(monkeypatch, capsys):
    pytest.importorskip("transformers")
    import importlib.util

    import theorylab.bench.llm as llm

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "trl" else real(name, *a)
    )
    tiny = dict(vocab=64, n_layer=1, n_embd=16, n_head=2, prompt=4, completion=6, batch=2)
    monkeypatch.setitem(llm.CONFIGS, "quick", tiny)
    real_plain = llm.bench_plain
    monkeypatch.setattr(
        llm, "bench_plain", lambda cfg, **kw: real_plain(cfg, **{**kw, "warmup": 0, "rounds": 1})
    )
    rows = llm.bench_llm(quick=True, runs=2)
    err = capsys.readouterr().err
    assert "run 2 of 2" in err and {r["run"] for r in rows} == {1, 2}
    assert "TRL is not installed" in err and "plain PyTorch" in err and "skipped" in err
    assert {r["step"] for r in rows} == {"DPO step", "GRPO step (given completions)"}
    assert {r["peer"] for r in rows} == {"plain PyTorch"}
    assert {r["trainer"] for r in rows} == {
        "theorylab padded", "theorylab buckets", "theorylab packed", "plain PyTorch"
    }  # fmt: skip
    assert all(r["loss_gap"] <= 1e-5 and r["grad_gap"] <= 1e-5 for r in rows)
    table = llm.format_table(rows)
    assert "ratio vs plain" in table and "TRL is not installed" in table
    assert "Reproducibility across runs" in table  # every row's ratio to plain in runs 1 / 2
    no_trl = [r["ratio_vs_trl"] for r in rows]
    assert all(r["clock"] == "thread_time" for r in rows) and all(x != x for x in no_trl)


def test_plain_pytorch_losses_are_the_papers_formulas():
    # the plain-PyTorch peer, checked on hand-made log-probabilities (not on theorylab's losses)
    torch = pytest.importorskip("torch")
    import types

    import theorylab.bench.llm as llm

    def fixed_model(logp_rows):
        # a "model" whose next-token log-probs are given: logits = log-probs (softmax-invariant)
        def forward(input_ids, attention_mask):
            return types.SimpleNamespace(logits=logp_rows)

        return forward

    # one pair, T = 3, vocabulary 2; every token id 1: the completion logp is logits[:, t, 1]
    ids = torch.ones(2, 3, dtype=torch.long)
    am, cm = torch.ones_like(ids), torch.tensor([[0, 1, 1], [0, 1, 1]])
    pol = torch.log(torch.tensor([[[0.5, 0.5], [0.2, 0.8], [0.5, 0.5]],
                                  [[0.5, 0.5], [0.6, 0.4], [0.5, 0.5]]]))  # fmt: skip
    ref = torch.log(torch.full((2, 3, 2), 0.5))
    loss = llm.plain_dpo_loss(fixed_model(pol), fixed_model(ref), ids, am, cm, beta=0.1)
    c, r = np.log(0.8) + np.log(0.5), np.log(0.4) + np.log(0.5)
    c_ref = r_ref = 2 * np.log(0.5)
    expected = -np.log(1 / (1 + np.exp(-0.1 * ((c - c_ref) - (r - r_ref)))))
    assert float(loss) == pytest.approx(expected, rel=1e-6)
    # GRPO on-policy, policy = reference: KL 0, rho 1, loss = -mean_i A_i = 0 for each group
    g = llm.plain_grpo_loss(
        fixed_model(pol), fixed_model(pol), ids, am, cm, torch.tensor([1.0, 0.0]), 2, 1
    )
    assert float(g) == pytest.approx(0.0, abs=1e-7)


def test_validate_says_which_scale_ran():
    from theorylab.validations import VALIDATIONS
    from theorylab.validations.claim import Report, scale_settings

    claim = VALIDATIONS.get("ucbvi-hoeffding-riverswim")
    paper, quick = scale_settings(claim, "paper"), scale_settings(claim, "quick")
    assert "episodes=40,000,000" in paper and "mdp=riverswim:S=2,H=2" in paper
    assert "episodes=2,000" in quick and "40,000,000" not in quick
    rep = Report("x", claim.statement, "paper", True, [], 1.0, settings=paper)
    assert f"this run, scale paper: {paper}" in rep.format()
    assert rep.to_dict()["settings"] == paper


def test_a_claims_figure_is_titled_with_its_final_verdict(tmp_path, monkeypatch):
    import theorylab.plotting as plotting
    from theorylab.validations import validate

    titles = []
    real = plotting.save_figure

    def spy(fig, path, **kw):
        figure = fig.figure if hasattr(fig, "figure") and fig.figure is not None else fig
        titles.append([ax.get_title() for ax in figure.axes])
        return real(fig, path, **kw)

    monkeypatch.setattr(plotting, "save_figure", spy)
    rep = validate("ucbvi-bernstein-riverswim", "quick", plot=str(tmp_path / "f.png"))
    assert rep.figure == str(tmp_path / "f.png") and (tmp_path / "f.png").exists()
    final = titles[-1][0]
    power = rep.power
    assert final.endswith(
        f": {rep.verdict} ({power['failing']}/{power['controls']} controls fail it)"
    )
    assert "before controls" not in final
    rep = validate(
        "ucbvi-bernstein-riverswim", "quick", plot=str(tmp_path / "g.png"), controls=False
    )
    assert titles[-1][0].endswith(f": {rep.verdict} (checks only; controls not run)")


def test_demo_help_names_the_algorithms_it_runs():
    from theorylab.demo import DEMO_ALGORITHMS

    sub = next(a for a in build_parser()._actions if a.dest == "command")
    help_text = next(c.help for c in sub._choices_actions if c.dest == "demo")
    assert all(name in help_text for name in DEMO_ALGORITHMS)


def test_the_readme_names_the_claims_that_are_smoke_tests_at_quick_scale():
    from pathlib import Path

    from theorylab.validations import VALIDATIONS, list_validations

    def smoke(scale):
        return scale.get("smoke") if isinstance(scale, dict) else getattr(scale, "smoke", None)

    smoke_at_quick = {
        n for n in list_validations() if smoke(VALIDATIONS.get(n).scales.get("quick"))
    }
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")
    flat = " ".join(readme.split())
    start = flat.index("**SMOKE**")
    sentence = flat[start : flat.index("marks a scale labelled a smoke test", start)]
    named = set(re.findall(r"`([a-z0-9-]+)`", sentence)) - {"theorylab"}
    assert named == smoke_at_quick


def test_validate_all_explains_the_verdicts_its_table_shows():
    from theorylab.cli import verdict_legend

    assert verdict_legend(["PASS", "PASS"]) == []
    lines = verdict_legend(["PASS", "SMOKE", "UNPOWERED"])
    assert [line.split(":")[0] for line in lines] == ["UNPOWERED", "SMOKE"]
    assert "proves nothing" in lines[1]
