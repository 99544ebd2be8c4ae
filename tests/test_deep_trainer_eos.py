"""The transformer trainer on token trees with variable-length responses (``tokentree-eos``): the
exact tables read every response's real tokens (EOS included, padding not), sampling stops at
EOS, every registered policy loss runs, and the exact KL to pi* falls for representative ones."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from theorylab.algorithms.deep import trainer as tr  # noqa: E402
from theorylab.algorithms.deep.models import make_model  # noqa: E402
from theorylab.algorithms.deep.transformer_registrations import (  # noqa: E402
    ONLINE_LOSSES,
    PREFERENCE_LOSSES,
)
from theorylab.mdps.registry import make  # noqa: E402

SMALL = "tiny:d_model=16,n_layer=1,n_head=2,d_ff=32"
TASK = "tokentree-eos:V=3,L=2,prompts=2"


@pytest.fixture(scope="module")
def setup():
    task = make("tokentree-eos:V=3,L=3,prompts=2")
    model = make_model(SMALL, task.V + task.n_prompts, max_len=task.L + 1, seed=3)
    model.eval()
    return task, model


def test_sequence_table_scores_real_tokens_only(setup):
    task, model = setup
    P, Y = task.n_prompts, task.n_responses
    with torch.no_grad():
        table = tr.sequence_table(model, task, tr.prefix_inputs(task, "cpu"), torch.float64)
        # independently: one forward pass per (prompt, padded response), padding masked out
        x = torch.arange(P).repeat_interleave(Y)
        ids = tr.sequence_ids(task, x, torch.as_tensor(task.tokens).repeat(P, 1))
        mask = torch.as_tensor(task.token_mask, dtype=torch.float64).repeat(P, 1)
        direct = (tr.response_logp(model, ids, task.V).double() * mask).sum(-1).reshape(P, Y)
        unmasked = tr.response_logp(model, ids, task.V).double().sum(-1).reshape(P, Y)
    assert torch.allclose(table, direct, atol=1e-5)
    assert np.allclose(np.exp(table.numpy()).sum(axis=1), 1.0, atol=1e-9)
    # the control: counting the padding after EOS is no distribution
    assert abs(np.exp(unmasked.numpy()).sum(axis=1) - 1.0).max() > 0.05
    cond = tr.conditional_table(model, task, tr.prefix_inputs(task, "cpu"), torch.float64)
    assert np.allclose(task.sequence_logprobs(cond.detach().numpy()), table.numpy(), atol=1e-12)


def test_sampling_stops_at_eos_and_matches_the_table(setup):
    task, model = setup
    n = 6000
    gen = torch.Generator().manual_seed(0)
    ids = tr.sample_responses(model, task, torch.zeros(n, dtype=torch.long), gen)
    y = tr.response_index(task, ids[:, 1:])
    assert (y >= 0).all()
    assert (task.tokens[y] == ids[:, 1:].numpy()).all()  # padded with 0 after EOS
    freq = np.bincount(y, minlength=task.n_responses) / n
    with torch.no_grad():
        p = tr.sequence_table(model, task, tr.prefix_inputs(task, "cpu"), torch.float64)[0]
    assert 0.5 * np.abs(freq - p.exp().numpy()).sum() < 0.06  # E TV ~ 0.03 at n = 6000
    assert len(set(task.lengths[y])) == task.L  # responses of every length were drawn


def test_sampled_pairs_read_the_masked_sequence_log_probabilities(setup):
    task, model = setup
    with torch.no_grad():
        table = tr.sequence_table(model, task, tr.prefix_inputs(task, "cpu"), torch.float64)
        ref_seq = table.numpy()
        rng = np.random.default_rng(0)
        out = tr._sampled_pairs(model, model, task, ref_seq, 8, rng, "cpu")
    # the chosen responses are scored as in the exact table
    rows = np.isclose(out["policy_chosen"].double().numpy()[:, None], ref_seq[np.repeat([0, 1], 8)],
                      atol=1e-5)  # fmt: skip
    assert rows.any(axis=1).all()
    assert torch.allclose(out["policy_chosen"], out["ref_chosen"])


def test_exact_target_is_soft_value_iteration_on_the_initial_model(setup):
    task, model = setup
    inputs = tr.prefix_inputs(task, "cpu")
    with torch.no_grad():
        cond = tr.conditional_table(model, task, inputs, torch.float64).numpy()
    exact = tr.with_reference(task, cond)
    beta = 0.3
    # enumeration (ref x exp(r / beta), normalised) against soft VI over the EOS tree
    en = exact.optimum_by_enumeration(beta)
    assert np.abs(en - exact.soft_optimum(beta).seq_logp).max() < 1e-10
    res = tr.train(SMALL, task, "dpo", steps=1, eval_every=1, target_beta=beta, lr=0.0, seed=0)
    assert res.config["task"].startswith("tokentree-eos")
    assert res.kl_optimum.shape == (1, 2)
    assert res.kl_optimum[0, 0] == pytest.approx(res.kl_optimum[0, 1], abs=1e-12)  # lr 0


@pytest.mark.parametrize("loss", [*ONLINE_LOSSES, *PREFERENCE_LOSSES])
def test_every_policy_loss_trains_on_variable_lengths(loss):
    G = 8 if loss == "cvar-grpo" else 4  # alpha G > 1 (test_cvar_grpo_needs_alpha_g_above_one)
    res = tr.train(SMALL, TASK, loss, steps=1, eval_every=1, group_size=G, target_beta=0.1,
                   value_samples=4, lr=1e-2)  # fmt: skip
    assert np.isfinite(res.loss).all()
    assert np.isfinite(res.kl_optimum).all() and (res.kl_optimum >= 0).all()
    assert res.config["family"] in ("online", "preference")


@pytest.mark.parametrize(
    "loss, G, steps",
    [("rebel", 4, 10), ("exo", 4, 10), ("dpo", 4, 10), ("cvar-grpo", 8, 20),
     ("cvar-grpo:alpha=0.5", 4, 10)],
)  # fmt: skip
def test_exact_kl_to_the_optimum_falls(loss, G, steps):
    # cvar-grpo moves only the group's lower tail: 3.20 -> 2.11 in 10 steps, 0.88 in 20 at G = 8
    res = tr.train(SMALL, TASK, loss, steps=steps, eval_every=steps, group_size=G,
                   target_beta=0.1, lr=1e-2)  # fmt: skip
    start, end = res.kl_optimum[0]
    assert end < 0.6 * start, (start, end)


def test_cvar_grpo_needs_alpha_g_above_one(capsys):
    """With alpha G <= 1 (alpha 0.25, G = 4) each group's empirical alpha-quantile is its
    minimum, so every CVaR advantage min(r - q, 0) / alpha is exactly 0 whatever the rewards:
    the loss has no gradient (measured: exact KL to pi* 3.2034 -> 3.2034 in 30 steps, where
    G = 8 gives 0.7398). Both trainers refuse it in one line before any work."""
    from theorylab.algorithms.deep.groups import group_advantages
    from theorylab.cli import main

    rng = np.random.default_rng(0)
    r = torch.as_tensor(rng.random(40))  # graded, all distinct
    group = torch.arange(10).repeat_interleave(4)
    assert torch.count_nonzero(group_advantages(r, group, "cvar", alpha=0.25)) == 0
    assert torch.count_nonzero(group_advantages(r, group, "cvar", alpha=0.5)) == 10  # the minima
    with pytest.raises(ValueError, match=r"alpha \* group_size = 0.25 \* 4 <= 1"):
        tr.train(SMALL, TASK, "cvar-grpo", steps=1, group_size=4, target_beta=0.1)
    for argv in (["train", "cvar-grpo", TASK, "--group-size", "4", "--target-beta", "0.1"],
                 ["train", "cvar-grpo:alpha=0.1", "arithmetic", "--steps", "1"]):  # fmt: skip
        assert main([*argv, "--no-progress"]) == 2
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and "nothing trains" in err, err


# --------------------------------------------------------------------------- sampled gradients
def _model_and_table(spec: str, seed: int):
    """(task, a small model, its conditional table (P, N, V)): a logit table equal to the model's
    policy, whose gradient the sampled and the exact losses are compared in."""
    task = make(spec)
    model = make_model(SMALL, task.V + task.n_prompts, max_len=task.L + 1, seed=seed)
    model.eval()
    with torch.no_grad():
        theta = tr.conditional_table(model, task, tr.prefix_inputs(task, "cpu"), torch.float64)
    return task, model, theta.numpy()


def _max_z(exact: np.ndarray, grads: list) -> float:
    """max over coordinates of |mean of the sampled gradients - exact| / its standard error."""
    g = np.array(grads)
    se = g.std(axis=0) / np.sqrt(len(g))
    return float((np.abs(g.mean(axis=0) - exact) / np.maximum(se, 1e-12)).max())


# --------------------------------------------------------------------------- REFUEL
def _refuel_gradients(task, model, theta, draws, branch=True):
    """(exact gradient, the sampled gradients per draw) of REFUEL's loss w.r.t. a logit table
    equal to the model's conditionals, on-policy; the sampled pairs come from
    :func:`branched_rollouts` (``branch=False``: REBEL's two independent full roll-ins, the
    control)."""
    from theorylab.algorithms.deep.registry import make_loss
    from theorylab.algorithms.deep.regression_twins import refuel_objective
    from theorylab.algorithms.deep.twins import LogitTable

    pol = LogitTable(task, theta)
    refuel_objective(task, pol, theta, 1.0).backward()
    exact = pol.theta.grad.numpy().copy()
    gen = torch.Generator().manual_seed(1)
    rng = np.random.default_rng(1)
    P, G = task.n_prompts, 32
    grads = []
    for _ in range(draws):
        prompts = torch.arange(P).repeat_interleave(G)
        if branch:
            ids, mask, who = tr.branched_rollouts(model, task, prompts, gen)
        else:
            ids = tr.sample_responses(model, task, prompts, gen)
            who = prompts
            mask = torch.as_tensor(task.token_mask[tr.response_index(task, ids[:, 1:])])
        y = torch.as_tensor(tr.response_index(task, ids[:, 1:]))
        r = torch.as_tensor(tr.draw_rewards(task, who.numpy(), y.numpy(), rng))
        pol.theta.grad = None
        logp = pol.token_logp(pol.cond_logp(), who, y)
        w = torch.full((len(y) // 2,), 1.0 / (P * G), dtype=torch.float64)
        loss = make_loss("refuel" if branch else "rebel")
        loss(logp, None, None, mask.double(), r, who, w).backward()
        grads.append(pol.theta.grad.numpy().copy())
    return exact, grads


def test_refuel_branched_rollouts_give_the_exact_gradient():
    """REFUEL's sampled loss on the trainer's branched roll-outs is unbiased for the exact
    objective (every node h, pairs from pi(.|h) weighted d(h), regression_twins): its gradient
    w.r.t. the conditional table matches within sampling error; REBEL's unbranched pairs do not."""
    task, model, theta = _model_and_table("tokentree-eos:V=3,L=2,prompts=1", 5)
    exact, grads = _refuel_gradients(task, model, theta, 40)
    assert np.abs(exact).max() > 0.05 and _max_z(exact, grads) < 5.0
    exact, grads = _refuel_gradients(task, model, theta, 40, branch=False)
    assert _max_z(exact, grads) > 8.0


