"""One optimiser step on padded batches (algorithms/deep/steps.py) against the loss computed from a
naive log_softmax; the TRL comparison of ``theorylab bench llm`` when TRL is installed."""

import pytest

torch = pytest.importorskip("torch")

from theorylab.algorithms.deep.models import make_model  # noqa: E402
from theorylab.algorithms.deep.registry import make_loss  # noqa: E402
from theorylab.algorithms.deep.steps import group_step, preference_step  # noqa: E402


class Masked(torch.nn.Module):
    """The tiny transformer with an ignored attention mask (right padding: causal attention never
    looks at the padding after a token)."""

    def __init__(self, seed):
        super().__init__()
        self.inner = make_model("tiny:d_model=32,n_layer=1,n_head=2,d_ff=64", 30, seed=seed)
        self.vocab_size = 30

    def forward(self, ids, attention_mask=None):
        return self.inner(ids)


def naive_token_logp(model, ids):
    logits = model(ids).double()
    return torch.log_softmax(logits[:, :-1], -1).gather(-1, ids[:, 1:, None]).squeeze(-1)


def batch(B, T, P, seed):
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(0, 30, (B, T), generator=g)
    cm = torch.zeros(B, T, dtype=torch.long)
    cm[:, P:] = 1
    cm[0, T - 2 :] = 0  # a shorter completion
    am = torch.ones(B, T, dtype=torch.long)
    am[0, T - 2 :] = 0
    return ids, am, cm


def test_preference_step_is_dpo_of_the_masked_sequence_logprobs():
    policy, reference = Masked(0), Masked(1)
    ids, am, cm = batch(6, 9, 3, 0)
    loss_fn = make_loss("dpo:beta=0.3")
    opt = torch.optim.SGD(policy.parameters(), lr=0.0)
    ours = preference_step(policy, reference, opt, loss_fn, ids, am, cm, step=False)
    mask = cm[:, 1:].double()
    seq = (naive_token_logp(policy, ids) * mask).sum(1)
    ref = (naive_token_logp(reference, ids) * mask).sum(1).detach()
    h = (seq[:3] - ref[:3]) - (seq[3:] - ref[3:])
    expected = -torch.nn.functional.logsigmoid(0.3 * h).mean()
    assert abs(float(ours) - float(expected)) < 1e-6
    before = [p.detach().clone() for p in policy.parameters()]
    opt = torch.optim.SGD(policy.parameters(), lr=0.1)
    preference_step(policy, reference, opt, loss_fn, ids, am, cm)
    assert any(not torch.equal(a, b) for a, b in zip(before, policy.parameters(), strict=True))


def test_group_step_scores_only_the_completion():
    policy, reference = Masked(2), Masked(3)
    P = 4
    ids, am, cm = batch(8, 10, P, 1)
    rewards = torch.tensor([1.0, 0, 0, 1, 0, 0, 0, 1])
    group = torch.arange(2).repeat_interleave(4)
    loss_fn = make_loss("grpo:beta=0.04")
    opt = torch.optim.SGD(policy.parameters(), lr=0.0)
    ours = group_step(policy, reference, opt, loss_fn, ids, am, cm, rewards, group,
                      prompt_length=P, step=False)  # fmt: skip
    logp = naive_token_logp(policy, ids)[:, P - 1 :]
    ref = naive_token_logp(reference, ids)[:, P - 1 :].detach()
    expected = loss_fn(logp, None, ref, cm[:, P:].double(), rewards.double(), group)
    assert abs(float(ours) - float(expected)) < 1e-6


def test_trl_computes_the_same_losses_and_gradients():
    """theorylab bench llm's own check (small sizes): same loss to 1e-5 and gradient to 1e-5 on
    the same batch as TRL's DPOTrainer and GRPOTrainer (on TRL's own sampled completions for the
    step with generation), in every batch layout, or it raises."""
    pytest.importorskip("trl")
    from theorylab.bench.llm import (
        CONFIGS,
        bench_dpo,
        bench_grpo,
        bench_grpo_generation,
        format_table,
    )  # fmt: skip

    cfg = dict(CONFIGS["quick"], vocab=512, n_embd=32, prompt=8, completion=8, batch=4)
    reps = dict(warmup=0, rounds=1)
    rows = bench_dpo(cfg, **reps) + bench_grpo(cfg, **reps) + bench_grpo_generation(cfg, **reps)
    assert {r["step"] for r in rows} == {
        "DPO step", "GRPO step (given completions)", "GRPO step with generation"
    }  # fmt: skip
    by_step = {s: {r["trainer"] for r in rows if r["step"] == s} for s in {r["step"] for r in rows}}
    ours = {"theorylab padded", "theorylab buckets", "theorylab packed"}
    peers = {"plain PyTorch", "TRL", "TRL, LM head unfused"}
    assert by_step["DPO step"] == by_step["GRPO step (given completions)"] == ours | peers
    assert by_step["GRPO step with generation"] == {"theorylab padded", "theorylab buckets", "TRL"}
    # every row checked against TRL's fused loss (plain PyTorch and TRL unfused included)
    assert all(r["loss_gap"] <= 1e-5 and r["grad_gap"] <= 1e-5 for r in rows)
    # the clock, the rounds and the load are in every row; with one round (no warm-up: one
    # step per sample) the paired ratio is that round's ratio
    assert all(r["clock"] == "thread_time" and r["rounds"] == 1 for r in rows)
    assert all(r["steps_per_sample"] == 1 for r in rows)
    assert all(r["load_1min"] == r["load_1min"] and r["wall_ms_median"] > 0 for r in rows)
    for r in rows:
        trl = next(x for x in rows if x["step"] == r["step"] and x["trainer"] == "TRL")
        assert r["ratio_vs_trl"] == pytest.approx(trl["ms_median"] / r["ms_median"])
    table = format_table(rows)
    assert "ratio vs TRL" in table and "thread_time 1x1" in table and "load" in table
