"""Online risk-sensitive agents: cvar-ucbvi, icvar-rm, maxwp.

Checks: the planners inside the agents reduce to the exact planners on the true model with the
bonus switched off; optimism on every episode for the test seeds (ICVaR-RM with the paper's bonus,
MaxWP surely, CVaR-UCBVI empirically); seed i alone == seed i in a batch; exact regret by hand;
regret that stops growing over a short run.
"""

from __future__ import annotations

import functools

import numpy as np
import pytest

import theorylab as tl
from theorylab.algorithms.online.cvar_ucbvi import CVaRUCBVI
from theorylab.algorithms.online.icvar_rm import ICVaRRM
from theorylab.algorithms.risk import (
    AugmentedPolicy,
    IteratedCVaR,
    StaticCVaR,
    iterated_cvar_planning,
    static_cvar_planning,
)
from theorylab.experiment import env_spec
from theorylab.mdps import TabularMDP, make

LOWER_BOUND = "icvar-lower-bound:n=2,alpha=0.25,eta=0.1,A=2,H=5"
SAFE_RISKY = "cvar-safe-risky:H=3,p_bad=0.4"


def _feed_true_model(counts_n, counts_next, P, scale=2520):
    """Set counts so that P_hat == P exactly (the denominators of P divide 2520 = lcm(1..10))."""
    counts_next[...] = np.rint(P * scale).astype(np.int64)
    counts_n[...] = counts_next.sum(-1)
    assert np.array_equal(counts_next / counts_n[..., None], P)


# --------------------------------------------------------------------------- exact reductions
@pytest.mark.parametrize("spec,alpha", [(LOWER_BOUND, 0.25), (SAFE_RISKY, 0.5), (SAFE_RISKY, 1.0)])
def test_icvar_rm_without_bonus_on_the_true_model_is_exact_dp(spec, alpha):
    mdp = make(spec)
    agent = ICVaRRM(env_spec(mdp), 2, None, alpha=alpha, bonus_scale=0.0)
    _feed_true_model(agent.counts.n, agent.counts.n_next, np.broadcast_to(mdp.P, (2, *mdp.P.shape)))
    sol = iterated_cvar_planning(mdp, alpha)
    np.testing.assert_allclose(agent.value_estimate(), sol.value, atol=1e-12)
    np.testing.assert_array_equal(
        agent.policy(), np.broadcast_to(sol.policy, (2, *sol.policy.shape))
    )


@pytest.mark.parametrize("spec,tau", [(SAFE_RISKY, 0.25), (LOWER_BOUND, 0.3), (SAFE_RISKY, 1.0)])
def test_cvar_ucbvi_without_bonus_on_the_true_model_is_exact_planning(spec, tau):
    mdp = make(spec)
    agent = CVaRUCBVI(env_spec(mdp), 2, None, tau=tau, bonus_scale=0.0)
    _feed_true_model(agent.n[:, 0], agent.n_next[:, 0], np.broadcast_to(mdp.P, (2, *mdp.P.shape)))
    sol = static_cvar_planning(mdp, tau)
    np.testing.assert_allclose(agent.value_estimate(), sol.value, atol=1e-12)
    pol = agent.policy()
    np.testing.assert_array_equal(pol.initial_budget, [sol.policy.initial_budget] * 2)
    np.testing.assert_array_equal(pol.actions[0], sol.policy.actions)
    np.testing.assert_allclose(StaticCVaR(tau).policy_values(mdp, pol), sol.value, atol=1e-12)


def test_cvar_ucbvi_stage_dependent_counts_per_stage():
    rng = np.random.default_rng(4)
    H, S, A = 3, 3, 2
    W = rng.integers(1, 4, size=(H, S, A, S)).astype(float)
    mdp = TabularMDP(W / W.sum(-1, keepdims=True), rng.integers(0, 3, (H, S, A)) / 2, horizon=H)
    agent = CVaRUCBVI(env_spec(mdp), 1, None, tau=0.4, bonus_scale=0.0)
    assert agent.n.shape == (1, H, S, A)
    _feed_true_model(agent.n[0], agent.n_next[0], mdp.P)
    sol = static_cvar_planning(mdp, 0.4)
    np.testing.assert_allclose(agent.value_estimate(), sol.value, atol=1e-12)
    traj = StaticCVaR(0.4).rollout(mdp, agent.policy(), [np.random.default_rng(0)])
    before = agent.n.copy()
    agent.update(traj)
    assert (agent.n - before)[0, np.arange(H), traj.states[0], traj.actions[0]].tolist() == [1] * H