def test_refuel_trains_with_the_exact_kl_reported():
    res = tr.train(SMALL, TASK, "refuel", steps=10, eval_every=10, group_size=4,
                   target_beta=0.1, lr=1e-2)  # fmt: skip
    start, end = res.kl_optimum[0]
    assert end < 0.8 * start, (start, end)
    with pytest.raises(ValueError, match="one process in one batch"):
        tr.train(SMALL, TASK, "refuel", steps=1, target_beta=0.1, micro_batches=2)


# --------------------------------------------------------------------------- length normalisation
def _grpo_gradients(task, model, theta, draws, masked=True):
    """(exact gradient of GRPO's objective written independently with 1/|o| per response
    (reference_objectives), the registered grpo loss's gradient per draw on batches drawn
    as the trainer draws them: responses sampled from the model, padded after EOS, the mask
    ``task.token_mask[y]``; ``masked=False``: a mask of ones, the trainer before EOS trees)."""
    from theorylab.algorithms.deep import loss_expectations as le
    from theorylab.algorithms.deep.registry import make_loss
    from theorylab.algorithms.deep.twins import LogitTable

    G, K = 4, 32  # K groups of G responses per prompt per draw
    pol = LogitTable(task, theta)
    le.reference_objective(task, "grpo", pol, le.case_data(task, 0), group_size=G).backward()
    exact = pol.theta.grad.numpy().copy()
    loss = make_loss("grpo", beta=le.GROUP_BETA)
    gen = torch.Generator().manual_seed(2)
    rng = np.random.default_rng(2)
    log_ref = torch.as_tensor(np.log(task.ref_cond))
    P = task.n_prompts
    grads = []
    for _ in range(draws):
        prompts = torch.arange(P).repeat_interleave(K * G)
        ids = tr.sample_responses(model, task, prompts, gen)
        y = torch.as_tensor(tr.response_index(task, ids[:, 1:]))
        r = torch.as_tensor(tr.draw_rewards(task, prompts.numpy(), y.numpy(), rng))
        mask = pol.mask[y] if masked else torch.ones_like(pol.mask[y])
        pol.theta.grad = None
        logp = pol.token_logp(pol.cond_logp(), prompts, y)
        ref = pol.token_logp(log_ref, prompts, y)
        group = torch.arange(P * K).repeat_interleave(G)
        loss(logp, None, ref, mask, r, group).backward()
        grads.append(pol.theta.grad.numpy().copy())
    return exact, grads


