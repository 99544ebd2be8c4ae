"""Action grouping (seed row 001#8): the pooled group model written out, the cluster structure,
the ungrouped plug-in on the exact model, input errors, the claim and its control."""

from __future__ import annotations

import numpy as np
import pytest

from theorylab.algorithms.offline import action_grouping as ag
from theorylab.algorithms.planning.lp import discounted_lp


def _mdp(seed: int = 0):
    return ag.clustered_mdp(np.random.default_rng(seed), 5, (2, 3), (0.4, 0.1), 0.9)


def test_group_model_is_the_pooled_empirical_model_written_out():
    mdp = _mdp()
    counts, rewards = ag.sample_counts(mdp, 7, np.random.default_rng(1))
    labels = np.array([0, 0, 1, 2, 1, 2])
    P_hat, r_hat = ag.group_model(counts, rewards, labels)
    S = mdp.S
    for s in range(S):
        for k in range(3):
            members = [a for a in range(6) if labels[a] == k]
            n = sum(counts[s, a] for a in members)  # (S,)
            assert np.allclose(P_hat[s, k], n / (7 * len(members)))
            assert np.isclose(r_hat[s, k], sum(rewards[s, a] for a in members) / (7 * len(members)))
    assert counts.sum(-1).min() == counts.sum(-1).max() == 7


def test_nested_groups_are_contiguous_blocks_written_out():
    for A, g in ((8, 1), (8, 2), (8, 4), (8, 8), (6, 3)):
        want = [a // (A // g) for a in range(A)]  # g blocks of A // g consecutive actions
        assert ag.nested_groups(A, g).tolist() == want


def test_clusters_differ_by_at_most_the_lower_levels_weights():
    mdp = _mdp(3)
    P, R = mdp.P, mdp.R  # (S, A, S), (S, A)
    tv = 0.5 * np.abs(P[:, :, None] - P[:, None]).sum(-1).max(0)  # (A, A)
    same = np.arange(6)[:, None] // 3 == np.arange(6)[None] // 3  # same level-1 node
    assert tv[same].max() <= 0.1 + 1e-12  # only the level-2 component (weight 0.1) differs
    assert tv[~same].max() <= 0.5 + 1e-12
    assert tv[~same].max() > 0.1  # the level-1 component does differ across clusters
    assert np.abs(R[:, :, None] - R[:, None]).max(0)[same].max() <= 0.1 + 1e-12


def test_ungrouped_plugin_on_the_exact_model_is_optimal_and_one_group_plays_action_zero():
    mdp = _mdp(2)
    N = 1000
    counts = mdp.P * N  # the exact model as "counts": the plug-in is the true MDP
    rewards = mdp.R * N
    V_star = discounted_lp(mdp).V  # independent of the value iteration the learner uses
    pi = ag.grouped_plugin_policy(counts, rewards, ag.nested_groups(6, 6), 0.9)
    assert ag.suboptimality(mdp, pi, V_star) == pytest.approx(0.0, abs=1e-8)
    one = ag.grouped_plugin_policy(counts, rewards, ag.nested_groups(6, 1), 0.9)
    assert np.array_equal(one, np.zeros(mdp.S, dtype=one.dtype))


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: ag.nested_groups(6, 4), "groups=4"),
        (lambda: ag.nested_groups(6, 0), "groups=0"),
        (lambda: ag.sample_counts(_mdp(), 0, np.random.default_rng(0)), "N=0"),
        (
            lambda: ag.clustered_mdp(np.random.default_rng(0), 3, (2, 2), (0.6, 0.5), 0.9),
            "weights",
        ),
    ],
)
def test_input_errors_name_the_value(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_claim_passes_quick_and_its_control_fails():
    from theorylab.validations import validate

    rep = validate("action-grouping-tradeoff", "quick")
    assert rep.verdict == "PASS", [c.detail for c in rep.checks]
    assert [c["verdict"] for c in rep.controls] == ["FAIL"]
    assert "loss-u-shaped-in-groups" in rep.controls[0]["failed_checks"]
