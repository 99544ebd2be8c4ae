"""ROVER's practical loss (seed rows 000#17, 002-004#G1): the registered loss against its formula
written out, the detached target, its expected gradient (every G-tuple enumerated) against the
score-function policy gradient on-policy and against an enumeration over responses off-policy,
the sampled gradient on the trainer's batches, the mutation that fails, input errors and the
trainers (the tree trainer runs it, the prompt trainer refuses it in one line)."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from theorylab.algorithms.deep import pacs, rover_loss  # noqa: E402
from theorylab.algorithms.deep import regression_twins as rt  # noqa: E402
from theorylab.algorithms.deep import trainer as tr  # noqa: E402
from theorylab.algorithms.deep.masking import InvalidBatchError  # noqa: E402
from theorylab.algorithms.deep.models import make_model  # noqa: E402
from theorylab.algorithms.deep.registry import make_loss  # noqa: E402
from theorylab.algorithms.deep.twins import LogitTable  # noqa: E402
from theorylab.mdps import make  # noqa: E402

D = torch.float64
EOS = "tokentree-eos:V=3,L=3,prompts=2,reward=binary"
SMALL = "tiny:d_model=16,n_layer=1,n_head=2,d_ff=32"

# one group of three responses of lengths 2, 1, 3 (padding after the end), off-policy
LOGP = [[-0.5, -1.0, -9.0], [-0.2, -9.0, -9.0], [-1.0, -0.3, -0.7]]
OLD = [[-0.7, -0.6, 0.0], [-0.4, 0.0, 0.0], [-0.9, -0.5, -0.2]]
MEAN = [[-1.2, -1.5, -4.0], [-1.1, -3.0, -3.0], [-1.3, -1.0, -1.4]]
OLD_MEAN = [[-1.0, -1.1, -2.0], [-1.2, -2.0, -2.0], [-1.1, -1.2, -1.0]]
MASK = [[1, 1, 0], [1, 0, 0], [1, 1, 1]]
R = [1.0, 0.0, 1.0]


def _batch(requires_grad=False):
    t = {k: torch.tensor(v, dtype=D) for k, v in
         dict(logp=LOGP, old_logp=OLD, mean_logp=MEAN, old_mean_logp=OLD_MEAN).items()}  # fmt: skip
    for k in ("logp", "mean_logp"):
        t[k].requires_grad_(requires_grad)
    return t, torch.tensor(MASK, dtype=D), torch.tensor(R, dtype=D)


def test_loss_written_out_for_one_group_of_three():
    t, mask, r = _batch()
    rho = 0.5
    mean_r = (1.0 + 0.0 + 1.0) / 3
    # Q = rho (logp - old); target = (r - group mean) + rho (mean - old_mean) at t + 1 if real
    sq = [
        (rho * (-0.5 + 0.7) - ((1 - mean_r) + rho * (-1.5 + 1.1))) ** 2,
        (rho * (-1.0 + 0.6) - (1 - mean_r)) ** 2,  # last token: no bootstrap
        (rho * (-0.2 + 0.4) - (0 - mean_r)) ** 2,  # one-token response
        (rho * (-1.0 + 0.9) - ((1 - mean_r) + rho * (-1.0 + 1.2))) ** 2,
        (rho * (-0.3 + 0.5) - ((1 - mean_r) + rho * (-1.4 + 1.0))) ** 2,
        (rho * (-0.7 + 0.2) - (1 - mean_r)) ** 2,
    ]
    want = sum(sq) / 6  # the authors' masked mean over the batch's tokens
    group = torch.zeros(3, dtype=torch.int64)
    got = make_loss("rover", rho=rho)(t["logp"], t["old_logp"], t["mean_logp"],
                                      t["old_mean_logp"], mask, r, group)  # fmt: skip
    assert float(got) == pytest.approx(want, rel=1e-13)


def test_the_target_is_detached_and_on_policy_the_gradient_is_reinforce():
    t, mask, r = _batch(requires_grad=True)
    group = torch.zeros(3, dtype=torch.int64)
    rho = 0.7
    loss = make_loss("rover", rho=rho)(t["logp"], t["old_logp"], t["mean_logp"],
                                       t["old_mean_logp"], mask, r, group)  # fmt: skip
    _, g_mean = torch.autograd.grad(loss, (t["logp"], t["mean_logp"]), allow_unused=True)
    assert g_mean is None  # no gradient through the bootstrap: it is not in the graph
    # on-policy (old = theta): Q = 0 and the bootstrap is 0, so -dL/dlogp = 2 rho A mask / n_tok
    loss = make_loss("rover", rho=rho)(t["logp"], None, t["mean_logp"], None, mask, r, group)
    (g,) = torch.autograd.grad(loss, t["logp"])
    adv = np.array(R) - np.mean(R)
    want = -2 * rho * adv[:, None] * np.array(MASK) / 6
    assert np.abs(g.numpy() - want).max() < 1e-15


@pytest.mark.parametrize("G, rho", [(2, 0.5), (3, 1.0)])
def test_expected_gradient_on_and_off_policy(G, rho):
    task = make(EOS)
    theta = rt.random_logits(task, 21)
    pol = LogitTable(task, theta)
    (g,) = torch.autograd.grad(rover_loss.loss_expectation(task, pol, G, rho), pol.theta)
    # on-policy: -(2 rho (G - 1) / (G L)) grad J, J by torch directly (a second route)
    pol2 = LogitTable(task, theta)
    j = (pol2.seq_logp(pol2.cond_logp()).exp() * torch.as_tensor(task.mean_reward)).sum()
    (gj,) = torch.autograd.grad(j / task.n_prompts, pol2.theta)
    step = 2 * rho * (G - 1) / (G * task.L)
    assert np.abs(g.numpy() + step * gj.numpy()).max() < 1e-13
    assert np.abs(pacs.policy_gradient(task, rt.log_softmax(theta), step) - g.numpy()).max() < 1e-13
    # off-policy: the enumeration over responses with the bootstrap at s_{t+1}
    old = rt.log_softmax(rt.random_logits(task, 22))
    pol = LogitTable(task, theta)
    e = rover_loss.loss_expectation(task, pol, G, rho, old_cond=old)
    (g,) = torch.autograd.grad(e, pol.theta)
    want = rover_loss.expected_gradient(task, theta, old, G, rho)
    assert np.abs(want).max() > 1e-2 and np.abs(g.numpy() - want).max() < 1e-13


def test_the_claim_passes_and_the_not_detached_mutation_fails_it():
    from theorylab.validations.claims.rlvr_twins import RoverPracticalLoss
    from theorylab.validations.rlvr_mutations import rover_target_not_detached

    claim = RoverPracticalLoss(scales={"quick": ("tokentree-eos:V=3,L=2,prompts=1,reward=binary",
                                                 (2,), 1)})  # fmt: skip
    assert claim.run("quick").passed
    with rover_target_not_detached():
        report = claim.run("quick")
    assert not report.passed
    # the attached bootstrap has gradient rho grad m(s_{t+1}) even where its value is 0
    for check in (c for c in report.checks if "policy:" in c.name):
        assert not check.passed and min(check.values["gaps"].values()) > 1e-2, check.detail


# --------------------------------------------------------------------------- trainer batches
def _sampled_gradients(task, theta_model, model, theta, draws, rho=0.5, off_policy=False):
    """The registered loss's gradient w.r.t. a logit table per draw, on batches sampled from the
    model as the trainer samples them (the model is pi_old; ``off_policy``: the table differs)."""
    G, K = 4, 32
    loss = make_loss("rover", rho=rho, aggregation="seq-mean-token-sum-norm")
    gen = torch.Generator().manual_seed(3)
    rng = np.random.default_rng(3)
    old = torch.as_tensor(theta_model)
    P = task.n_prompts
    grads = []
    for _ in range(draws):
        prompts = torch.arange(P).repeat_interleave(K * G)
        ids = tr.sample_responses(model, task, prompts, gen)
        y = torch.as_tensor(tr.response_index(task, ids[:, 1:]))
        r = torch.as_tensor(tr.draw_rewards(task, prompts.numpy(), y.numpy(), rng))
        pol = LogitTable(task, theta)
        cond = pol.cond_logp()
        nodes = pol.nodes[y]
        mean = cond.mean(-1)[prompts[:, None], nodes]
        if off_policy:
            old_logp = pol.token_logp(old, prompts, y)
            old_mean = old.mean(-1)[prompts[:, None], nodes]
        else:
            old_logp = old_mean = None
        group = torch.arange(P * K).repeat_interleave(G)
        out = loss(pol.token_logp(cond, prompts, y), old_logp, mean, old_mean, pol.mask[y], r,
                   group)  # fmt: skip
        (g,) = torch.autograd.grad(out, pol.theta)
        grads.append(g.numpy())
    return grads


def _max_z(exact, grads) -> float:
    g = np.array(grads)
    se = g.std(axis=0) / np.sqrt(len(g))
    return float((np.abs(g.mean(axis=0) - exact) / np.maximum(se, 1e-12)).max())


@pytest.fixture(scope="module")
def sampled_setup():
    task = make("tokentree-eos:V=3,L=3,prompts=1")
    model = make_model(SMALL, task.V + task.n_prompts, max_len=task.L + 1, seed=7)
    model.eval()
    with torch.no_grad():
        cond = tr.conditional_table(model, task, tr.prefix_inputs(task, "cpu"), D).numpy()
    return task, model, cond


def test_sampled_gradient_on_trainer_batches_is_unbiased(sampled_setup):
    """On the trainer's batches (sampled to EOS, padded, masked) the registered loss's gradient
    is, within sampling error, the exact expected one: on-policy the scaled policy gradient,
    off-policy (a table away from the sampler) the enumerated semi-gradient; a table of the
    not-detached loss misses the latter."""
    task, model, cond = sampled_setup
    G, rho = 4, 0.5
    exact = pacs.policy_gradient(task, cond, 2 * rho * (G - 1) / (G * task.L))
    grads = _sampled_gradients(task, cond, model, cond, 30, rho)
    assert np.abs(exact).max() > 1e-3 and _max_z(exact, grads) < 5.0
    theta = cond + rt.random_logits(task, 5, scale=0.5)
    exact = rover_loss.expected_gradient(task, theta, cond, G, rho)
    grads = _sampled_gradients(task, cond, model, theta, 30, rho, off_policy=True)
    assert np.abs(exact).max() > 1e-2 and _max_z(exact, grads) < 5.0
    from theorylab.validations.rlvr_mutations import rover_target_not_detached

    with rover_target_not_detached():
        grads = _sampled_gradients(task, cond, model, theta, 30, rho, off_policy=True)
    assert _max_z(exact, grads) > 8.0


# --------------------------------------------------------------------------- errors, trainers
def test_input_errors_name_the_argument():
    t, mask, r = _batch()
    group = torch.zeros(3, dtype=torch.int64)
    loss = make_loss("rover")
    with pytest.raises(InvalidBatchError, match="old_logp and old_mean_logp"):
        loss(t["logp"], t["old_logp"], t["mean_logp"], None, mask, r, group)
    with pytest.raises(InvalidBatchError, match="mean_logp has shape"):
        loss(t["logp"], None, t["mean_logp"][:, :2], None, mask, r, group)
    with pytest.raises(InvalidBatchError, match="rho"):
        make_loss("rover:rho=0")(t["logp"], None, t["mean_logp"], None, mask, r, group)
    with pytest.raises(ValueError, match="no hyper-parameter 'beta'"):
        make_loss("rover:beta=0.1")


def test_tree_trainer_runs_rover_on_eos_trees_and_the_accuracy_rises():
    res = tr.train(SMALL, "tokentree-eos:V=3,L=2,prompts=2", "rover:rho=0.5", steps=10,
                   eval_every=10, group_size=4, target_beta=0.1, lr=1e-2)  # fmt: skip
    (a0, a1), (k0, k1) = res.accuracy[0], res.kl_optimum[0]
    assert a1 > a0 + 0.1 and k1 < 0.6 * k0, (a0, a1, k0, k1)


def test_the_prompt_trainer_refuses_rover_in_one_line(capsys):
    from theorylab.cli import main

    assert main(["train", "rover", "arithmetic", "--steps", "1", "--no-progress"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "mean_logp" in err, err
