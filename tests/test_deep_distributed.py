"""Data-parallel training (``algorithms/deep/distributed.py``): 2 gloo processes under torchrun
(DDP, FSDP2 for GRPO, DDP with 2 micro-batches for A*-PO) equal 1 process on the same global
batch, on a token tree whose exact optimum is known; and the prompt-dataset trainer
(``prompt_trainer.py``: GRPO with 2 micro-batches, online DPO, 1-layer GPT-2 on arithmetic) on 2
processes equals 1 in loss, reward, gradient norm and held-out accuracy.

Tolerance: 1e-6 absolute on every per-step loss and every exact metric (KL(pi || pi*),
KL(pi || pi_ref), accuracy) at every evaluation; the measured gaps are about 1e-8 (float32 sums in
another order: DDP averages the two shards' gradients). The control: the same 2 processes without
DDP's gradient all-reduce (each rank steps on its own shard) must leave the 1-process run by more
than 1e-3. Bad launches fail with one line before any process starts.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from theorylab.algorithms.deep import distributed  # noqa: E402
from theorylab.algorithms.deep.trainer import train  # noqa: E402

MODEL = "tiny:d_model=16,n_layer=1,n_head=2"
TASK = "tokentree:V=3,L=2"  # 4 prompts
CASES = {  # name: (loss, trainer keywords)
    "grpo": ("grpo", dict(group_size=4)),
    "dpo-sampled": ("dpo:beta=0.1", dict(preference="sampled", pairs_per_prompt=4)),
    "grpo-fsdp": ("grpo", dict(group_size=4, parallel="fsdp")),
    # 2 micro-batches of 2 prompts, each split 1 + 1 over the ranks (DDP no_sync on the first),
    # with A*-PO's stage-1 V* inside the micro-batch loss
    "astar-po-micro": ("astar-po", dict(group_size=4, micro_batches=2)),
}
COMMON = dict(steps=12, eval_every=4, lr=3e-3, seed=5)
METRICS = ("loss", "kl_optimum", "kl_ref", "accuracy")
TOL = 1e-6

# run under torchrun: every case, then the control (no DDP), each rank writing its metrics and
# the shards it took
SCRIPT = """
import json, sys
import numpy as np
from theorylab.algorithms.deep import distributed
from theorylab.algorithms.deep.trainer import train
sys.path.insert(0, {tests!r})
from test_deep_distributed import CASES, COMMON, METRICS, MODEL, TASK

rows_taken = []
real_rows = distributed.Place.rows
def rows(self, n):
    s = real_rows(self, n)
    rows_taken.append([n, s.start, s.stop])
    return s
distributed.Place.rows = rows
out = {{}}
for name, (loss, kw) in CASES.items():
    res = train(MODEL, TASK, loss, **COMMON, **kw)
    out[name] = {{m: getattr(res, m).tolist() for m in METRICS}}
    out[name]["processes"] = res.config["params"]["processes"]
