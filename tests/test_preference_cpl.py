"""CPL (seed row 002-004#E10): the contrastive loss's gradient against finite differences, the
regret model's score = alpha log pi*, consistency through tl.run, input errors in one line."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.special import log_softmax

import theorylab as tl
from theorylab.algorithms.planning.soft_value_iteration import soft_value_iteration
from theorylab.algorithms.preference import cpl
from theorylab.algorithms.preference.ipl import preference_loss, segments
from theorylab.mdps import make
from theorylab.runners.problems import discounted_problem, resolve_mdp


def _mdp(seed=3):
    return discounted_problem(resolve_mdp(make(f"random:S=3,A=2,gamma=0.8,seed={seed}")), "cpl")


def test_regret_scores_are_the_optimal_advantage_up_to_a_constant():
    mdp = _mdp()
    sol = soft_value_iteration(mdp, 0.5)
    A = np.asarray(sol.Q) - np.asarray(sol.V)[:, None]  # the optimal advantage Q* - V*
    got = cpl.segment_scores(mdp, 0.5, "regret")
    assert np.allclose(A - got, 0.5 * np.log(mdp.A), atol=1e-9)


def test_contrastive_loss_gradient_against_finite_differences():
    mdp = _mdp(5)
    M, w = segments(mdp, 2)
    score = M @ cpl.segment_scores(mdp, 0.7, "regret").reshape(-1)

    def loss(x):
        logp = log_softmax(x.reshape(3, 2), axis=1)
        return preference_loss(0.7 * (M @ logp.reshape(-1)), score, w)[0]

    x = np.random.default_rng(0).normal(size=6)
    # the fit's analytic gradient, reconstructed through fit_cpl's objective at one point
    logp = log_softmax(x.reshape(3, 2), axis=1)
    _, g = preference_loss(0.7 * (M @ logp.reshape(-1)), score, w)
    g_logp = 0.7 * (M.T @ g).reshape(3, 2)
    analytic = (g_logp - np.exp(logp) * g_logp.sum(1, keepdims=True)).reshape(-1)
    h = 1e-6
    fd = np.array([(loss(x + h * e) - loss(x - h * e)) / (2 * h) for e in np.eye(6)])
    assert np.allclose(analytic, fd, atol=1e-8)


def test_cpl_reaches_the_soft_optimum_through_tl_run():
    res = tl.run("cpl", "random:S=3,A=2,gamma=0.9,seed=1", iterations=300, alpha=0.5)
    assert res.target_gap[-1] < 1e-10 and res.target_gap[0] > 1e-3
    biased = tl.run("cpl", "random:S=3,A=2,gamma=0.9,seed=1", iterations=300, alpha=0.5,
                    preferences="reward")  # fmt: skip
    assert biased.target_gap[-1] > 1e-4


@pytest.mark.parametrize(
    "kwargs, word",
    [(dict(alpha=0), "alpha"), (dict(segment_length=4), "segment_length"),
     (dict(preferences="votes"), "preferences")],
)  # fmt: skip
def test_input_errors_are_one_line(kwargs, word):
    with pytest.raises(ValueError, match=word) as err:
        tl.run("cpl", "random:S=3,A=2,gamma=0.9", iterations=3, **kwargs)
    assert "\n" not in str(err.value)
