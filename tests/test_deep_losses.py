"""The deep losses: formulas on fixed batches, bad input, masking, and their expected updates
computed by enumerating groups against the closed forms in docs/algorithms/deep-losses.md."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

torch = pytest.importorskip("torch")

from theorylab.algorithms.deep import list_losses, loss_parameters, make_loss  # noqa: E402
from theorylab.algorithms.deep.group_enumeration import (  # noqa: E402
    enumerate_groups,
    group_probabilities,
)
from theorylab.algorithms.deep.groups import group_advantages  # noqa: E402
from theorylab.algorithms.deep.masking import InvalidBatchError, sequence_logprob  # noqa: E402
from theorylab.algorithms.deep.offline_losses import cql, fdvl_value  # noqa: E402
from theorylab.algorithms.deep.policy_gradient_losses import (  # noqa: E402
    cvar_grpo,
    dr_grpo,
    grpo,
    ppo_clip,
    rloo,
)
from theorylab.algorithms.deep.preference_losses import (  # noqa: E402
    chipo,
    dpo,
    ipo,
    rpo,
    vpo,
    xpo,
)

D = torch.float64


def t(x):
    return torch.tensor(x, dtype=D)


# --------------------------------------------------------------------------- registry
def test_every_loss_is_registered_with_its_hyper_parameters():
    names = set(list_losses())
    assert {"dpo", "ipo", "rpo", "vpo", "xpo", "chipo", "grpo", "dr-grpo", "rloo"} <= names
    assert {"ppo-clip", "cvar-grpo", "cql", "fdvl-value", "kl-k1", "kl-k2", "kl-k3"} <= names
    assert loss_parameters("dpo") == {"beta": 0.1, "label_smoothing": 0.0}
    f = make_loss("dpo:beta=0.5")
    a, b = t([0.3, -1.0]), t([-0.2, -0.4])
    z = torch.zeros(2, dtype=D)
    assert float(f(a, b, z, z)) == pytest.approx(float(dpo(a, b, z, z, beta=0.5)), abs=0)
    with pytest.raises(ValueError, match="no hyper-parameter 'gamma'"):
        make_loss("dpo:gamma=1")


# --------------------------------------------------------------------------- formulas
def test_direct_alignment_formulas_on_a_fixed_batch():
    pw, pl, rw, rl = (
        t([-1.0, -2.0, -0.5]),
        t([-1.5, -1.0, -3.0]),
        t([-1.2, -1.8, -1.0]),
        t([-1.1, -1.4, -2.0]),
    )
    h = (pw - rw) - (pl - rl)
    beta = 0.3
    ref_dpo = np.mean([math.log1p(math.exp(-beta * float(v))) for v in h])
    assert float(dpo(pw, pl, rw, rl, beta=beta)) == pytest.approx(ref_dpo, rel=1e-14)
    eps = 0.1
    ref_c = np.mean(
        [
            (1 - eps) * math.log1p(math.exp(-beta * float(v)))
            + eps * math.log1p(math.exp(beta * float(v)))
            for v in h
        ]
    )
    assert float(dpo(pw, pl, rw, rl, beta=beta, label_smoothing=eps)) == pytest.approx(
        ref_c, rel=1e-14
    )
    ref_ipo = np.mean([(float(v) - 1 / (2 * beta)) ** 2 for v in h])
    assert float(ipo(pw, pl, rw, rl, tau=beta)) == pytest.approx(ref_ipo, rel=1e-14)
    s = t([-0.7, -2.2])
    base = float(s.mean())
    assert float(rpo(pw, pl, rw, rl, s, beta=beta, eta=2.0)) == pytest.approx(
        ref_dpo - 2 * beta * base, rel=1e-14
    )
    assert float(vpo(pw, pl, rw, rl, s, beta=beta, alpha=0.5, sign=1)) == pytest.approx(
        ref_dpo + 0.5 * beta * base, rel=1e-14
    )
    assert float(vpo(pw, pl, rw, rl, s, beta=beta, alpha=0.5, sign=-1)) == pytest.approx(
        ref_dpo - 0.5 * beta * base, rel=1e-14
    )
    assert float(xpo(pw, pl, rw, rl, s, beta=beta, alpha=0.01)) == pytest.approx(
        ref_dpo + 0.01 * base, rel=1e-14
    )
    phi = lambda lr: math.exp(lr) + lr  # noqa: E731
    R = 0.5
    ref_chi = np.mean(
        [
            math.log1p(
                math.exp(-max(-2 * R, min(2 * R, beta * (phi(float(a - c)) - phi(float(b - d))))))
            )
            for a, b, c, d in zip(pw, pl, rw, rl, strict=True)
        ]
    )
    assert float(chipo(pw, pl, rw, rl, beta=beta, clip_r=R)) == pytest.approx(ref_chi, rel=1e-14)


def test_rpo_at_eta_zero_is_dpo_and_the_sft_terms_have_the_right_sign():
    pw, pl = t([-1.0, -2.0]).requires_grad_(), t([-1.5, -1.0])
    rw, rl = t([-1.2, -1.8]), t([-1.1, -1.4])
    assert float(rpo(pw, pl, rw, rl, pw, beta=0.2, eta=0.0).detach()) == float(
        dpo(pw, pl, rw, rl, beta=0.2).detach()
    )
    # d loss / d log pi(sample): RPO and VPO-offline lower the loss by raising log pi (SFT);
    # XPO and VPO-online by lowering it (optimism).
    s = t([-1.0]).requires_grad_()
    for fn, kw, sign in (
        (rpo, {"eta": 1.0}, -1),
        (vpo, {"sign": -1}, -1),
        (vpo, {"sign": 1}, 1),
        (xpo, {"alpha": 0.1}, 1),
    ):
        (g,) = torch.autograd.grad(fn(pw.detach(), pl, rw, rl, s, **kw), s)
        assert float(g) * sign > 0, fn.__name__


def test_ipo_on_all_wins_data_stays_bounded_while_dpo_is_not():
    h = torch.zeros(1, dtype=D, requires_grad=True)
    z = torch.zeros(1, dtype=D)
    for _ in range(2000):
        (g,) = torch.autograd.grad(ipo(h, z, z, z, tau=0.25), h)
        h = (h - 0.1 * g).detach().requires_grad_()
    assert float(h.detach()) == pytest.approx(1 / (2 * 0.25), abs=1e-9)
    h = t([10.0]).requires_grad_()
    (g,) = torch.autograd.grad(dpo(h, z, z, z, beta=1.0), h)
    assert float(g) < 0  # the DPO loss still decreases as h grows: no finite minimiser


def test_kl_estimators_per_token():
    logp, ref = t([[-1.0, -2.0]]), t([[-1.5, -1.0]])
    mask = torch.ones(1, 2)
    lr = logp - ref
    k1, k2, k3 = (make_loss(f"kl-k{i}")(logp, ref, mask) for i in (1, 2, 3))
    assert float(k1) == pytest.approx(float(lr.sum()))
    assert float(k2) == pytest.approx(float((lr**2 / 2).sum()))
    assert float(k3) == pytest.approx(float((torch.exp(-lr) + lr - 1).sum()))
    assert float(k3) >= 0


def test_ppo_clip_gradient_vanishes_outside_the_clip_range():
    old = t([[-1.0]])
    mask = torch.ones(1, 1)
    for lp, adv, zero in (
        (-1.0 + math.log(1.5), 1.0, True),
        (-1.0 + math.log(0.5), -1.0, True),
        (-1.0, 1.0, False),
    ):
        logp = t([[lp]]).requires_grad_()
        (g,) = torch.autograd.grad(ppo_clip(logp, old, t([adv]), mask, clip_eps=0.2), logp)
        assert (float(g) == 0) == zero


# --------------------------------------------------------------------------- masking and bad input
@settings(max_examples=25)
@given(st.integers(1, 4), st.integers(1, 5), st.integers(0, 3), st.integers(0, 10_000))
def test_padding_never_changes_a_loss(B, T, pad, seed):
    g = torch.Generator().manual_seed(seed)
    lengths = torch.randint(1, T + 1, (B,), generator=g)
    mask = (torch.arange(T)[None, :] < lengths[:, None]).to(D)
    logp = -torch.rand(B, T, generator=g, dtype=D)
    ref = -torch.rand(B, T, generator=g, dtype=D)
    r = torch.rand(B, generator=g, dtype=D)
    group = torch.zeros(B, dtype=torch.int64)

    def padded(x, value):
        return torch.cat([x, torch.full((B, pad), value, dtype=D)], dim=1)

    mask2 = torch.cat([mask, torch.zeros(B, pad, dtype=D)], dim=1)
    junk = float("nan")
    assert torch.equal(sequence_logprob(logp, mask), sequence_logprob(padded(logp, junk), mask2))
    a = grpo(logp, None, ref, mask, r, group, beta=0.1) if B > 1 else None
    if a is not None:
        b = grpo(padded(logp, junk), None, padded(ref, junk), mask2, r, group, beta=0.1)
        assert float(a) == pytest.approx(float(b), rel=1e-13)
    c = rloo(logp, ref, mask, r, group, beta=0.1) if B > 1 else None
    if c is not None:
        d = rloo(padded(logp, junk), padded(ref, junk), mask2, r, group, beta=0.1)
        assert float(c) == pytest.approx(float(d), rel=1e-13)


def test_bad_input_raises_specific_errors():
    a, b = t([0.1, 0.2]), t([0.1, 0.2, 0.3])
    with pytest.raises(InvalidBatchError, match="policy_rejected has 3 entries, expected B = 2"):
        dpo(a, b, a, a)
    with pytest.raises(InvalidBatchError, match=r"beta must be > 0, got -0.1"):
        dpo(a, a, a, a, beta=-0.1)
    with pytest.raises(InvalidBatchError, match=r"beta must be > 0, got 0"):
        dpo(a, a, a, a, beta=0)
    with pytest.raises(InvalidBatchError, match="tau must be > 0"):
        ipo(a, a, a, a, tau=0.0)
    with pytest.raises(InvalidBatchError, match="empty"):
        dpo(t([]), t([]), t([]), t([]))
    logp = -torch.rand(3, 2, dtype=D)
    mask = torch.ones(3, 2)
    r = t([1.0, 0.0, 1.0])
    with pytest.raises(InvalidBatchError, match="mask row 1 has no token"):
        sequence_logprob(logp, torch.tensor([[1, 1], [0, 0], [1, 0]]))
    with pytest.raises(InvalidBatchError, match=r"mask has shape \(3, 3\)"):
        sequence_logprob(logp, torch.ones(3, 3))
    with pytest.raises(InvalidBatchError, match=r"ref_logp has shape \(3, 1\)"):
        grpo(logp, None, logp[:, :1], mask, r, torch.tensor([0, 0, 0]))
    with pytest.raises(InvalidBatchError, match="group 1 is empty"):
        grpo(logp, None, logp, mask, r, torch.tensor([0, 2, 2]))
    with pytest.raises(InvalidBatchError, match="group 1 has 1 response"):
        grpo(logp, None, logp, mask, r, torch.tensor([0, 0, 1]))
    with pytest.raises(InvalidBatchError, match="group 1 has 1 response"):
        rloo(logp, logp, mask, r, torch.tensor([0, 0, 1]))
    with pytest.raises(InvalidBatchError, match="needs ref_logp"):
        grpo(logp, None, None, mask, r, torch.tensor([0, 0, 0]), beta=0.1)
    with pytest.raises(InvalidBatchError, match="must hold integer ids"):
        grpo(logp, None, logp, mask, r, t([0.0, 0.0, 0.0]))
    with pytest.raises(InvalidBatchError, match="rewards has 2 entries, expected B = 3"):
        dr_grpo(logp, None, None, mask, r[:2], torch.tensor([0, 0, 0]))
    with pytest.raises(InvalidBatchError, match="alpha must be in"):
        cvar_grpo(logp, None, None, mask, r, torch.tensor([0, 0, 0]), alpha=0.0)
    with pytest.raises(InvalidBatchError, match=r"actions\[1\] = 5 is outside 0..2"):
        cql(torch.zeros(2, 3, dtype=D), torch.tensor([0, 5]), t([0.0, 0.0]))
    with pytest.raises(InvalidBatchError, match="unknown divergence"):
        fdvl_value(a, a, divergence="hellinger")


# --------------------------------------------------------------------------- group advantages
def test_group_advantages_by_hand():
    r = t([1.0, 0.0, 0.0, 1.0, 0.5, 0.5])
    g = torch.tensor([0, 0, 0, 0, 1, 1])
    m = 0.5
    sd = math.sqrt(sum((x - m) ** 2 for x in (1, 0, 0, 1)) / 3)
    assert torch.allclose(
        group_advantages(r, g, "std", eps=0.0)[:4], t([0.5, -0.5, -0.5, 0.5]) / sd
    )
    assert torch.equal(group_advantages(r, g, "std")[4:], t([0.0, 0.0]))  # zero std: zero advantage
    assert torch.allclose(group_advantages(r, g, "mean"), t([0.5, -0.5, -0.5, 0.5, 0, 0]))
    assert torch.allclose(
        group_advantages(r, g, "loo")[:4], t([1 - 1 / 3, -2 / 3, -2 / 3, 1 - 1 / 3])
    )
    # cvar, alpha = 0.5: q = 2nd smallest of (0, 0, 1, 1) = 0 -> all advantages 0 at or above q
    assert torch.equal(group_advantages(r, g, "cvar", alpha=0.5)[:4], torch.zeros(4, dtype=D))
    r2 = t([3.0, 1.0, 2.0, 0.0])
    a = group_advantages(r2, torch.zeros(4, dtype=torch.int64), "cvar", alpha=0.5)
    assert torch.allclose(a, t([0.0, 0.0, 0.0, -1.0]) / 0.5)


# --------------------------------------------------------------------------- expected updates
def bandit_expected_update(loss_fn, theta, ref_logp, reward_atoms, G):
    """E over all G-tuples of -grad loss for a one-token softmax bandit: (K,).

    reward_atoms: (K,) deterministic rewards."""
    K = theta.shape[0]
    tuples = enumerate_groups(K, G)  # (N, G)
    N = tuples.shape[0]
    probs = group_probabilities(tuples, torch.softmax(theta, 0).detach())
    th = theta.detach().clone().requires_grad_()
    logp_all = torch.log_softmax(th, 0)
    idx = torch.as_tensor(tuples.reshape(-1))
    logp = logp_all[idx][:, None]  # (N G, 1)
    ref = ref_logp[idx][:, None]
    rewards = reward_atoms[idx]
    group = torch.as_tensor(np.repeat(np.arange(N), G))
    mask = torch.ones(N * G, 1, dtype=D)
    w = (probs[:, None] * torch.ones(1, G, dtype=D) / G).reshape(-1)  # each response: P(tuple)/G
    loss = loss_fn(logp, ref, mask, rewards, group, w)
    (g,) = torch.autograd.grad(loss, th)
    return -g


@pytest.fixture
def bandit():
    theta = t([0.3, -0.2, 0.5, 0.0])
    ref = torch.log_softmax(t([0.1, 0.4, -0.3, 0.2]), 0)
    r = t([1.0, 0.3, 0.0, 0.7])
    return theta, ref, r


def policy_gradient(theta, r):
    pi = torch.softmax(theta, 0)
    return pi * (r - (pi * r).sum())


def test_rloo_expected_update_is_the_gradient_of_the_kl_regularised_objective(bandit):
    theta, ref, r = bandit
    beta = 0.3
    up = bandit_expected_update(
        lambda lp, rf, m, rw, g, w: rloo(lp, rf, m, rw, g, w, beta=beta), theta, ref, r, 3
    )
    th = theta.clone().requires_grad_()
    pi = torch.softmax(th, 0)
    obj = (pi * r).sum() - beta * (pi * (torch.log(pi) - ref)).sum()
    (exact,) = torch.autograd.grad(obj, th)
    assert torch.allclose(up, exact, atol=1e-14, rtol=0)


@pytest.mark.parametrize("G", [2, 3, 4])
def test_dr_grpo_expected_update_is_g_minus_one_over_g_times_the_policy_gradient(bandit, G):
    theta, ref, r = bandit
    up = bandit_expected_update(
        lambda lp, rf, m, rw, g, w: dr_grpo(lp, None, None, m, rw, g, w, beta=0.0), theta, ref, r, G
    )
    assert torch.allclose(up, (G - 1) / G * policy_gradient(theta, r), atol=1e-14, rtol=0)


@pytest.mark.parametrize(
    ("kl", "direction"), [("k3", "forward"), ("k2", "reverse"), ("k1", "zero")]
)
def test_the_kl_estimator_in_the_loss_decides_which_kl_is_descended(bandit, kl, direction):
    theta, ref, r = bandit
    beta = 0.25
    zero_r = torch.zeros_like(r)
    up = bandit_expected_update(
        lambda lp, rf, m, rw, g, w: dr_grpo(lp, None, rf, m, rw, g, w, beta=beta, kl=kl),
        theta, ref, zero_r, 3,
    )  # fmt: skip
    th = theta.clone().requires_grad_()
    logpi = torch.log_softmax(th, 0)
    pi = logpi.exp()
    kl_value = {
        "forward": (ref.exp() * (ref - logpi)).sum(),
        "reverse": (pi * (logpi - ref)).sum(),
        "zero": 0 * th.sum(),
    }[direction]
    (g,) = torch.autograd.grad(kl_value, th)
    assert torch.allclose(up, -beta * g, atol=1e-14, rtol=0)


def kappa_binary(p: float, G: int, eps: float) -> float:
    """GRPO's multiplier for 0/1 rewards: E[A_i 1{r_i=1}] / (p (1-p)) by summing the binomial."""
    total = 0.0
    for k in range(1, G + 1):  # k successes including response i
        prob = math.comb(G - 1, k - 1) * p**k * (1 - p) ** (G - k)
        mean = k / G
        sd = math.sqrt((k * (1 - mean) ** 2 + (G - k) * mean**2) / (G - 1))
        total += prob * (1 - mean) / (sd + eps)
    return total / (p * (1 - p))


