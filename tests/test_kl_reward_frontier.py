"""P3O's KL-reward frontier (seed row 002-004#E3, ``algorithms/deep/kl_reward_frontier.py``): the
exact frontier against pi* written out and against soft VI; nothing above it; the on-policy
expected gradients of p3o and value-free PPO both equal the exact gradient of E r - beta KL;
invariance of P3O's rounds to r + c(x); input errors; the claim and its control."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from theorylab.algorithms.deep import kl_reward_frontier as kf  # noqa: E402
from theorylab.mdps import make  # noqa: E402

SPEC = "tokentree-eos:V=3,L=2,prompts=2"


@pytest.fixture(scope="module")
def task():
    return make(SPEC)


def _written_out(task, beta):
    """pi*_beta(y|x) = ref(y|x) exp(r(x,y)/beta) / Z(x), KL and E r by plain loops."""
    kls, rewards = [], []
    for x in range(task.n_prompts):
        ref = [float(np.exp(v)) for v in task.ref_logprobs[x]]
        w = [ref[y] * np.exp(task.mean_reward[x, y] / beta) for y in range(task.n_responses)]
        z = sum(w)
        p = [v / z for v in w]
        kls.append(sum(p[y] * np.log(p[y] / ref[y]) for y in range(task.n_responses)))
        rewards.append(sum(p[y] * task.mean_reward[x, y] for y in range(task.n_responses)))
    return np.mean(kls), np.mean(rewards)


@pytest.mark.parametrize("beta", [0.05, 0.3, 2.0])
def test_frontier_point_is_pi_star_written_out_and_soft_vi(task, beta):
    frontier = kf.ExactFrontier(task)
    got = np.array(frontier.point(beta))
    assert np.abs(got - np.array(_written_out(task, beta))).max() < 1e-12
    soft_vi = np.array(kf.policy_point(task, task.soft_optimum(beta).seq_logp))
    assert np.abs(got - soft_vi).max() < 1e-12


def test_reward_at_inverts_the_budget_and_its_ends(task):
    frontier = kf.ExactFrontier(task)
    for beta in (0.1, 0.5, 3.0):
        kl, reward = frontier.point(beta)
        b, f = frontier.reward_at(kl)
        assert b == pytest.approx(beta, rel=1e-8) and f == pytest.approx(reward, abs=1e-10)
    ref_point = kf.policy_point(task, task.ref_logprobs)
    assert frontier.reward_at(0.0) == (np.inf, pytest.approx(ref_point[1], abs=1e-14))
    # the greedy end: ref restricted to each prompt's best responses, KL = -log ref(best set)
    best = task.mean_reward == task.mean_reward.max(axis=1, keepdims=True)
    kl_max = float(np.mean([-np.log(np.exp(task.ref_logprobs[x][best[x]]).sum())
                            for x in range(task.n_prompts)]))  # fmt: skip
    assert frontier.kl_max == pytest.approx(kl_max, abs=1e-12)
    assert frontier.reward_at(kl_max + 1.0) == (0.0, pytest.approx(1.0))
    ks = np.linspace(0.01, kl_max * 0.99, 12)
    fs = np.array([frontier.reward_at(k)[1] for k in ks])
    assert np.all(np.diff(fs) > 0) and np.all(np.diff(fs, 2) < 1e-12)  # increasing, concave


def test_no_random_policy_above_the_frontier(task):
    frontier = kf.ExactFrontier(task)
    rng = np.random.default_rng(0)
    gaps = []
    for _ in range(100):
        q = rng.dirichlet(np.full(task.n_responses, 0.3), size=task.n_prompts)
        gaps.append(frontier.gap(*kf.policy_point(task, np.log(q))))
    assert min(gaps) > 0.0


def test_gap_below_the_weak_duality_bound(task):
    """F(KL(pi)) - E_pi r <= beta KL(pi || pi*_beta) for every beta: F(k) <= beta log Z + beta k
    and E r - beta KL(pi || ref) = beta log Z - beta KL(pi || pi*_beta) (written out here)."""
    frontier = kf.ExactFrontier(task)
    rng = np.random.default_rng(1)
    for _ in range(30):
        q = np.log(rng.dirichlet(np.full(task.n_responses, 0.5), size=task.n_prompts))
        gap = frontier.gap(*kf.policy_point(task, q))
        for beta in (0.1, 0.5, 2.0):
            logits = task.ref_logprobs + task.mean_reward / beta
            star = logits - np.log(np.exp(logits).sum(axis=1, keepdims=True))
            bound = beta * float(np.mean((np.exp(q) * (q - star)).sum(axis=1)))
            assert 0.0 <= gap <= bound + 1e-12


def test_on_policy_expected_gradients_equal_the_exact_gradient(task):
    """Both learners' expected on-policy gradients are grad (E_pi r - beta KL(pi || ref))."""
    from theorylab.algorithms.deep.pacs import group_expectation
    from theorylab.algorithms.deep.twins import LogitTable

    beta = 0.3
    theta = np.random.default_rng(3).normal(size=(task.n_prompts, task.n_nodes, task.V))
    pol = LogitTable(task, theta)
    seq = pol.seq_logp(pol.cond_logp())  # (P, Y)
    ref = torch.as_tensor(task.ref_logprobs)
    objective = (seq.exp() * (torch.as_tensor(task.mean_reward) - beta * (seq - ref))).sum(1)
    (want,) = torch.autograd.grad(objective.mean(), pol.theta)
    for learner in kf.LEARNERS:
        pol = LogitTable(task, theta)
        loss = kf.learner_loss(learner, 0.2, beta)
        (g,) = torch.autograd.grad(group_expectation(task, pol, 2, loss), pol.theta)
        # p3o: E[(r_1 - r_2)(grad log pi(y_1) - grad log pi(y_2))] / 2 = E[r grad log pi]
        assert np.abs(-g.numpy() - want.numpy()).max() < 1e-12, learner


