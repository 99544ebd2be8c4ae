"""A*-PO, REBEL / REFUEL, TBRM (regression losses and their exact twins), Q# and RTO on token
trees with responses of different lengths (issue 28). Independent answers: closed forms written
out here, enumeration, and the numpy score-function gradients."""

from __future__ import annotations

import math

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from theorylab.algorithms.deep import qsharp, rto  # noqa: E402
from theorylab.algorithms.deep import regression_twins as rt  # noqa: E402
from theorylab.algorithms.deep.masking import InvalidBatchError  # noqa: E402
from theorylab.algorithms.deep.registry import make_loss  # noqa: E402
from theorylab.algorithms.deep.regression_losses import (  # noqa: E402
    log_mean_exp_value,
    tbrm_root_values,
)
from theorylab.algorithms.deep.twins import LogitTable  # noqa: E402
from theorylab.mdps import make  # noqa: E402

D = torch.float64
EOS = "tokentree-eos:V=3,L=3,prompts=2"


def t(x):
    return torch.tensor(x, dtype=D)


def test_astar_po_loss_is_the_printed_formula():
    # (beta (sum logp - sum ref) + V* - r)^2, mean over responses (A*-PO code, compute_policy_loss)
    logp = t([[-0.5, -1.0], [-0.2, 0.0]])
    ref = t([[-0.7, -0.9], [-0.1, 0.0]])
    mask = t([[1, 1], [1, 0]])
    r, v = t([1.0, 0.0]), t([0.3, 0.3])
    beta = 0.4
    want = ((beta * (-1.5 + 1.6) + 0.3 - 1.0) ** 2 + (beta * (-0.2 + 0.1) + 0.3) ** 2) / 2
    got = make_loss("astar-po", beta=beta)(logp, ref, mask, r, v)
    assert float(got) == pytest.approx(want, abs=1e-15)


def test_rebel_loss_is_the_printed_formula():
    # ((log pi/pi_t (y) - log pi/pi_t (y')) - eta (r - r'))^2 (REBEL code, src/tldr/rebel.py)
    logp = t([[-0.5, -1.0], [-0.2, 0.0]])
    old = t([[-0.6, -1.0], [-0.4, 0.0]])
    mask = t([[1, 1], [1, 0]])
    eta = 2.0
    want = ((0.1 - 0.2) - eta * (1.0 - 0.25)) ** 2
    got = make_loss("rebel", eta=eta)(logp, old, None, mask, t([1.0, 0.25]), torch.tensor([0, 0]))
    assert float(got) == pytest.approx(want, abs=1e-15)


def test_log_mean_exp_value_and_root_values():
    r = t([[0.0, 1.0, 1.0, 0.0]])
    beta = 0.5
    want = beta * math.log((2 + 2 * math.exp(2.0)) / 4)
    assert float(log_mean_exp_value(r, beta)[0]) == pytest.approx(want, abs=1e-14)
    w = t([[0.1, 0.2, 0.3, 0.4]])
    want_w = beta * math.log(0.1 + 0.4 + (0.2 + 0.3) * math.exp(2.0))
    assert float(log_mean_exp_value(r, beta, w)[0]) == pytest.approx(want_w, abs=1e-14)
    z, zr = t([[1.0, 2.0]]), t([[0.0, 0.0]])
    want_v = beta * (math.log(math.e + math.e**2) - math.log(2.0))
    assert float(tbrm_root_values(z, zr, beta)[0]) == pytest.approx(want_v, abs=1e-14)


