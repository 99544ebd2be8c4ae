"""Issue 28 tier-B rows (llm28b): CoPG (000#56), OPRL (001#56), reward Clip / Delta (002-004#G6):
identities against independent answers, the controls failing, runs through tl.run, input errors
in one line."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.special import log_softmax

import theorylab as tl
from theorylab.mdps import make

TREE = "tokentree:V=3,L=2,prompts=2,reward=random,ref=random,seed=3"


# ----------------------------------------------------------------------------- CoPG
def test_copg_gradient_is_the_behaviour_baselined_score():
    """The pair sum written out against mu * (R - <mu, R>) (module docstring's closed form)."""
    from theorylab.algorithms.preference import copg

    task = make(TREE)
    rng = np.random.default_rng(0)
    th = rng.standard_normal(task.ref_logprobs.shape)
    mu = np.exp(log_softmax(rng.standard_normal(th.shape), axis=1))
    lp = log_softmax(th, axis=1)
    R = task.mean_reward - 0.4 * (lp - task.ref_logprobs)
    want = mu * (R - (mu * R).sum(1, keepdims=True))
    got = copg.copg_gradient(th, task.ref_logprobs, task.mean_reward, mu, 0.4)
    assert np.allclose(got, want, atol=1e-14)


def test_copg_reaches_the_closed_form_and_the_plain_off_policy_gradient_does_not():
    from theorylab.validations.llm_tier_b_mutations import copg_no_contrast

    res = tl.run("copg", TREE, iterations=1500, beta=0.5, behaviour="random")
    assert res.target_gap[-1] < 1e-12 < res.target_gap[0]
    with copg_no_contrast():
        biased = tl.run("copg", TREE, iterations=1500, beta=0.5, behaviour="random")
    assert biased.target_gap[-1] > 1e-2


@pytest.mark.parametrize(
    "kwargs, word",
    [(dict(beta=0), "beta"), (dict(behaviour="greedy"), "behaviour"), (dict(step=-1), "step")],
)
def test_copg_input_errors_are_one_line(kwargs, word):
    with pytest.raises(ValueError, match=word) as err:
        tl.run("copg", TREE, iterations=3, **kwargs)
    assert "\n" not in str(err.value)


# ----------------------------------------------------------------------------- OPRL
EOS = "tokentree-eos:V=3,L=3,prompts=2,reward=graded,ref=random,seed=1"


def test_oprl_dpo_gradient_against_finite_differences():
    from theorylab.algorithms.preference import oprl

    task = make(EOS)
    x = np.random.default_rng(1).standard_normal(task.ref_cond.shape)
    _, g = oprl.dpo_loss(task, x, 0.7)
    h, fd = 1e-6, np.zeros_like(x)
    for idx in np.ndindex(x.shape):
        e = np.zeros_like(x)
        e[idx] = h
        fd[idx] = (oprl.dpo_loss(task, x + e, 0.7)[0] - oprl.dpo_loss(task, x - e, 0.7)[0]) / 2 / h
    assert np.allclose(g, fd, atol=1e-8)


def test_oprl_fit_is_the_soft_optimum_and_step_rewards_telescope():
    """The fit against soft VI; the step rewards along a response written out by hand."""
    from theorylab.algorithms.preference import oprl

    task = make(EOS)
    fit, _ = oprl.fit_dpo(task, 0.5)
    q, star = task.soft_q(0.5)
    assert np.abs(fit - star.cond_logp).max() < 1e-10
    r = oprl.step_rewards(task, fit, 0.5)
    y = int(np.argmax(task.token_mask.sum(1)))  # a longest response
    steps = [r[:, task.token_nodes[y, t], task.tokens[y, t]] for t in range(task.L)
             if task.token_mask[y, t]]  # fmt: skip
    log_z = star.log_z  # (P,) R(y) - sum of steps = beta log Z = V*(root)
    assert np.allclose(task.mean_reward[:, y] - np.sum(steps, 0), 0.5 * log_z, atol=1e-10)


def test_oprl_no_reference_mutation_changes_the_soft_vi_policy():
    from theorylab.algorithms.preference import oprl
    from theorylab.validations.llm_tier_b_mutations import oprl_no_reference

    task = make(EOS)
    fit, _ = oprl.fit_dpo(task, 0.5)
    zero = np.zeros_like(task.mean_reward)
    with oprl_no_reference():
        r = oprl.step_rewards(task, fit, 0.5)
    moved = oprl.edge_soft_vi(task, r, zero, 0.5)[1] - task.soft_q(0.5)[1].cond_logp
    assert np.abs(moved).max() > 0.1


def test_oprl_runs_and_input_errors_are_one_line():
    res = tl.run("oprl", EOS, iterations=100, beta=0.5)
    assert res.target_gap[-1] < 1e-12 < res.target_gap[0]
    with pytest.raises(ValueError, match="beta") as err:
        tl.run("oprl", EOS, iterations=3, beta=-1)
    assert "\n" not in str(err.value)
    with pytest.raises(ValueError, match="token-tree") as err:
        tl.run("oprl", "random:S=3,A=2", iterations=3)
    assert "\n" not in str(err.value)


# ----------------------------------------------------------------------------- Clip / Delta
def test_refine_formulas_written_out():
    from theorylab.algorithms.policy_optimization.reward_refinement import refine

    p = np.array([0.9, 0.3, 0.7, 0.6])
    assert np.allclose(refine(p, "raw"), p)
    assert np.allclose(refine(p, "clip", 0.5), [0.0, -0.2, 0.0, 0.0])
    assert np.allclose(refine(p, "delta"), [0.6, -0.4, 0.1, 0.6])
    assert refine(p, "delta").sum() == pytest.approx(0.9)  # telescopes to p_0


def test_enumeration_counts_and_matches_backward_induction():
    from theorylab.algorithms.policy_optimization import reward_refinement as rr
    from theorylab.runners.problems import resolve_mdp

    task = resolve_mdp("reasoning-steps:H=1,T=2,seed=4")
    # T = 2, H = 1: A; V A; V V (truncated); R A; R V; R R (V = advance, R = repeat)
    assert len(rr.enumerate_trajectories(task)) == 6
    task = resolve_mdp("reasoning-steps:H=2,T=7,seed=4")
    for mode in ("raw", "clip"):
        ret, _, _ = rr.trajectory_returns(task, mode, 0.5)
        assert ret.max() == pytest.approx(rr.markov_optimum(task, mode, 0.5), abs=1e-12)
    assert rr.trajectory_returns(task, "delta")[0].max() == pytest.approx(rr.delta_optimum(task))


def test_raw_loops_clip_does_not_through_tl_run():
    spec = "reasoning-steps:H=2,T=8,seed=2"
    raw = tl.run("reward-refinement", spec, iterations=8, mode="raw")
    clip = tl.run("reward-refinement", spec, iterations=8, mode="clip")
    assert raw.entropy[-1] == 8 and raw.regularised[-1] > 3
    assert clip.regularised[-1] <= 1.0 and clip.objective[-1] == 1 and clip.entropy[-1] < 8


@pytest.mark.parametrize(
    "kwargs, word",
    [(dict(mode="cap"), "mode"), (dict(eta=-1), "eta"), (dict(iterations=20), "iterations")],
)
def test_reward_refinement_input_errors_are_one_line(kwargs, word):
    kw = {"iterations": 4, **kwargs}
    with pytest.raises(ValueError, match=word) as err:
        tl.run("reward-refinement", "reasoning-steps:H=2,T=8", **kw)
    assert "\n" not in str(err.value)
    with pytest.raises(ValueError, match="H >= 1") as err:
        tl.run("reward-refinement", "reasoning-steps:H=0,T=8", iterations=3)


# ----------------------------------------------------------------------------- RAPO
def test_forward_kl_off_support_kkt_written_out():
    """ref (0.5, 0.5, 0) and rewards (0, 0, 1): lambda = 1, pi = (beta/2, beta/2, 1 - beta)."""
    from theorylab.algorithms.planning.divergence_optima import forward_kl_optimum

    with np.errstate(divide="ignore"):
        ref = np.log(np.array([[0.5, 0.5, 0.0]]))
    r = np.array([[0.0, 0.0, 1.0]])
    got = np.exp(forward_kl_optimum(ref, r, 0.3, off_support=True))
    assert np.allclose(got, [[0.15, 0.15, 0.7]], atol=1e-12)
    assert np.exp(forward_kl_optimum(ref, r, 0.3))[0, 2] == 0.0  # confined: the old behaviour
    assert np.allclose(np.exp(forward_kl_optimum(ref, r, 1.5, off_support=True)), [[0.5, 0.5, 0]])


def test_rapo_reaches_its_optimum_and_beats_the_reverse_kl():
    spec = "answer-bandit:P=6,A=8,correct=2,seed=1"
    fwd = tl.run("rapo", spec, iterations=300, beta=0.5)
    rev = tl.run("rapo", spec, iterations=300, beta=0.5, divergence="reverse")
    assert fwd.target_gap[-1] < 1e-12 and rev.target_gap[-1] < 1e-12
    assert fwd.objective[-1] > rev.objective[-1] + 0.1


@pytest.mark.parametrize(
    "kwargs, word",
    [(dict(beta=0), "beta"), (dict(unsolvable=6), "unsolvable"), (dict(divergence="js"),
     "divergence"), (dict(tau=-1), "tau")],
)  # fmt: skip
def test_rapo_input_errors_are_one_line(kwargs, word):
    with pytest.raises(ValueError, match=word) as err:
        tl.run("rapo", "answer-bandit:P=6,A=8,correct=2", iterations=3, **kwargs)
    assert "\n" not in str(err.value)


# ----------------------------------------------------------------------------- RL-PLUS
def test_mis_weights_written_out_and_unbiased_by_enumeration():
    from theorylab.algorithms.policy_optimization import rl_plus

    pi = np.array([[0.5, 0.3, 0.2]])
    mu = np.array([[0.1, 0.1, 0.8]])
    w = rl_plus.mis_weights(pi, mu, 2, 1)
    assert np.allclose(w, [[0.5 / (1.1 / 3), 0.3 / (0.7 / 3), 0.2 / (1.2 / 3)]])
    f = np.array([[1.0, -2.0, 4.0]])
    # the batch mean by hand: 2 draws from pi, 1 from mu, each weighted pi / m
    by_hand = (2 * (pi * w * f).sum() + (mu * w * f).sum()) / 3
    assert by_hand == pytest.approx((pi * f).sum(), abs=1e-14)
    assert rl_plus.mis_expectation(pi, mu, 2, 1, f)[0] == pytest.approx((pi * f).sum())


def test_rl_plus_runs_and_input_errors_are_one_line():
    res = tl.run("rl-plus", "answer-bandit:P=4,A=5,rare=2,seed=1", iterations=5, learners=2)
    assert res.objective.shape == (6,) and np.isfinite(res.regularised).all()
    for kwargs, word in ((dict(mode="sft"), "mode"), (dict(external=0), "external"),
                         (dict(gamma=-1), "gamma")):  # fmt: skip
        with pytest.raises(ValueError, match=word) as err:
            tl.run("rl-plus", "answer-bandit:P=4,A=5", iterations=3, **kwargs)
        assert "\n" not in str(err.value)


# ----------------------------------------------------------------------------- online VPO
def test_vpo_online_round_lifts_an_uncompared_response():
    """Responses 0, 1 compared, response 2 never: its coordinate is concave, so the global round
    solution sets it to +R when the value term pays, where the warm start's local solve does not."""
    from theorylab.algorithms.preference import vpo, vpo_online

    ref = np.array([0.5 - 5e-6, 0.5 - 5e-6, 1e-5])
    wins = np.array([[0.0, 0.6, 0.0], [0.4, 0.0, 0.0], [0.0, 0.0, 0.0]])
    beta, alpha, R = 0.25, 0.01, 5.0
    r0 = np.array([0.0, 0.0, -5.0])
    glob = vpo_online.round_solution(ref, wins, beta, alpha, R, r0)
    loc = vpo.regularised_rewards(ref, ref, wins, beta, alpha, R, +1, r0)
    f = lambda x: vpo.regularised_objective(x, ref, ref, wins, beta, alpha, +1)[0]  # noqa: E731
    assert glob[2] == pytest.approx(R) and loc[2] == pytest.approx(-R)
    assert f(glob) < f(loc)


def test_vpo_online_explores_where_online_dpo_stalls():
    spec = "gshf-coverage:S=1,eps=0.00001,gap=4,eta=0.25"
    vpo_ = tl.run("vpo-online", spec, dataset_size=400, seeds=2, alpha=0.01)
    dpo = tl.run("vpo-online", spec, dataset_size=400, seeds=2, alpha=0.0)
    assert vpo_.values.max() < 0.05 and dpo.values.min() > 0.5


def test_vpo_online_input_errors_are_one_line():
    spec = "gshf-coverage:S=1,eps=0.00001,gap=4,eta=0.25"
    for kwargs, word in ((dict(alpha=-1.0), "alpha"), (dict(batch=0), "batch"),
                         (dict(R=0.0), "R")):  # fmt: skip
        with pytest.raises(ValueError, match=word) as err:
            tl.run("vpo-online", spec, dataset_size=40, seeds=1, **kwargs)
        assert "\n" not in str(err.value)
