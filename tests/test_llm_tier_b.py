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