def test_bad_input_is_named():
    logp = torch.zeros(3, 2, dtype=D)
    ones = torch.ones(3, 2)
    with pytest.raises(InvalidBatchError, match="even B"):
        make_loss("rebel")(logp, None, None, ones, torch.zeros(3), torch.tensor([0, 0, 0]))
    with pytest.raises(InvalidBatchError, match="mixes groups 0 and 1"):
        make_loss("rebel")(
            logp[:2], None, None, torch.ones(2, 2), torch.zeros(2), torch.tensor([0, 1])
        )
    with pytest.raises(InvalidBatchError, match="v_star has 2 entries"):
        make_loss("astar-po")(logp, logp, torch.ones(3, 2), torch.zeros(3), torch.zeros(2))
    with pytest.raises(InvalidBatchError, match="eta must be > 0"):
        make_loss("rebel", eta=0.0)(logp, None, None, torch.ones(3, 2), torch.zeros(3), None)
    with pytest.raises(InvalidBatchError, match="2-D"):
        log_mean_exp_value(torch.zeros(3, dtype=D), 0.5)


@pytest.mark.parametrize(("method", "step"), [("astar-po", 0.5), ("rebel", 1.0), ("tbrm", 0.5)])
def test_exact_gradient_equals_the_numpy_score_gradient(method, step):
    task = make(EOS)
    sampler, theta = rt.random_logits(task, 1), rt.random_logits(task, 2)
    pol = LogitTable(task, theta)
    (g,) = torch.autograd.grad(rt.objective(task, method, pol, sampler, step), pol.theta)
    ind = rt.independent_gradient(task, method, theta, sampler, step)
    assert np.abs(g.numpy() - ind).max() <= 1e-12 * np.abs(ind).max()


def test_minimisers_are_the_closed_forms():
    task = make(EOS)
    sampler = rt.random_logits(task, 3)
    seq_t = task.sequence_logprobs(rt.log_softmax(sampler))
    # REBEL: pi_t exp(eta r) / Z, written out here by enumeration
    z = seq_t + 1.0 * task.mean_reward
    md = z - np.log(np.exp(z).sum(1, keepdims=True))
    seq, *_ = rt.minimise(task, "rebel", sampler, 1.0)
    assert task.tv(seq, md).max() <= 1e-8
    # TBRM from off-policy data: pi*_beta = ref exp(r/beta) / Z by enumeration
    z = task.ref_logprobs + task.mean_reward / 0.5
    opt = z - np.log(np.exp(z).sum(1, keepdims=True))
    seq, *_ = rt.minimise(task, "tbrm", sampler, 0.5)
    assert task.tv(seq, opt).max() <= 1e-8


def test_refuel_target_and_minimiser():
    task = make(EOS)
    sampler = rt.random_logits(task, 4)
    cond = rt.log_softmax(sampler)
    q = task.backup(cond, task.mean_reward, soft=None)
    assert np.abs(rt.rollout_q(task, cond) - q).max() <= 1e-12
    seq, *_ = rt.minimise(task, "refuel", sampler, 1.0)
    npg = task.sequence_logprobs(rt.log_softmax(cond + q))
    assert task.tv(seq, npg).max() <= 1e-8


def test_length_normalised_ratio_moves_the_minimiser():
    from theorylab.validations.llm_mutations import regression_ratio_length_normalised

    task = make(EOS)
    sampler = rt.random_logits(task, 1)
    with regression_ratio_length_normalised():
        seq, *_ = rt.minimise(task, "tbrm", sampler, 0.5)
    assert task.tv(seq, task.soft_optimum(0.5).seq_logp).max() > 1e-3


def test_qsharp_and_rto_exact_answers():
    task = make(EOS)
    beta = 0.5
    q_star, opt = task.soft_q(beta)
    assert np.abs(qsharp.qsharp_q(task, beta) - q_star).max() <= 1e-12
    tok = rto.token_rewards(task, opt.cond_logp, beta)
    want = (
        task.mean_reward
        - beta
        * np.log((np.exp(task.ref_logprobs) * np.exp(task.mean_reward / beta)).sum(1))[:, None]
    )
    assert np.abs(rto.implicit_return(task, tok) - want).max() <= 1e-12
    pol = task.sequence_logprobs(rto.token_soft_vi(task, tok, 1.0))
    assert task.tv(pol, task.optimum_by_enumeration(1.0)).max() <= 1e-12