def test_grpo_on_binary_rewards_is_kappa_p_times_the_policy_gradient(bandit):
    theta, ref, _ = bandit
    r = t([1.0, 0.0, 0.0, 1.0])
    G, eps = 4, 1e-4
    up = bandit_expected_update(
        lambda lp, rf, m, rw, g, w: grpo(lp, None, None, m, rw, g, w, beta=0.0, eps=eps),
        theta,
        ref,
        r,
        G,
    )
    p = float((torch.softmax(theta, 0) * r).sum())
    kappa = kappa_binary(p, G, eps)
    assert torch.allclose(up, kappa * policy_gradient(theta, r), atol=1e-13, rtol=0)
    assert kappa > 1.0  # the std normalisation inflates the step (the difficulty bias)


def test_grpo_with_graded_rewards_is_not_parallel_to_the_policy_gradient(bandit):
    theta, ref, r = bandit
    up = bandit_expected_update(
        lambda lp, rf, m, rw, g, w: grpo(lp, None, None, m, rw, g, w, beta=0.0), theta, ref, r, 4
    )
    ratio = up / policy_gradient(theta, r)
    assert float(ratio.max() - ratio.min()) > 0.1


# --------------------------------------------------------------------------- preference optima
def bandit_pairs(K):
    yw, yl = np.meshgrid(np.arange(K), np.arange(K), indexing="ij")
    return torch.as_tensor(yw.reshape(-1)), torch.as_tensor(yl.reshape(-1))