def test_p3o_rounds_invariant_to_shift_value_free_ppo_not(task):
    shift = np.array([2.5, -1.5])
    kw = dict(rounds=5, batch=4, lr=3.0, seed=1)
    a = kf.clipped_rounds(task, "p3o", 0.3, **kw)
    b = kf.clipped_rounds(task, "p3o", 0.3, shift=shift, **kw)
    assert np.abs(a.kl - b.kl).max() < 1e-12 and np.abs(a.reward - b.reward).max() < 1e-12
    c = kf.clipped_rounds(task, "ppo", 0.3, **kw)
    d = kf.clipped_rounds(task, "ppo", 0.3, shift=shift, **kw)
    assert np.abs(c.reward - d.reward).max() > 1e-3
    assert abs(a.kl[0]) < 1e-14 and len(a.kl) == 6  # starts at the reference


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"rounds": 0}, "rounds must be >= 1, got 0"),
        ({"rounds": 2, "epochs": 0}, "epochs must be >= 1, got 0"),
        ({"rounds": 2, "batch": -1}, "batch must be >= 0"),
        ({"rounds": 2, "shift": np.zeros(3)}, r"shift has shape \(3,\), expected \(2,\)"),
    ],
)
def test_input_errors(task, kwargs, message):
    with pytest.raises(ValueError, match=message):
        kf.clipped_rounds(task, "p3o", 0.3, **kwargs)
    with pytest.raises(ValueError, match="learner 'trpo' unknown"):
        kf.learner_loss("trpo", 0.2, 0.1)


def test_claim_passes_and_its_control_fails():
    from theorylab.validations.claims.kl_reward_frontier import (
        FrontierScale,
        P3oKlRewardFrontier,
    )
    from theorylab.validations.openchat_p3o_mutations import p3o_single_response_advantage

    claim = P3oKlRewardFrontier(scales={"quick": FrontierScale(SPEC, (0.3,), 2, 40, (0.3,))})
    rep = claim.run("quick")
    assert rep.passed, [c.detail for c in rep.checks if not c.passed]
    with p3o_single_response_advantage():
        rep = claim.run("quick")
    failed = [c.name for c in rep.checks if not c.passed]
    assert "P3O ends on the frontier, identically under r + c(x)" in failed
