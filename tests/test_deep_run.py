"""The deep kind on the one registry: tl.run, the DeepResult (save/load, long table, plot) and
the CLI (`theorylab run grpo-twin tokentree:V=4,L=3 --steps N`, `theorylab list losses`)."""

from __future__ import annotations

import json

import numpy as np
import pytest

pytest.importorskip("torch")

import theorylab as tl  # noqa: E402
from theorylab.cli import main  # noqa: E402
from theorylab.results import DeepResult  # noqa: E402


def test_tl_run_a_twin_and_round_trip_its_result(tmp_path):
    res = tl.run("rloo-twin:beta=0.5", "tokentree:V=2,L=2", steps=200, record_every=50)
    assert isinstance(res, DeepResult)
    assert res.steps.tolist() == [0, 50, 100, 150, 200]
    assert res.tv_predicted.shape == (1, 5)  # exact mode is deterministic: one run
    assert res.summary()["tv_predicted"] < 1e-3
    assert res.config["kind"] == "deep" and res.config["algorithm"] == "rloo-twin:beta=0.5"
    res.save(tmp_path / "r")
    back = tl.Result.load(tmp_path / "r")
    assert isinstance(back, DeepResult)
    assert np.array_equal(back.final_seq_logp, res.final_seq_logp)
    cols = res.frame_columns()
    assert len(cols["step"]) == 5 and set(cols) >= {"seed", "step", "kl_optimum", "pass_at_k"}
    res.plot(tmp_path / "r.png")
    assert (tmp_path / "r.png").stat().st_size > 0


def test_sampled_mode_runs_once_per_seed():
    res = tl.run(
        "grpo-twin:lr=0.25", "tokentree:V=2,L=2", steps=20, mode="sampled", batch=8, seeds=2
    )
    assert res.tv_predicted.shape[0] == 2
    assert not np.array_equal(res.final_seq_logp[0], res.final_seq_logp[1])


def test_bad_runs_say_what_is_wrong():
    with pytest.raises(ValueError, match="needs a budget: steps"):
        tl.run("grpo-twin", "tokentree:V=2,L=2")
    with pytest.raises(ValueError, match="no parameter 'episodes'"):
        tl.run("grpo-twin", "tokentree:V=2,L=2", episodes=10)
    with pytest.raises(ValueError, match="runs on a token-tree task"):
        tl.run("grpo-twin", "riverswim:S=3,H=4", steps=10)
    with pytest.raises(ValueError, match="steps must be a positive integer"):
        tl.run("grpo-twin", "tokentree:V=2,L=2", steps=0)


def test_cli_runs_a_twin_and_lists_losses(capsys, tmp_path):
    out = tmp_path / "g.json"
    assert (
        main(["run", "grpo-twin", "tokentree:V=4,L=3", "--steps", "1500", "--json", str(out)]) == 0
    )
    text = capsys.readouterr().out
    assert "grpo-twin" in text and "TV to predicted" in text
    summary = json.loads(out.read_text())
    assert summary["tv_predicted"] < 1e-6  # 1500 exact steps: on GRPO's predicted point
    assert summary["kl_optimum"] > 1e-2  # ... which is not pi*_beta
    assert main(["list", "losses"]) == 0
    listing = capsys.readouterr().out
    for name in ("dpo", "ipo", "rpo", "vpo", "xpo", "chipo", "grpo", "dr-grpo", "rloo", "cql"):
        assert f"\n{name} " in listing