def exact_pair_loss(loss, logpi, ref, pref, mu):
    """Exact expected loss over ordered pairs (y, y') ~ mu x mu labelled y > y' w.p. pref[y, y']."""
    K = logpi.shape[0]
    yw, yl = bandit_pairs(K)
    w = mu[yw] * mu[yl] * pref[yw, yl]
    return loss(logpi[yw], logpi[yl], ref[yw], ref[yl], w)


def test_dpo_ipo_and_chipo_are_stationary_at_their_closed_form_optima(bandit):
    _, ref, r = bandit
    K = r.shape[0]
    mu = torch.full((K,), 1 / K, dtype=D)
    bt = torch.sigmoid(r[:, None] - r[None, :])
    beta = 0.4
    cases = []
    cases.append((lambda *a: dpo(*a, beta=beta), bt, torch.log_softmax(ref + r / beta, 0)))
    p_mu = (bt * mu[None, :]).sum(1)
    cases.append((lambda *a: ipo(*a, tau=beta), bt, torch.log_softmax(ref + p_mu / beta, 0)))
    # chi-PO: beta (z + log z) = r - lambda, z = pi/ref, lambda chosen so that sum pi = 1
    from scipy.optimize import brentq
    from scipy.special import lambertw

    def pi_of(lam):
        # z + log z = c  <=>  z = W(e^c)
        c = (r.numpy() - lam) / beta
        return ref.exp().numpy() * np.real(lambertw(np.exp(c)))

    lam = brentq(lambda v: pi_of(v).sum() - 1, -20, 20, xtol=1e-15)
    cases.append((lambda *a: chipo(*a, beta=beta, clip_r=10.0), bt, torch.log(t(pi_of(lam)))))
    for loss, pref, log_opt in cases:
        th = log_opt.clone().requires_grad_()
        logpi = torch.log_softmax(th, 0)
        (g,) = torch.autograd.grad(exact_pair_loss(loss, logpi, ref, pref, mu), th)
        assert float(g.abs().max()) < 1e-12
        # and not stationary at the wrong temperature (the negative control)
        th = torch.log_softmax(ref + r / (2 * beta), 0).clone().requires_grad_()
        (g,) = torch.autograd.grad(
            exact_pair_loss(loss, torch.log_softmax(th, 0), ref, pref, mu), th
        )
        assert float(g.abs().max()) > 1e-3


