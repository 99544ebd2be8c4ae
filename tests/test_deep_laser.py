"""LaSeR (seed row 002-004#F5): the registered loss against its formula written out, the closed
form of the self-verification optimum, the claim and its two mutations, input errors, and the
transformer trainer running it."""

from __future__ import annotations

import math

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from theorylab.algorithms.deep import laser as ls  # noqa: E402
from theorylab.algorithms.deep.masking import InvalidBatchError  # noqa: E402
from theorylab.algorithms.deep.registry import make_loss  # noqa: E402
from theorylab.mdps import make  # noqa: E402

D = torch.float64


def _batch():
    # one group of three responses of lengths 2, 1, 3 (padding after the end)
    logp = torch.tensor([[-0.5, -1.0, -9.0], [-0.2, -9.0, -9.0], [-1.0, -0.3, -0.7]], dtype=D)
    ref = torch.tensor([[-0.7, -0.6, -5.0], [-0.4, -5.0, -5.0], [-0.9, -0.5, -0.2]], dtype=D)
    mask = torch.tensor([[1, 1, 0], [1, 0, 0], [1, 1, 1]], dtype=D)
    z = torch.tensor([[-2.0, -1.5, -7.0], [-0.9, -8.0, -8.0], [-3.0, -2.5, -1.2]], dtype=D)
    zref = torch.tensor([[-2.1, -2.2, -6.0], [-2.3, -6.0, -6.0], [-2.4, -2.5, -2.6]], dtype=D)
    r = torch.tensor([1.0, 0.0, 1.0], dtype=D)
    return logp, ref, mask, z, zref, r


@pytest.mark.parametrize("c_ref", [None, -2.0])
def test_loss_written_out_for_one_group_of_three(c_ref):
    logp, ref, mask, z, zref, r = _batch()
    beta, beta_v, alpha = 0.3, 0.8, 1.7
    seq = [-0.5 - 1.0, -0.2, -1.0 - 0.3 - 0.7]
    kl = [(-0.5 + 0.7) + (-1.0 + 0.6), -0.2 + 0.4, (-1.0 + 0.9) + (-0.3 + 0.5) + (-0.7 + 0.2)]
    shaped = [1.0 - beta * kl[0], 0.0 - beta * kl[1], 1.0 - beta * kl[2]]
    adv = [shaped[i] - (sum(shaped) - shaped[i]) / 2 for i in range(3)]
    rl = sum(-a * s for a, s in zip(adv, seq, strict=True)) / 3
    last_z = [-1.5, -0.9, -1.2]  # after each response's last real token
    c = [-2.2, -2.3, -2.6] if c_ref is None else [c_ref] * 3
    mse = sum(
        (beta_v * (lz - ci) - ri) ** 2 for lz, ci, ri in zip(last_z, c, [1, 0, 1], strict=True)
    )
    want = rl + alpha * mse / 3
    loss = make_loss("laser", beta=beta, beta_v=beta_v, alpha=alpha, c_ref=c_ref)
    got = loss(logp, None, ref, mask, r, torch.zeros(3, dtype=torch.int64), z_logp=z,
               ref_z_logp=zref)  # fmt: skip
    assert float(got) == pytest.approx(want, abs=1e-13)


def test_closed_form_identity_written_out():
    # one (x, y), reference (0.1, 0.6, 0.3) with z = 0, r_v = 1, beta_v = 0.5
    ref = np.array([[[0.1, 0.6, 0.3]]])
    q, log_z = ls.verification_optimum(ref, np.array([[1.0]]), 0.5, 0)
    Z = 0.1 * math.exp(2.0) + 0.9
    assert q[0, 0, 0] == pytest.approx(0.1 * math.exp(2.0) / Z, abs=1e-15)
    assert log_z[0, 0] == pytest.approx(math.log(Z), abs=1e-15)
    # r_s = beta_v log(q(z) / ref(z)) = r_v - beta_v log Z
    assert 0.5 * math.log(q[0, 0, 0] / 0.1) == pytest.approx(1.0 - 0.5 * math.log(Z), abs=1e-14)
    q_opt = ls.verification_by_optimiser(ref, np.array([[1.0]]), 0.5, 0)
    assert np.abs(q_opt - q).max() < 1e-7


