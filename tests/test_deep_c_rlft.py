"""C-RLFT (seed row 002-004#F7): the registered loss against its formula written out; the exact
twin's minimiser against pi*(y|x,c) ∝ pi_c exp(r_c/beta) written out by enumeration (not by the
library's soft value iteration); the two mutations; input errors; the registered run."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from theorylab.algorithms.deep import c_rlft as cr  # noqa: E402
from theorylab.algorithms.deep.masking import InvalidBatchError  # noqa: E402
from theorylab.algorithms.deep.registry import make_loss  # noqa: E402
from theorylab.mdps import make  # noqa: E402

D = torch.float64
EOS = "tokentree-eos:V=3,L=2,prompts=2,reward=binary"


def test_loss_written_out():
    # two responses of lengths 2 and 1 (padding after the end), class rewards 1 and 0.1
    logp = torch.tensor([[-0.5, -1.0], [-0.2, -9.0]], dtype=D)
    mask = torch.tensor([[1, 1], [1, 0]], dtype=D)
    r = torch.tensor([1.0, 0.1], dtype=D)
    want = (1.0 * (0.5 + 1.0) + 0.1 * 0.2) / 2
    assert float(make_loss("c-rlft")(logp, mask, r)) == pytest.approx(want, abs=1e-15)
    w = torch.tensor([0.25, 0.75], dtype=D)
    want_w = 0.25 * 1.5 + 0.75 * 0.02
    assert float(make_loss("c-rlft")(logp, mask, r, w)) == pytest.approx(want_w, abs=1e-15)


def _closed_form(data):
    """(P C, Y) log of pi_c(y|x) exp(r_c / beta) / Z, the sequences' probabilities multiplied out
    token by token from the behaviour tables (beta = 0.5)."""
    task, beta = data.task, 0.5
    rows = []
    for x in range(task.n_prompts):
        for c in range(data.n_classes):
            p = np.ones(task.n_responses)
            for y in range(task.n_responses):
                for t in range(task.L):
                    if task.token_mask[y, t]:
                        p[y] *= data.behaviour[c, x, task.token_nodes[y, t], task.tokens[y, t]]
            q = p * np.exp(data.class_reward[c] / beta)
            rows.append(np.log(q / q.sum()))
    return np.array(rows)


def test_minimiser_is_the_closed_form_optimum():
    data = cr.mixed_quality_data(make(EOS), seed=3)
    want = _closed_form(data)
    assert np.abs(cr.conditioned_task(data).soft_optimum(0.5).seq_logp - want).max() < 1e-12
    assert np.abs(cr.minimise(data) - want).max() < 1e-5


def test_mutations_move_the_minimiser():
    from theorylab.validations.openchat_p3o_mutations import (
        c_rlft_no_class_token,
        c_rlft_token_mean,
    )

    data = cr.mixed_quality_data(make(EOS), seed=3)
    want = _closed_form(data)
    for mutation in (c_rlft_no_class_token, c_rlft_token_mean):
        with mutation():
            assert np.abs(cr.minimise(data, iters=50) - want).max() > 0.1


def test_mixture_mle_closed_form_is_the_unconditioned_minimiser():
    from theorylab.validations.openchat_p3o_mutations import c_rlft_no_class_token

    data = cr.mixed_quality_data(make(EOS), seed=4)
    with c_rlft_no_class_token():
        got = cr.inference_logp(data, cr.minimise(data), 1)  # any class reads the same row
    assert np.abs(got - cr.mixture_mle(data, data.class_reward)).max() < 1e-5


def test_claim_passes_and_the_no_class_control_fails():
    from theorylab.validations.claims.rlvr_twins import CRlftConditionedOptimum
    from theorylab.validations.openchat_p3o_mutations import c_rlft_no_class_token

    claim = CRlftConditionedOptimum(scales={"quick": ("tokentree-eos:V=2,L=2,prompts=1",)})
    assert claim.run("quick").passed
    with c_rlft_no_class_token():
        assert not claim.run("quick").passed


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"rewards": torch.tensor([1.0, -0.1], dtype=D)}, "rewards >= 0"),
        ({"rewards": torch.tensor([1.0], dtype=D)}, "rewards"),
        ({"mask": torch.ones(2, 3, dtype=D)}, "shape"),
    ],
)
def test_input_errors(kwargs, message):
    args = {"logp": torch.zeros(2, 2, dtype=D), "mask": torch.ones(2, 2, dtype=D),
            "rewards": torch.tensor([1.0, 0.1], dtype=D)}  # fmt: skip
    args.update(kwargs)
    with pytest.raises(InvalidBatchError, match=message):
        make_loss("c-rlft")(**args)


@pytest.mark.parametrize(
    "kwargs, message", [({"expert_share": 1.0}, "expert_share"), ({"alpha": 1.5}, "alpha")]
)
def test_data_errors(kwargs, message):
    with pytest.raises(ValueError, match=message):
        cr.mixed_quality_data(make(EOS), **kwargs)


def test_registered_run_reaches_the_expert_conditioned_optimum():
    import theorylab as tl

    # measured: TV to pi*(.|x, expert) 0.733 -> 2.4e-4 and accuracy 0.167 -> 0.880 in 300 steps
    res = tl.run("c-rlft-twin", EOS, steps=300)
    assert res.tv_predicted[0, 0] > 0.5
    assert res.tv_predicted[0, -1] < 1e-3
    assert res.accuracy[0, -1] > res.accuracy[0, 0] + 0.5


@pytest.mark.parametrize(
    "spec, message",
    [
        ("c-rlft-twin:alpha=2", "alpha"),
        ("c-rlft-twin:expert_share=0", "expert_share"),
        ("c-rlft-twin:lr=0", "lr must be > 0"),
    ],
)
def test_bad_runs_say_what_is_wrong(spec, message):
    import theorylab as tl

    with pytest.raises(ValueError, match=message):
        tl.run(spec, EOS, steps=1)


@pytest.mark.parametrize("task", ["tokentree:V=3,L=2", "arithmetic"])
def test_the_trainers_refuse_c_rlft_in_one_line_before_any_work(task, capsys):
    """Both trainers sample on-policy; C-RLFT trains on an offline, class-tagged dataset. Before,
    `theorylab train c-rlft arithmetic` ran reward-weighted NLL of the model's own samples."""
    from theorylab.cli import main

    assert main(["train", "c-rlft", task, "--steps", "1", "--no-progress"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    assert "loss 'c-rlft' trains on an offline mixed-quality dataset" in err
    assert "c-rlft-twin" in err and "Traceback" not in err


# --------------------------------------------------------------------------- the trainer
def test_class_tagged_batches_are_unbiased_for_the_exact_loss():
    """The trainer's sampled C-RLFT loss (examples drawn from pi_c per row (x, c), weights
    p(c|x) / (P n)) averages to the exact expectation written out over every (x, c, y)."""
    task = make(EOS)
    data = cr.class_tagged_data(task, "mixed-quality:expert_share=0.3,alpha=0.2")
    rows_n, Y = data.behaviour_logp.shape
    assert rows_n == 2 * task.n_prompts and np.isclose(data.row_weight.sum(), 1.0)
    rng = np.random.default_rng(0)
    table = np.log(rng.dirichlet(np.ones(Y), size=rows_n))  # a policy's (P C, Y) table
    prior = np.tile([0.3, 0.7], task.n_prompts) / task.n_prompts  # written out: p(c|x) / P
    reward = np.tile([1.0, 0.2], task.n_prompts)
    exact = -(prior[:, None] * np.exp(data.behaviour_logp) * reward[:, None] * table).sum()
    draws = []
    for _ in range(400):
        rows, y, r, w = cr.draw_class_tagged(data, 8, rng)
        draws.append(float((w * -r * table[rows, y]).sum()))
    se = np.std(draws) / np.sqrt(len(draws))
    assert abs(np.mean(draws) - exact) < 4 * se
    # the control: the unweighted mean over the batch (class shares ignored) is biased
    biased = -(np.exp(data.behaviour_logp) * reward[:, None] * table).sum() / rows_n
    assert abs(biased - exact) > 10 * se


def test_the_tree_trainer_trains_c_rlft_on_class_tagged_data():
    from theorylab.algorithms.deep.trainer import train

    res = train("tiny:d_model=16,n_layer=1,n_head=2,d_ff=32", EOS, "c-rlft", steps=20,
                eval_every=20, lr=3e-2, offline_data="mixed-quality")  # fmt: skip
    start, end = res.kl_optimum[0]
    assert end < 0.7 * start, (start, end)
    assert res.config["family"] == "offline"
    assert res.config["params"]["offline_data"] == "mixed-quality"
    # the target is pi*(.|x, c) = pi_c: the data's own sources (r_c constant within a class)
    data = cr.class_tagged_data(make(EOS), "mixed-quality")
    assert res.optimum_accuracy[0] == pytest.approx(
        data.task.accuracy(data.behaviour_logp).mean(), abs=1e-9
    )


@pytest.mark.parametrize(
    ("kw", "message"),
    [
        ({"offline_data": "mixed:x=1"}, "expected one of mixed-quality"),
        ({"offline_data": "mixed-quality:x=1"}, "has no parameter 'x'"),
        ({"offline_data": "mixed-quality", "micro_batches": 2}, "one process in one batch"),
    ],
)
def test_offline_data_errors(kw, message):
    from theorylab.algorithms.deep.trainer import train

    with pytest.raises(ValueError, match=message):
        train("tiny", EOS, "c-rlft", steps=1, **kw)


def test_offline_data_is_refused_for_an_on_policy_loss():
    from theorylab.algorithms.deep.trainer import train

    with pytest.raises(ValueError, match="offline_data applies to the losses"):
        train("tiny", EOS, "grpo", steps=1, offline_data="mixed-quality")