# --------------------------------------------------------------------------- offline losses
def test_cql_tabular_minimiser_is_pessimistic_by_the_closed_form():
    # one state, 3 actions, data mu = (0.6, 0.3, 0.1); targets y; minimise the exact expectation
    mu = t([0.6, 0.3, 0.1])
    y = t([1.0, 0.8, 1.2])
    alpha = 0.2
    q = torch.zeros(3, dtype=D, requires_grad=True)
    opt = torch.optim.LBFGS([q], line_search_fn="strong_wolfe", tolerance_grad=1e-14, max_iter=200)
    acts = torch.arange(3)

    def closure():
        opt.zero_grad()
        loss = cql(q[None, :].expand(3, 3), acts, y, mu, alpha=alpha)
        loss.backward()
        return loss

    opt.step(closure)
    pi = torch.softmax(q.detach(), 0)
    assert torch.allclose(q.detach(), y - alpha * (pi / mu - 1), atol=1e-9)
    assert float(q.detach()[2]) < float(y[2])  # the rarely seen action is pushed down


def test_fdvl_value_minimisers():
    q = t([0.0, 1.0, 2.0, 5.0])
    lam = 0.7
    # reverse-KL (Gumbel): V = lam log E exp(Q/lam) (the soft maximum) zeroes the gradient
    # (the batch-max rescaling e^{-m} is a positive constant under stopgrad)
    v_star = lam * math.log(float(torch.exp(q / lam).mean()))
    for v0, stationary in ((v_star, True), (v_star - 0.5, False), (v_star + 0.5, False)):
        v = t([v0]).requires_grad_()
        (g,) = torch.autograd.grad(
            fdvl_value(q, v.expand(4), divergence="reverse-kl", lam=lam, max_clip=50.0), v
        )
        assert (abs(float(g)) < 1e-12) == stationary
    # total variation: the loss in V is piecewise linear; its minimiser is where
    # P(Q > V) crosses (1 - lam)/lam = 3/7: between the 3rd and the 4th value
    grid = torch.linspace(-1, 6, 7001, dtype=D)
    vals = torch.stack(
        [fdvl_value(q, g.expand(4), divergence="total-variation", lam=lam) for g in grid]
    )
    best = float(grid[int(vals.argmin())])
    assert 2.0 <= best <= 5.0
    assert float((q > best).to(D).mean()) <= (1 - lam) / lam + 1e-12