def test_claim_passes_and_both_controls_fail():
    from theorylab.validations.claims.self_rewarding import LaserScale, LaserSelfReward
    from theorylab.validations.laser_mutations import laser_last_column, laser_unscaled

    small = LaserScale("tokentree-eos:V=3,L=2,prompts=1,reward=binary", (2,), 300, 0.05)
    claim = LaserSelfReward(scales={"quick": small})
    assert claim.run("quick").passed
    for mutation in (laser_last_column, laser_unscaled):
        with mutation():
            assert not claim.run("quick").passed


def test_last_column_is_invisible_when_every_response_has_l_tokens():
    # the control is a length bug: on a fixed-length tree the gradient does not change
    from theorylab.algorithms.deep import regression_twins as rt
    from theorylab.validations.laser_mutations import laser_last_column

    task = make("tokentree:V=2,L=2,prompts=1,reward=binary")
    ref_ver = ls.verification_reference(task, 3, 0.05, 1, 0)
    theta = rt.random_logits(task, 3)
    loss = make_loss("laser", beta=0.5, beta_v=0.5)
    grads = []
    for ctx in (None, laser_last_column):
        table = ls.LaserTable(task, 3, 1, theta)
        if ctx is None:
            e = ls.laser_expectation(task, table, 2, loss, ref_ver)
        else:
            with ctx():
                e = ls.laser_expectation(task, table, 2, loss, ref_ver)
        grads.append([g.numpy() for g in torch.autograd.grad(e, table.parameters())])
    assert all(np.abs(a - b).max() < 1e-14 for a, b in zip(*grads, strict=True))


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"z_logp": None}, "needs z_logp"),
        ({"ref_z_logp": None}, "needs ref_z_logp"),
        ({"beta_v": 0.0}, "beta_v"),
        ({"token": -1}, "token"),
        ({"z_logp": torch.zeros(3, 2, dtype=D)}, "shape"),
    ],
)
def test_input_errors(kwargs, message):
    logp, ref, mask, z, zref, r = _batch()
    args = {
        "logp": logp,
        "old_logp": None,
        "ref_logp": ref,
        "mask": mask,
        "rewards": r,
        "group": torch.zeros(3, dtype=torch.int64),
        "z_logp": z,
        "ref_z_logp": zref,
    }
    hyper = {k: kwargs.pop(k) for k in ("beta_v", "token") if k in kwargs}
    args.update(kwargs)
    with pytest.raises(InvalidBatchError, match=message):
        make_loss("laser", **hyper)(**args)


def test_trainer_refuses_a_token_outside_the_symbols():
    from theorylab.algorithms.deep.trainer import train

    with pytest.raises(ValueError, match="token=5 must be a symbol 0..1"):
        train("tiny", "tokentree:V=2,L=2", "laser:token=5", steps=1)


def test_trainer_runs_laser_and_the_self_reward_moves_to_the_verifier():
    from theorylab.algorithms.deep.trainer import train

    task = make("tokentree:V=2,L=2")
    c = math.log(0.5)
    errors = {}
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # tiny model: one thread is the fastest
    for alpha in (0.0, 1.0):
        spec = f"laser:beta=0.5,beta_v=2.0,alpha={alpha},c_ref={c}"
        res, states = train("tiny", task, spec, steps=40, eval_every=40, group_size=4, lr=1e-2,
                            return_states=True)  # fmt: skip
        assert np.isfinite(res.kl_optimum).all()  # the exact KL to pi*_0.5 is reported
        rs = ls.transformer_self_rewards(states[0].model, task, token=0, beta_v=2.0, c_ref=c)
        errors[alpha] = float(np.abs(rs - task.mean_reward).mean())
    torch.set_num_threads(threads)
    # measured: mean |r_s - r| 1.02 without the MSE term, 0.40 with it (40 steps)
    assert errors[1.0] < 0.5 * errors[0.0]


def test_the_prompt_trainer_refuses_laser_in_one_line():
    # z_logp (the pre-specified token after the response) is not a tensor it supplies
    from theorylab.algorithms.deep.prompt_trainer import check_prompt_loss

    with pytest.raises(Exception, match="not z_logp; on a prompt dataset use one of") as info:
        check_prompt_loss("laser")
    assert len(str(info.value).splitlines()) == 1