distributed.Place.wrap = lambda self, model: model  # the control: no gradient all-reduce
loss, kw = CASES["grpo"]
res = train(MODEL, TASK, loss, **COMMON, **kw)
out["control"] = {{m: getattr(res, m).tolist() for m in METRICS}}
out["rows"] = rows_taken
rank = int(__import__("os").environ["RANK"])
json.dump(out, open({out!r} + f"/rank{{rank}}.json", "w"))
"""


def _torchrun(tmp_path, script: str, nproc: int = 2, timeout: int = 600):
    path = tmp_path / "run.py"
    path.write_text(script)
    cmd = [sys.executable, "-m", "torch.distributed.run", "--nnodes", "1", "--nproc-per-node",
           str(nproc), "--master-addr", "127.0.0.1", "--master-port",
           str(distributed.free_port()), str(path)]  # fmt: skip
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]


def _gap(a: dict, b) -> float:
    return max(float(np.abs(np.asarray(a[m]) - getattr(b, m)).max()) for m in METRICS)


def test_two_gloo_processes_equal_one_process_on_the_same_batch(tmp_path):
    tests = os.path.dirname(os.path.abspath(__file__))
    _torchrun(tmp_path, SCRIPT.format(tests=tests, out=str(tmp_path)))
    ranks = [json.loads((tmp_path / f"rank{r}.json").read_text()) for r in range(2)]
    for name, (loss, kw) in CASES.items():
        one = train(MODEL, TASK, loss, **COMMON, **kw)  # parallel= does nothing on 1 process
        assert one.config["params"]["processes"] == 1
        for out in ranks:
            assert out[name]["processes"] == 2
            assert _gap(out[name], one) <= TOL, (name, _gap(out[name], one))
        # the trained policy's exact KL to pi* (enumerated per seed) is the same
        assert abs(ranks[0][name]["kl_optimum"][0][-1] - one.kl_optimum[0, -1]) <= TOL
        assert ranks[0][name]["kl_ref"][0][-1] > 1e-3  # the policy moved: a real comparison
        print(f"{name}: 2 processes vs 1, max gap {_gap(ranks[0][name], one):.2e}")
    # each rank scored its own half: 4 prompts x 4 responses (grpo), 4 x 4 pairs (dpo), and of
    # each micro-batch's 2 prompts x 4 responses (astar-po-micro)
    assert {tuple(r) for r in ranks[0]["rows"]} == {(16, 0, 8), (8, 0, 4)}
    assert {tuple(r) for r in ranks[1]["rows"]} == {(16, 8, 16), (8, 4, 8)}
    # the control: without the all-reduce each rank follows its own shard's gradient
    one = train(MODEL, TASK, "grpo", **COMMON, **CASES["grpo"][1])
    assert _gap(ranks[0]["control"], one) > 1e-3
    assert _gap(ranks[1]["control"], one) > 1e-3


# the prompt trainer (prompt_trainer.py) on arithmetic with 2-digit operands (prompts of several
# lengths: a rank's shard spans several sampler runs) and a dense reward (the completion's length;
# exact match is 0 for an untrained model, so GRPO would not move)
PROMPT_MODEL = "gpt2-config:n_layer=1,n_embd=32,n_head=2"
PROMPT_DATA = "arithmetic:n=60,digits=2"
PROMPT_CASES = {  # name: (loss, trainer keywords)
    "grpo-micro": ("grpo", dict(group_size=4, micro_batches=2)),  # 2 x 2 prompts, 1 + 1 a rank
    "dpo": ("dpo:beta=0.1", dict()),
}
PROMPT_COMMON = dict(steps=4, eval_every=2, eval_prompts=8, prompts_per_step=4, lr=3e-3, seed=5)
PROMPT_METRICS = ("loss", "train_reward", "grad_norm", "accuracy")
PROMPT_SCRIPT = """
import json, os, sys
sys.path.insert(0, {tests!r})
from theorylab.algorithms.deep import distributed
from theorylab.algorithms.deep.prompt_trainer import train_prompts
from test_deep_distributed import PROMPT_CASES, PROMPT_COMMON, PROMPT_DATA, PROMPT_METRICS
from test_deep_distributed import PROMPT_MODEL
from test_lm_training import length_reward

def run(loss, kw):
    res = train_prompts(PROMPT_MODEL, PROMPT_DATA, loss, reward=length_reward, **PROMPT_COMMON,
                        **kw)
    return {{m: getattr(res, m).tolist() for m in PROMPT_METRICS}}