def test_grpo_on_trainer_batches_has_the_per_response_normalised_gradient():
    """On tokentree-eos the trainer's batches (sampling to EOS, the responses' masks) give the
    registered GRPO loss the gradient of GRPO's objective with 1/|o_i| per response; a mask of
    ones (padding counted as tokens: what the trainer did before EOS trees) does not."""
    # L = 3: the padding after a short response's EOS is no copy of one of its tokens
    task, model, theta = _model_and_table("tokentree-eos:V=3,L=3,prompts=1", 7)
    exact, grads = _grpo_gradients(task, model, theta, 40)
    assert np.abs(exact).max() > 0.01 and _max_z(exact, grads) < 5.0
    exact, grads = _grpo_gradients(task, model, theta, 40, masked=False)
    assert _max_z(exact, grads) > 5.0  # the same test fails


def test_the_prompt_trainer_refuses_refuel_in_one_line(capsys):
    """The prompt trainer samples whole responses: REFUEL's branched roll-outs are not drawn
    there, and running it on those pairs would be REBEL under another name."""
    from theorylab.cli import main

    assert main(["train", "refuel", "arithmetic", "--steps", "1", "--no-progress"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "branched from a shared prefix" in err, err


def test_refuel_loss_is_the_turn_masked_rebel_residual():
    from theorylab.algorithms.deep.masking import InvalidBatchError
    from theorylab.algorithms.deep.registry import make_loss

    logp = torch.tensor([[-0.5, -1.0, -0.2], [-0.7, -0.3, -0.9]], dtype=torch.float64)
    old = torch.tensor([[-0.6, -0.8, -0.1], [-0.4, -0.5, -0.2]], dtype=torch.float64)
    mask = torch.tensor([[0.0, 1.0, 0.0], [0.0, 1.0, 0.0]], dtype=torch.float64)  # turn t = 1
    r = torch.tensor([1.0, 0.25], dtype=torch.float64)
    eta = 2.0
    # written out: ((logp - old)[0, 1] - (logp - old)[1, 1] - eta (r0 - r1))^2
    want = ((-1.0 + 0.8) - (-0.3 + 0.5) - eta * (1.0 - 0.25)) ** 2
    got = make_loss(f"refuel:eta={eta}")(logp, old, None, mask, r, torch.zeros(2, dtype=torch.long))
    assert float(got) == pytest.approx(want, rel=1e-14)
    other = torch.tensor([[0.0, 1.0, 0.0], [1.0, 0.0, 0.0]], dtype=torch.float64)
    with pytest.raises(InvalidBatchError, match="masks different turns"):
        make_loss("refuel")(logp, old, None, other, r, torch.zeros(2, dtype=torch.long))
