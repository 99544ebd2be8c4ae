"""Inverse RL with expert-state resets (000#43): the kind, the algorithm against independent
answers (backward induction, vertex enumeration, the closed form), input errors, the claim and
its controls."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import theorylab as tl
from theorylab.algorithms.inverse_rl.expert_resets import fit_irl_expert_resets, reward_step
from theorylab.algorithms.offline.coverage import occupancy
from theorylab.algorithms.planning import backward_induction
from theorylab.mdps import TabularMDP, make
from theorylab.results import Result
from theorylab.runners.irl import irl_scores
from theorylab.validations.claims.inverse_rl import (
    IRLExpertResetsHorizon,
    best_response_error,
    round_open_probabilities,
)
from theorylab.validations.controls import get_control
from theorylab.validations.mutations import MUTATIONS  # noqa: F401  (registers the controls)

LOCK = "combination-lock:H=4,A=2,code_seed=3"


def demos(mdp, B: int, N: int = 3, seed: int = 0):
    pi_E = backward_induction(mdp).policy
    rngs = [np.random.default_rng([seed, i, 1]) for i in range(B)]
    runs = [mdp.rollout(pi_E, rng=rngs) for _ in range(N)]
    return pi_E, (np.stack([r.states for r in runs], 1), np.stack([r.actions for r in runs], 1))


def fit(mdp, B: int = 4, T: int = 6, seed: int = 0, **params):
    pi_E, expert = demos(mdp, B, seed=seed)
    rngs = [np.random.default_rng([seed, i]) for i in range(B)]
    return pi_E, fit_irl_expert_resets(mdp, expert, T, rngs, **params)


def test_registered_with_its_paper_and_runs_through_tl_run(tmp_path):
    from theorylab.algorithms.registry import get_algorithm

    entry = get_algorithm("irl-expert-resets")
    assert entry.kind == "irl" and entry.papers == ("000#43",)
    res = tl.run("irl-expert-resets", LOCK, rounds=8, seeds=3, samples=8, demos=2)
    assert res.moment_gap.shape == res.value_gap.shape == res.inner_samples.shape == (3, 8)
    assert res.expert_value == 1.0 and res.config["resets"] == "expert"
    # expert resets, n = 8, H = 4: each round's PSDP costs n (H + (H-1) + ... + 1) transitions
    assert np.all(res.inner_samples == 8 * (4 + 3 + 2 + 1))
    res.save(tmp_path / "irl")
    back = Result.load(tmp_path / "irl")
    assert np.array_equal(back.moment_gap, res.moment_gap) and back.summary() == res.summary()


def test_start_resets_pay_for_their_roll_ins():
    _, out = fit(make(LOCK), samples=5, resets="start")
    assert np.all(out.inner_samples == 5 * 4 * 4)  # every sample runs all H steps


def test_the_learner_never_reads_the_reward():
    mdp = make("random:S=5,A=3,H=4,seed=7")
    blank = TabularMDP.from_arrays(mdp.dense_P(), np.zeros((5, 3)), mdp.mu0, horizon=4)
    _, expert = demos(mdp, 3)
    outs = [
        fit_irl_expert_resets(m, expert, 5, [np.random.default_rng(i) for i in range(3)])
        for m in (mdp, blank)
    ]
    assert np.array_equal(outs[0].policies, outs[1].policies)
    assert np.array_equal(outs[0].rewards, outs[1].rewards)


def test_a_seed_alone_draws_what_it_draws_in_a_batch():
    mdp = make(LOCK)
    pi_E, expert = demos(mdp, 3)
    rngs = lambda idx: [np.random.default_rng([5, i]) for i in idx]  # noqa: E731
    both = fit_irl_expert_resets(mdp, expert, 4, rngs([0, 1, 2]), resets="start", samples=6)
    one = fit_irl_expert_resets(mdp, tuple(x[1:2] for x in expert), 4, rngs([1]),
                                resets="start", samples=6)  # fmt: skip
    assert np.array_equal(both.policies[1], one.policies[0])


def test_reward_step_is_the_projected_gradient_step_written_out():
    rng = np.random.default_rng(0)
    f, g = rng.uniform(-1, 1, (2, 3, 2)), rng.normal(size=(2, 3, 2))
    want = np.minimum(1.0, np.maximum(-1.0, f + 0.7 * g))
    assert np.array_equal(reward_step(f, g, 0.7), want)


def test_moment_gap_is_the_supremum_over_the_box_by_vertex_enumeration():
    mdp = make("random:S=2,A=2,H=3,seed=4")
    pi_E, out = fit(mdp, B=2, T=3, resets="start", samples=4)
    sc = irl_scores(mdp, pi_E, out.policies, out.moment_mask)  # final step: d = S A = 4
    d_E = occupancy(mdp, pi_E)[-1].ravel()
    for b in range(2):
        mix = np.mean([occupancy(mdp, out.policies[b, t])[-1].ravel() for t in range(3)], 0)
        best = max(np.dot(v, d_E - mix) for v in itertools.product((-1.0, 1.0), repeat=4))
        assert sc["moment_gap"][b, -1] == pytest.approx(best, abs=1e-12)


def test_psdp_from_start_roll_ins_is_a_best_response_on_a_connected_mdp():
    mdp = make("random:S=4,A=2,H=3,seed=2")
    _, out = fit(mdp, B=2, T=4, resets="start", samples=3000, moments="all")
    errors = [best_response_error(mdp, out.rewards[b, t], out.policies[b, t])
              for b in range(2) for t in range(4)]  # fmt: skip
    assert max(errors) <= 0.05, errors


def test_round_successes_follow_the_closed_form():
    # H = 3, A = 2, n = 4: p = prod_h [1 - (1 - v_h/A)^n + (1 - v_h)^n / A], written out here
    H, A, n, T, B = 3, 2, 4, 6, 150
    p_start = np.prod([1 - (1 - 2.0**-h / A) ** n + (1 - 2.0**-h) ** n / A for h in range(H)])
    p_expert = (1 - (1 - 1 / A) ** n) ** H
    mdp = make(f"combination-lock:H={H},A={A},code_seed=1")
    for resets, p in (("start", p_start), ("expert", p_expert)):
        probs = round_open_probabilities(H, A, n, resets, T)
        u = float(A) ** (-H * (T - 1))  # f_T still 0: every earlier round opened the lock
        assert probs[-1] == pytest.approx(u * A**-H + (1 - u) * p, rel=1e-12)
        pi_E, out = fit(mdp, B=B, T=T, resets=resets, samples=n)
        wins = (irl_scores(mdp, pi_E, out.policies, out.moment_mask)["round_value_gap"] == 0).sum()
        sd = np.sqrt(B * (probs * (1 - probs)).sum())
        assert abs(wins - B * probs.sum()) <= 4 * sd, (resets, wins, B * probs.sum(), sd)


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"resets": "bogus"}, "resets must be one of expert, start, got 'bogus'"),
        ({"samples": 0}, "samples must be an integer >= 1, got 0"),
        ({"moment_rollouts": 1.5}, "moment_rollouts must be an integer >= 1, got 1.5"),
        ({"eta": -1.0}, "eta must be a finite step > 0, got -1.0"),
        ({"moments": "some"}, "moments must be one of final, all, got 'some'"),
    ],
)
def test_bad_parameters_are_one_line_errors(params, message):
    with pytest.raises(ValueError) as err:
        tl.run("irl-expert-resets", LOCK, rounds=2, seeds=1, **params)
    assert message in str(err.value) and "\n" not in str(err.value)


@pytest.mark.parametrize(
    ("problem", "budget", "message"),
    [
        (LOCK, {"rounds": 0}, "rounds must be a positive integer, got 0"),
        (LOCK, {"rounds": 2, "demos": 0}, "demos must be a positive integer, got 0"),
        ("pointer-chase:d=16,H=8", {"rounds": 2}, "irl-expert-resets is an IRL algorithm and "
         "needs a tabular model (e.g. combination-lock:H=6,A=2,code_seed=3)"),
        (LOCK, {}, "needs a budget: rounds"),
    ],
)  # fmt: skip
def test_bad_budgets_and_problems_are_one_line_errors(problem, budget, message):
    with pytest.raises(ValueError) as err:
        tl.run("irl-expert-resets", problem, seeds=1, **budget)
    assert message in str(err.value) and "\n" not in str(err.value)


def test_a_discounted_model_is_refused():
    with pytest.raises(ValueError, match="undiscounted"):
        tl.run("irl-expert-resets", "riverswim:S=4,gamma=0.9", rounds=2, seeds=1)


TINY = IRLExpertResetsHorizon(scales={"tiny": {"Hs": (3, 4, 5), "seeds": 10, "A": 2, "T": 16}})


def test_claim_passes_on_a_tiny_scale():
    rep = TINY.run("tiny")
    assert rep.passed, [c.detail for c in rep.checks]


@pytest.mark.parametrize(
    ("control", "check"),
    [
        ("irl-resets-from-start", "expert resets: inner-loop transitions polynomial in H"),
        ("irl-frozen-reward-player", "expert resets: the moment gap -> 0"),
    ],
)
def test_controls_fail_the_claim(control, check):
    with get_control(control).applied(TINY):
        rep = TINY.run("tiny")
    assert not rep.passed
    failed = next(c for c in rep.checks if c.name.startswith(check))
    assert not failed.passed, failed.detail