# --------------------------------------------------------------------------- CUDA
@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
@pytest.mark.parametrize("name", ["dpo", "grpo", "dr-grpo", "rloo", "cvar-grpo"])
def test_losses_on_cuda_equal_cpu(name):
    g = torch.Generator().manual_seed(0)
    B, T = 8, 5
    logp = -torch.rand(B, T, generator=g, dtype=D)
    ref = -torch.rand(B, T, generator=g, dtype=D)
    mask = (torch.arange(T)[None, :] < torch.randint(1, T + 1, (B,), generator=g)[:, None]).to(D)
    r = torch.rand(B, generator=g, dtype=D)
    group = torch.arange(B) // 4
    loss = make_loss(name)

    def call(dev):
        lp, rf, m, rw, gr = (x.to(dev) for x in (logp, ref, mask, r, group))
        lp = lp.clone().requires_grad_()
        if name == "dpo":
            out = loss(lp.sum(1)[:4], lp.sum(1)[4:], rf.sum(1)[:4], rf.sum(1)[4:])
        elif name == "rloo":
            out = loss(lp, rf, m, rw, gr)
        else:
            out = loss(lp, None, rf, m, rw, gr)
        (grad,) = torch.autograd.grad(out, lp)
        return out.detach().cpu(), grad.cpu()

    (a, ga), (b, gb) = call("cpu"), call("cuda")
    assert torch.allclose(a, b, atol=1e-12) and torch.allclose(ga, gb, atol=1e-12)