def test_exact_regret_by_hand():
    """cvar-safe-risky (p_bad = 0.4, H = 3): SAFE pays 1 for sure; RISKY pays 2 w.p. 0.6, else 0.
    CVaR_0.25(RISKY) = 0, iterated CVaR_0.5(RISKY) = (0.4 * 0 + 0.1 * 2) / 0.5 = 0.4."""
    mdp = make(SAFE_RISKY)
    risky = np.zeros((1, 3, 4), np.int64)
    static = StaticCVaR(0.25)
    assert static.optimal_value(mdp) == pytest.approx(1.0)
    assert static.policy_values(mdp, risky)[0] == pytest.approx(0.0, abs=1e-12)
    iterated = IteratedCVaR(0.5)
    assert iterated.optimal_value(mdp) == pytest.approx(1.0)
    assert iterated.policy_values(mdp, risky)[0] == pytest.approx(0.4, abs=1e-12)


# --------------------------------------------------------------------------- optimism
def test_icvar_rm_is_optimistic_on_every_episode():
    """Du et al.'s good event: Vbar^k_1(s_1) >= V*_1(s_1) (paper bonus, delta = 0.1), 8 seeds.
    Without the bonus the same run is not optimistic, so the check has teeth."""
    for spec, alpha in ((LOWER_BOUND, 0.25), (SAFE_RISKY, 0.5)):
        res = tl.run("icvar-rm", spec, episodes=150, seeds=8, alpha=alpha, delta=0.1)
        assert res.config["objective"] == f"iterated CVaR (alpha={alpha:g})"
        assert np.all(res.value_estimates >= res.optimal_value - 1e-12)
        assert np.all(res.regret >= -1e-12)
    bare = tl.run("icvar-rm", LOWER_BOUND, episodes=150, seeds=8, alpha=0.25, bonus_scale=0.0)
    assert np.any(bare.value_estimates < bare.optimal_value - 1e-6)


def test_maxwp_is_optimistic_surely_and_its_regret_stops():
    res = tl.run("maxwp", LOWER_BOUND, episodes=120, seeds=8)
    assert np.all(res.value_estimates >= res.optimal_value - 1e-12)
    assert np.all(res.regret >= -1e-12)
    # constant regret (Theorem 4): no regret at all in the second half for any seed
    assert np.all(res.regret[:, 60:] == 0.0)


@pytest.mark.parametrize("bonus", ["bernstein", "hoeffding"])
def test_cvar_ucbvi_is_optimistic_on_every_episode(bonus):
    """max_b { b - mu0 . Ulo_1(., b) / tau } >= CVaR*_tau on every episode (bonus_scale = 1), on an
    instance whose CVaR* depends on estimated probabilities; without the bonus it fails."""
    spec = "icvar-lower-bound:n=2,alpha=0.25,eta=0.1,A=2,H=4"
    res = tl.run("cvar-ucbvi", spec, episodes=120, seeds=6, tau=0.3, bonus=bonus)
    assert res.config["objective"] == "static CVaR (tau=0.3)"
    assert np.all(res.value_estimates >= res.optimal_value - 1e-12)
    assert np.all(res.regret >= -1e-12)
    bare = tl.run("cvar-ucbvi", spec, episodes=120, seeds=6, tau=0.3, bonus=bonus, bonus_scale=0.0)
    assert np.any(bare.value_estimates < bare.optimal_value - 1e-6)


# --------------------------------------------------------------------------- seeds
@pytest.mark.parametrize(
    "algo,spec,params",
    [
        ("icvar-rm", LOWER_BOUND, {"alpha": 0.25, "bonus_scale": 0.05}),
        ("maxwp", LOWER_BOUND, {}),
        ("cvar-ucbvi", SAFE_RISKY, {"tau": 0.25, "bonus_scale": 0.1}),
        (
            "cvar-ucbvi",
            "cvar-safe-risky:H=3,reward_model=bernoulli",
            {"tau": 0.5, "reward_model": "bernoulli", "bonus_scale": 0.1},
        ),
    ],
)
def test_seed_alone_equals_seed_in_a_batch(algo, spec, params):
    batch = tl.run(algo, spec, episodes=40, seeds=[0, 1, 2, 3], seed=5, **params)
    alone = tl.run(algo, spec, episodes=40, seeds=[2], seed=5, **params)
    for name in ("regret", "returns", "value_estimates"):
        np.testing.assert_array_equal(getattr(batch, name)[2:3], getattr(alone, name))


def test_cvar_ucbvi_takes_the_reward_model_from_the_env_and_rejects_a_mismatch():
    spec = "cvar-safe-risky:reward_model=bernoulli"
    res = tl.run("cvar-ucbvi", spec, episodes=2, tau=0.5)  # EnvSpec.reward_model = "bernoulli"
    assert np.isfinite(res.regret).all()
    with pytest.raises(tl.InvalidPolicyError, match="reward_model"):
        tl.run("cvar-ucbvi", spec, episodes=2, tau=0.5, reward_model="deterministic")