def test_generic_soft_vi_matches_the_level_recursion():
    task = make("tokentree:V=3,L=3,prompts=2,ref=random,reward=graded")
    _, generic = task.soft_q(0.3)
    assert np.abs(generic.seq_logp - task.soft_optimum(0.3).seq_logp).max() <= 1e-12
    assert np.abs(generic.log_z - task.soft_optimum(0.3).log_z).max() <= 1e-12


def test_trainer_runs_the_regression_losses():
    from theorylab.algorithms.deep.trainer import train

    for loss in ("astar-po:beta=0.5", "rebel:eta=2,beta=0.5", "tbrm:beta=0.5"):
        res = train("tiny", "tokentree:V=2,L=2", loss, steps=4, eval_every=2, group_size=4,
                    value_samples=4)  # fmt: skip
        assert np.isfinite(res.kl_optimum).all()
    # EXO: each prompt's G sampled responses are its K-sample group (on-policy; pi*_beta is a
    # zero of the loss for any full-support sampler); measured 0.470 -> 0.200 in 30 steps
    res = train("tiny", "tokentree:V=2,L=2", "exo:beta=0.5", steps=20, eval_every=20,
                group_size=4, lr=1e-2)  # fmt: skip
    assert res.kl_optimum[0, -1] < 0.75 * res.kl_optimum[0, 0]
    with pytest.raises(ValueError, match="group_size must be even"):
        train("tiny", "tokentree:V=2,L=2", "rebel:beta=0.5", steps=1, group_size=3)
    with pytest.raises(ValueError, match="value_samples must be an integer >= 1, got 0"):
        train("tiny", "tokentree:V=2,L=2", "astar-po", steps=1, value_samples=0)


def test_exo_loss_formula_and_its_large_k_limit():
    from theorylab.algorithms.deep.exo import exo_expectation

    lr, r = t([[0.2, -0.1, 0.0]]), t([[1.0, 0.0, 0.5]])
    beta = 0.5
    p = np.exp([0.2, -0.1, 0.0])
    p /= p.sum()
    q = np.exp(np.array([1.0, 0.0, 0.5]) / beta)
    q /= q.sum()
    want = float((p * np.log(p / q)).sum())
    assert float(make_loss("exo", beta=beta)(lr, r)) == pytest.approx(want, abs=1e-14)
    with pytest.raises(InvalidBatchError, match="K >= 2"):
        make_loss("exo")(lr[:, :1], r[:, :1])
    # E[L_K] -> KL(pi || pi*_beta) as K grows (a one-token task: the responses are the symbols)
    task = make("tokentree-eos:V=3,L=1,prompts=1")
    seq = torch.as_tensor(task.sequence_logprobs(rt.log_softmax(rt.random_logits(task, 0))))
    kl = float(task.kl(seq.numpy(), task.soft_optimum(beta).seq_logp)[0])
    gaps = [abs(float(exo_expectation(task, seq, k, beta)) - kl) for k in (2, 4, 8)]
    assert gaps[0] > gaps[1] > gaps[2]


def test_exo_misspecified_projection_against_a_grid_and_the_claim_with_its_control():
    # the reverse-KL projection found by scipy equals a fine grid search over theta (independent)
    from theorylab.algorithms.deep import exo
    from theorylab.validations.claims.deep_misspecification import ExoMisspecified
    from theorylab.validations.llm_mutations import exo_forward_kl

    log_ref, r, phi = exo.misspecified_bandit()
    log_star = log_ref + r / 0.5
    log_star -= np.log(np.exp(log_star).sum())
    grid = np.linspace(-12.0, 4.0, 16001)
    kls = []
    for t in grid:
        lp = log_ref + phi[:, 0] * t
        lp -= np.log(np.exp(lp).sum())
        kls.append(np.exp(lp) @ (lp - log_star))
    theta = exo.reverse_kl_projection(log_ref, r, phi, 0.5)
    assert abs(theta[0] - grid[int(np.argmin(kls))]) < 2e-3
    claim = ExoMisspecified(scales={"quick": ((2, 6), 0.10)})
    assert claim.run("quick").passed
    with exo_forward_kl():
        assert not claim.run("quick").passed
