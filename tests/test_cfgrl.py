"""CFGRL (000#68): diffusion guidance as a policy improvement operator, exact tabular core."""

from __future__ import annotations

import math

import numpy as np
import pytest

import theorylab as tl
import theorylab.validations.mutations  # noqa: F401  (registers the known-bug controls)
from theorylab.algorithms.offline.baselines import behaviour_cloning
from theorylab.algorithms.offline.cfgrl import (
    cfgrl,
    exact_guided_policy,
    guidance_limit,
    guided_policy,
)
from theorylab.algorithms.offline.dataset import make_dataset
from theorylab.algorithms.planning import policy_values
from theorylab.mdps import make
from theorylab.validations.claims.offline_cfgrl import (
    CfgrlGuidance,
    behaviour_policy,
    layered_values,
    model_arrays,
)
from theorylab.validations.controls import get_control

SPEC = "random:S=5,A=4,H=4,seed=3"


def test_product_is_the_printed_formula():
    # pi_w(a|s) = pi_beta(a|s) p(o=1|s,a)^w / Z with p = 1 / (1 + exp(-A / tau)), by hand
    pb = np.array([0.5, 0.3, 0.2, 0.0])
    adv = np.array([-0.2, 0.1, 0.4, 9.0])  # the last action is outside the support
    tau, w = 0.3, 2.5
    p = [1.0 / (1.0 + math.exp(-x / tau)) for x in adv]
    un = [pb[a] * p[a] ** w for a in range(4)]
    want = np.array(un) / sum(un)
    np.testing.assert_allclose(guided_policy(pb, adv, w, tau), want, rtol=1e-12, atol=0)
    assert guided_policy(pb, adv, w, tau)[3] == 0.0


def test_w_zero_is_behaviour_cloning_on_model_and_data():
    mdp = make(SPEC)
    pb = behaviour_policy(np.random.default_rng(0), 4, 5, 4)
    np.testing.assert_allclose(exact_guided_policy(mdp, pb, 0.0), pb, atol=1e-15, rtol=0)
    ds = make_dataset(mdp, 40, coverage=0.5, seeds=3)
    np.testing.assert_allclose(cfgrl(ds, w=0).policy, behaviour_cloning(ds).policy, atol=1e-15)


def test_limit_is_greedy_on_the_support():
    pb = np.array([[0.6, 0.4, 0.0], [0.2, 0.2, 0.6]])
    adv = np.array([[0.1, 0.3, 5.0], [0.5, 0.5, -1.0]])  # row 0: best action unsupported
    want = np.array([[0.0, 1.0, 0.0], [0.5, 0.5, 0.0]])  # row 1: a tie keeps pi_beta's ratio
    np.testing.assert_allclose(guidance_limit(pb, adv), want, atol=1e-15)
    np.testing.assert_allclose(guided_policy(pb, adv, 1e6, 0.1), want, atol=1e-12)


def test_improves_on_behaviour_by_an_independent_solve():
    for k in range(5):
        mdp = make(f"random:S=5,A=3,H=4,seed={k}")
        pb = behaviour_policy(np.random.default_rng(k), 4, 5, 3)
        P, R = model_arrays(mdp)
        j_beta = layered_values(P, R, pb)[0] @ mdp.mu0
        for w in (0.5, 2.0, 20.0):
            pi = exact_guided_policy(mdp, pb, w, 0.1)
            j = layered_values(P, R, pi)[0] @ mdp.mu0
            assert abs(j - float(policy_values(mdp, pi))) < 1e-10
            assert j >= j_beta - 1e-12
        assert j > j_beta + 1e-3  # not vacuous at w = 20


def test_sign_flipped_control_makes_it_worse():
    mdp = make(SPEC)
    pb = behaviour_policy(np.random.default_rng(1), 4, 5, 4)
    j_beta = float(policy_values(mdp, pb))
    with get_control("cfgrl-guidance-sign-flipped").applied(None):
        bad = exact_guided_policy(mdp, pb, 20.0)
    assert float(policy_values(mdp, bad)) < j_beta - 1e-3


def test_plug_in_value_on_population_data_is_exact():
    from theorylab.algorithms.offline.dataset import population_dataset

    mdp = make(SPEC)
    ds = population_dataset(mdp, coverage=0.5, mass=1e16, seeds=2)
    res = cfgrl(ds, w=3.0)
    np.testing.assert_allclose(res.value_estimate, policy_values(mdp, res.policy), atol=1e-9)


def test_batched_seeds_equal_seeds_alone():
    ds = make_dataset(make(SPEC), 32, coverage=0.3, seeds=3)
    batch = cfgrl(ds, w=2.0)
    for i in range(3):
        np.testing.assert_array_equal(cfgrl(ds.only(i), w=2.0).policy[0], batch.policy[i])


@pytest.mark.parametrize(
    ("kw", "match"),
    [({"w": -1.0}, "w \\(guidance weight\\) must be"), ({"w": math.inf}, "w \\(guidance"),
     ({"tau": 0.0}, "tau \\(optimality temperature\\)"), ({"w": "2"}, "w \\(guidance")],
)  # fmt: skip
def test_bad_input_is_one_line(kw, match):
    ds = make_dataset(make(SPEC), 16, coverage=0.5)
    with pytest.raises(ValueError, match=match) as err:
        cfgrl(ds, **kw)
    assert len(str(err.value).splitlines()) == 1


def test_registered_with_its_paper_and_runs_through_tl_run():
    from theorylab.algorithms.registry import get_algorithm

    entry = get_algorithm("cfgrl")
    assert entry.kind == "offline" and "000#68" in entry.papers
    res = tl.run("cfgrl", SPEC, dataset_size=[16, 32], seeds=2, coverage=0.5, w=4.0)
    assert res.suboptimality.shape == (2, 2) and np.all(res.suboptimality >= -1e-12)


def test_claim_passes_quick_and_its_control_fails_it():
    from theorylab.validations.claim import claim_verdict

    claim = CfgrlGuidance()
    assert claim_verdict(claim.run("quick").checks) == "PASS"
    with get_control("cfgrl-guidance-sign-flipped").applied(claim):
        checks = claim.run("quick").checks
    failed = {c.name.split(":")[0] for c in checks if c.status == "FAIL"}
    assert claim_verdict(checks) == "FAIL"
    assert any("Theorem 1" in n for n in failed) and any("non-decreasing" in n for n in failed)


def test_value_is_not_monotone_in_w_on_some_mdp():
    """The INFO finding of the claim, pinned: on random:S=4,A=3,H=3,seed=13 J(pi_w) drops from
    w = 4 to w = 8 (by 0.0024), while it stays above J(pi_beta) and the per-state expected
    behaviour advantage still rises (independent solve)."""
    mdp = make("random:S=4,A=3,H=3,seed=13")
    pb = behaviour_policy(np.random.default_rng(13), 3, 4, 3)
    P, R = model_arrays(mdp)
    V_b = layered_values(P, R, pb)
    adv = R + np.einsum("hsat,ht->hsa", P, V_b[1:]) - V_b[:-1, :, None]
    pis = [exact_guided_policy(mdp, pb, w, 0.1) for w in (4.0, 8.0)]
    j4, j8 = (layered_values(P, R, pi)[0] @ mdp.mu0 for pi in pis)
    assert j8 < j4 - 1e-3 and j8 > V_b[0] @ mdp.mu0
    assert np.all((pis[1] * adv).sum(-1) >= (pis[0] * adv).sum(-1) - 1e-12)