# ------------------------------------------------------------------------ regret over a short run
def test_icvar_rm_regret_stops_growing():
    """bonus_scale < 1 (a demonstration knob, outside Theorem 1) so that learning is visible in
    a few hundred episodes; the paper's bonus keeps Qbar at its cap H for thousands of visits."""
    res = tl.run("icvar-rm", SAFE_RISKY, episodes=400, seeds=4, alpha=0.5, bonus_scale=0.03)
    first, second = res.regret[:, :200].sum(), res.regret[:, 200:].sum()
    assert first > 1.0  # it did explore the risky action
    assert second <= 0.1 * first  # sublinear: the second half adds < 10% of the first half


def test_cvar_ucbvi_regret_stops_growing():
    res = tl.run(
        "cvar-ucbvi", "cvar-safe-risky:H=3", episodes=400, seeds=4, tau=0.25, bonus_scale=0.05
    )
    quarters = res.regret.reshape(4, 4, 100).sum(axis=(0, 2))
    assert quarters[0] > 10.0
    assert quarters[3] <= 0.05 * quarters[0]  # the CVaR-optimal SAFE action is found


def test_augmented_policy_is_what_cvar_ucbvi_plays():
    mdp = make("cvar-safe-risky:H=3")
    agent = CVaRUCBVI(env_spec(mdp), 3, None, tau=0.25)
    pol = agent.policy()
    assert isinstance(pol, AugmentedPolicy) and pol.actions.shape[:3] == (3, 3, 4)
    traj = StaticCVaR(0.25).rollout(mdp, pol, [np.random.default_rng(i) for i in range(3)])
    assert traj.budgets.shape == (3, 4) and np.all(np.diff(traj.budgets, axis=1) <= 0)
    agent.update(traj)
    assert agent.n.sum() == 3 * 3


def test_objectives_follow_the_registration_parameters():
    """The yardstick is built from the registration and the run's parameters, not read from the
    agent (issue 13)."""
    from theorylab.algorithms.objectives import objective_of
    from theorylab.algorithms.registry import get_algorithm

    mdp = make(SAFE_RISKY)
    a = objective_of(get_algorithm("icvar-rm"), {"alpha": 0.3})
    assert a.alpha == 0.3 and a.name == "iterated CVaR (alpha=0.3)"
    assert objective_of(get_algorithm("icvar-rm"), {}).alpha == 0.2  # the default alpha
    assert objective_of(get_algorithm("maxwp"), {}).name == "worst path (alpha -> 0)"
    assert objective_of(get_algorithm("cvar-ucbvi"), {"tau": 0.4}).tau == 0.4
    res = tl.run("icvar-rm", SAFE_RISKY, episodes=1, alpha=0.3)
    assert res.config["objective"] == "iterated CVaR (alpha=0.3)"
    with pytest.raises(ValueError, match="maxwp"):
        ICVaRRM(env_spec(mdp), 1, None, alpha=0.0)


class FlatteringObjective:
    """What a dishonest (or buggy) agent might carry: every policy is optimal."""

    name = "flattering"

    def __init__(self, inner):
        self.inner = inner

    def optimal_value(self, mdp) -> float:
        return self.inner.optimal_value(mdp)

    def policy_values(self, mdp, policies):
        return np.full(len(np.atleast_1d(self.inner.policy_values(mdp, policies))), 0.0) + (
            self.inner.optimal_value(mdp)
        )

    def rollout(self, mdp, policies, rngs):
        return self.inner.rollout(mdp, policies, rngs)


@pytest.mark.parametrize("name, yardstick", [("cvar-ucbvi", "static"), ("icvar-rm", "iterated")])
def test_risk_regret_does_not_read_the_agents_objective(monkeypatch, name, yardstick):
    """Issue 13 item 5: run() took the yardstick from ``agent.objective``, so an agent carrying a
    flattering objective scored zero regret. Now the registration's objective (the exact
    planner of StaticCVaR / IteratedCVaR at the run's tau / alpha) scores it."""
    cls = CVaRUCBVI if name == "cvar-ucbvi" else ICVaRRM
    true = StaticCVaR(0.25) if yardstick == "static" else IteratedCVaR(0.2)
    original = cls.__init__

    @functools.wraps(original)  # the same signature, so the parameters still resolve
    def init(self, *args, **kwargs):
        original(self, *args, **kwargs)
        self.objective = FlatteringObjective(true)

    monkeypatch.setattr(cls, "__init__", init)
    res = tl.run(name, SAFE_RISKY, episodes=30, seeds=2)
    assert res.config["objective"] == true.name
    mdp = make(SAFE_RISKY)
    assert res.optimal_value == pytest.approx(true.optimal_value(mdp), abs=1e-12)
    assert res.regret.max() > 1e-3  # a flattering yardstick would report 0 everywhere