out = {{name: run(loss, kw) for name, (loss, kw) in PROMPT_CASES.items()}}
loss, kw = PROMPT_CASES["grpo-micro"]  # resume a 1-process checkpoint of 2 steps on 2 processes
out["resumed"] = run(loss, {{**kw, "checkpoint": {ck!r}}})
distributed.Place.wrap = lambda self, model: model  # the control: no gradient all-reduce
out["control"] = run(*PROMPT_CASES["grpo-micro"])
json.dump(out, open({out!r} + f"/rank{{os.environ['RANK']}}.json", "w"))
"""


def test_prompt_trainer_on_two_gloo_processes_equals_one_process(tmp_path):
    from test_lm_training import length_reward

    from theorylab.algorithms.deep.prompt_trainer import train_prompts

    tests = os.path.dirname(os.path.abspath(__file__))
    ck = str(tmp_path / "ck")
    train_prompts(PROMPT_MODEL, PROMPT_DATA, "grpo", reward=length_reward, checkpoint=ck,
                  stop_after=2, **PROMPT_COMMON, **PROMPT_CASES["grpo-micro"][1])  # fmt: skip
    _torchrun(tmp_path, PROMPT_SCRIPT.format(tests=tests, out=str(tmp_path), ck=ck))
    ranks = [json.loads((tmp_path / f"rank{r}.json").read_text()) for r in range(2)]
    for name, (loss, kw) in PROMPT_CASES.items():
        one = train_prompts(PROMPT_MODEL, PROMPT_DATA, loss, reward=length_reward,
                            **PROMPT_COMMON, **kw)  # fmt: skip
        gaps = [_prompt_gap(out[name], one) for out in ranks]
        assert max(gaps) <= TOL, (name, gaps)
        assert np.ptp(one.train_reward) > 0.1  # the policy moved: a real comparison
        print(f"prompts {name}: 2 processes vs 1, max gap {max(gaps):.2e}")
        if name == "grpo-micro":  # steps 1-2 on 1 process, 3-4 on 2: the same run
            assert max(_prompt_gap(out["resumed"], one) for out in ranks) <= TOL
    one = train_prompts(PROMPT_MODEL, PROMPT_DATA, "grpo", reward=length_reward, **PROMPT_COMMON,
                        **PROMPT_CASES["grpo-micro"][1])  # fmt: skip
    for out in ranks:  # the control: each rank follows its own shard's gradient
        assert _prompt_gap(out["control"], one) > 1e-3, _prompt_gap(out["control"], one)
    print(f"prompts control: gap {min(_prompt_gap(o['control'], one) for o in ranks):.2e}")


def _prompt_gap(a: dict, b) -> float:
    return max(float(np.abs(np.asarray(a[m]) - getattr(b, m)).max()) for m in PROMPT_METRICS)


def test_cli_nproc_launches_torchrun_and_rank_0_writes(tmp_path):
    from theorylab.cli import main
    from theorylab.results import Result

    saved = tmp_path / "run"
    args = ["train", "grpo", TASK, "--model", MODEL, "--steps", "3", "--eval-every", "1", "-G",
            "4", "--nproc", "2", "--save", str(saved), "--no-progress"]  # fmt: skip
    cmd = [sys.executable, "-m", "theorylab.cli", *args]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.count("accuracy (start -> end)") == 1  # one table: rank 0's
    res = Result.load(saved)
    one = train(MODEL, TASK, "grpo", steps=3, eval_every=1, group_size=4)
    assert res.config["params"]["processes"] == 2
    assert _gap({m: getattr(res, m) for m in METRICS}, one) <= TOL
    assert main(["train", "grpo", TASK, "--steps", "1"]) == 0  # --nproc defaults to 1


@pytest.mark.parametrize(
    "extra, message",
    [
        (["--nproc", "3"], "4 prompt groups (the task's prompts, each with its G responses) do "
         "not split into 3 equal shards"),
        (["--loss-dpo", "--nproc", "2"], "--nproc 2: the exact preference loss is one forward"),
        (["--loss-dpo", "--preference", "sampled", "--pairs-per-prompt", "1", "--nproc", "3"],
         "4 prompts x 1 pairs (--pairs-per-prompt) = 4 pairs is not divisible by 3 processes"),
    ],
)  # fmt: skip
def test_bad_launches_fail_in_one_line_before_any_process(extra, message, capsys, monkeypatch):
    from theorylab.cli import main

    def no_launch(*a, **k):
        raise AssertionError("a process was started")

    monkeypatch.setattr(distributed.subprocess, "run", no_launch)
    loss = "dpo" if "--loss-dpo" in extra else "grpo"
    extra = [a for a in extra if a != "--loss-dpo"]
    assert main(["train", loss, TASK, "--steps", "1", *extra]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and message in err, err


def test_nproc_below_one_and_the_trainer_under_a_bad_world(capsys, monkeypatch):
    from theorylab.cli import main

    with pytest.raises(SystemExit):
        main(["train", "grpo", TASK, "--nproc", "0"])
    assert "--nproc: must be an integer >= 1, got 0" in capsys.readouterr().err
    with pytest.raises(ValueError, match="parallel must be one of ddp, fsdp, got 'zero'"):
        train(MODEL, TASK, "grpo", steps=1, parallel="zero")
    monkeypatch.setenv("WORLD_SIZE", "3")  # as torchrun sets it: checked before joining a group
    with pytest.raises(ValueError, match="do not split into 3 equal shards"):
        train(MODEL, TASK, "grpo", steps=1)
    monkeypatch.setenv("WORLD_SIZE", "two")
    with pytest.raises(ValueError, match="WORLD_SIZE must be an integer, got 'two'"):
        train(MODEL, TASK, "grpo", steps=1)


def test_micro_batches_and_prompts_under_several_processes_fail_in_one_line(capsys, monkeypatch):
    from theorylab.algorithms.deep.lm_training_state import TrainingConfigError
    from theorylab.algorithms.deep.prompt_trainer import train_prompts
    from theorylab.cli import main

    assert main(["train", "grpo", "arithmetic", "--steps", "1", "--nproc", "3"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "each micro-batch's 8 prompts" in err, err
    assert main(["train", "grpo", "arithmetic", "--nproc", "2", "--parallel", "fsdp"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "--parallel fsdp applies to token-tree tasks" in err
    monkeypatch.setenv("WORLD_SIZE", "2")  # checked before joining a group
    with pytest.raises(TrainingConfigError, match=r"micro-batches of \[1, 2\] prompts do not"):
        train(MODEL, TASK, "grpo", steps=1, micro_batches=3)  # 4 prompts: chunks 2, 1, 1
    with pytest.raises(TrainingConfigError, match=r"--nproc 2: each micro-batch's 3 prompts"):
        train_prompts(PROMPT_MODEL, "arithmetic", "grpo", steps=1, prompts_per_step=6,
                      micro_batches=2)  # fmt: skip


def test_shards_and_flag_removal():
    place = distributed.Place(rank=1, world=4)
    assert place.rows(12) == slice(3, 6) and not place.main
    assert distributed.ONE.rows(12) == slice(0, 12) and distributed.ONE.mean(2.5) == 2.5
    argv = ["train", "grpo", "t", "--nproc", "2", "--steps", "3", "--nproc=4"]
    assert distributed.without_flag(argv, "--nproc") == ["train", "grpo", "t", "--steps", "3"]


@pytest.mark.parametrize(
    "loss, message",
    [
        ("astar-po", "loss 'astar-po' takes the tensors (logp, ref_logp, mask, rewards, v_star, "
         "weights); the prompt trainer supplies (logp, old_logp, ref_logp, mask, rewards, group, "
         "advantages), not v_star; on a prompt dataset use one of "),
        ("tbrm", "not root_values; on a prompt dataset"),
        ("vpo", "not calibration_logp; on a prompt dataset use one of chipo, dpo, ipo"),
    ],
)  # fmt: skip
def test_losses_the_prompt_trainer_cannot_feed_fail_in_one_line_before_any_work(
    loss, message, capsys, monkeypatch
):
    from theorylab.algorithms.deep import prompt_trainer
    from theorylab.cli import main

    def no_work(*a, **k):
        raise AssertionError("the dataset was loaded")

    monkeypatch.setattr(prompt_trainer, "load_prompts", no_work)
    monkeypatch.setattr(distributed.subprocess, "run", no_work)
    for nproc in ("1", "2"):  # in this process, and before torchrun starts any
        assert main(["train", loss, "arithmetic", "--steps", "1", "--nproc", nproc]) == 2
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and message in err, err
        if loss == "astar-po":  # the losses it names run there (the list grows with the registry)
            fits = err.split("use one of ")[1].split(" (or")[0].split(", ")
            assert {"grpo", "rloo", "ppo-clip", "dr-grpo"} <= set(fits), fits
