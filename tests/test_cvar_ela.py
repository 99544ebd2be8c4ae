"""CVaR-ELA (seed row 000#40; algorithms/online/cvar_ela.py): its tau = 1 plan is risk-neutral
backward induction of its own learned model, its bonus is the elliptical width scaled by the
budget, the risk-neutral mutation loses the safe policy, and bad input is named."""

from __future__ import annotations

import math

import numpy as np
import pytest

import theorylab as tl
from theorylab.algorithms.planning.finite_horizon import backward_induction
from theorylab.algorithms.registry import make_agent
from theorylab.algorithms.risk.augmented_policy import budget_rollout
from theorylab.experiment import env_spec
from theorylab.mdps import TabularMDP, make
from theorylab.seeding import AGENT_STREAM, ENV_STREAM, generators

SPEC = "lowrank-simplex:S=6,A=2,d=2,H=3,seed=1,reward_model=bernoulli"


def _agent(mdp, tau, c, episodes=12, B=2):
    agent = make_agent(
        "cvar-ela", env_spec(mdp), B, generators(0, range(B), AGENT_STREAM), episodes=episodes,
        tau=tau, c=c, feature_class=mdp.candidates,
    )  # fmt: skip
    rngs = generators(0, range(B), ENV_STREAM)
    for _ in range(episodes):
        agent.update(budget_rollout(mdp, agent.policy().as_batch(), rngs))
    return agent


def test_tau_one_without_bonus_is_backward_induction_of_the_learned_model():
    mdp = make(SPEC)
    agent = _agent(mdp, tau=1.0, c=0.0)
    H, S, A = mdp.horizon, mdp.S, mdp.A
    R = np.broadcast_to(mdp.reward(0), (S, A)) if not mdp.stage_dependent else None
    for b in range(2):
        P = agent.P_hat[b].reshape(H, S, A, S)
        model = TabularMDP(P, np.stack([mdp.reward(h) for h in range(H)]) if R is None else R,
                           mdp.mu0, horizon=H)  # fmt: skip
        v = float(backward_induction(model).V[0] @ mdp.mu0)
        assert agent.value_estimate()[b] == pytest.approx(v, abs=1e-10)


def test_bonus_width_scale_is_c_sqrt_d_iota():
    """alpha = c sqrt(d iota), iota = log(2 d K H |Phi| / delta), written out here."""
    mdp = make(SPEC)
    agent = _agent(mdp, tau=0.5, c=0.3, episodes=2)
    d, K, H, M = 2, 2, mdp.horizon, mdp.candidates.shape[0]
    assert agent.alpha == pytest.approx(0.3 * math.sqrt(d * math.log(2 * d * K * H * M / 0.1)))


def test_risk_neutral_mutation_loses_the_safe_policy():
    from theorylab.validations.claims.risk import _cvar_ela_class
    from theorylab.validations.robust_mutations import cvar_ela_plans_risk_neutral

    spec = "cvar-safe-risky:H=2"
    cls = _cvar_ela_class(spec)
    with cvar_ela_plans_risk_neutral():
        r = tl.run("cvar-ela", spec, episodes=150, seeds=4, tau=0.25, feature_class=cls, c=0.1)
    assert float(np.asarray(r.regret)[:, -50:].mean()) >= 0.25  # RISKY: CVaR 0.2 vs SAFE 0.5


def test_cvar_ela_input_errors():
    mdp = make(SPEC)
    with pytest.raises(ValueError, match="tau"):
        tl.run("cvar-ela", SPEC, episodes=2, tau=0.0, feature_class=mdp.candidates)
    with pytest.raises(ValueError, match="cvar-ela assumes the reward distribution is known"):
        tl.run("cvar-ela", SPEC, episodes=2, known_rewards=False, feature_class=mdp.candidates)


def test_episodes_to_eps_is_one_past_the_last_episode_above_eps():
    from theorylab.validations.claims.risk import episodes_to_eps

    rng = np.random.default_rng(3)
    regret = rng.choice([0.0, 0.01, 0.5], size=(20, 30), p=[0.6, 0.2, 0.2])
    regret[0] = 0.0  # a seed that never exceeds eps
    got = episodes_to_eps(regret, 0.05)
    for b in range(20):
        above = [k for k in range(30) if regret[b, k] > 0.05]
        assert got[b] == (above[-1] + 1 if above else 0)


def test_mean_slope_ci_recovers_an_exact_power_law():
    from theorylab.validations.claims.risk import mean_slope_ci

    taus = np.array([0.1, 0.05, 0.025])
    samples = np.repeat((7.0 * taus**-2.0)[:, None], 5, axis=1)  # (T, B), no noise
    slope, lo, hi = mean_slope_ci(taus, samples, 200, 0)
    assert slope == pytest.approx(-2.0, abs=1e-12)
    assert lo == pytest.approx(-2.0, abs=1e-12) and hi == pytest.approx(-2.0, abs=1e-12)


def test_tau_squared_instances_have_the_same_cvar_gap():
    """CVaR_tau of the risky return (0 w.p. 2 tau, 1 otherwise), written out: the tail tau lies
    inside the failure mass, so CVaR is 0; SAFE's CVaR is its certain 0.5 (independent of the
    library's planner: the sup over b of b - E(b - Z)^+ / tau, on a fine grid of b)."""
    from theorylab.algorithms.risk.static_cvar_planning import static_cvar_planning
    from theorylab.validations.claims.risk import CVaRELAInverseTauSquared

    claim = CVaRELAInverseTauSquared()
    b = np.linspace(0.0, 1.0, 1001)
    for tau in (0.1, 0.05, 0.025, 0.0125):
        p = 2 * tau
        risky = float((b - (p * b + (1 - p) * np.maximum(b - 1.0, 0.0)) / tau).max())
        assert risky == pytest.approx(0.0, abs=1e-12)
        assert static_cvar_planning(make(claim.spec(tau)), tau).value == pytest.approx(0.5, 1e-12)


def test_bonus_without_inverse_tau_mutation_scales_alpha_by_tau():
    from theorylab.validations.robust_mutations import cvar_ela_bonus_without_inverse_tau

    mdp = make(SPEC)
    c, tau, d, K, H, M = 0.3, 0.2, 2, 2, mdp.horizon, mdp.candidates.shape[0]
    written = c * math.sqrt(d * math.log(2 * d * K * H * M / 0.1))
    with cvar_ela_bonus_without_inverse_tau():
        agent = _agent(mdp, tau=tau, c=c, episodes=2)
        assert agent.alpha == pytest.approx(tau * written)
    assert agent.alpha == pytest.approx(written)  # restored


def test_inverse_tau_bonus_drives_exploration_at_small_tau():
    """The implemented bonus keeps RISKY optimistic for ~(alpha / 1.5 tau)^2 episodes, so the
    episodes to eps grow as tau shrinks; without its 1/tau the learner never finds the untried
    SAFE action optimistic (its initial model ties the two at CVaR 0) and stays on RISKY at
    every tau: the same K at tau = 0.1 and 0.025, a slope 0."""
    from theorylab.validations.claims.risk import (
        CVaRELAInverseTauSquared,
        _cvar_ela_class,
        episodes_to_eps,
    )
    from theorylab.validations.robust_mutations import cvar_ela_bonus_without_inverse_tau

    def run(tau):
        spec = CVaRELAInverseTauSquared().spec(tau)
        r = tl.run("cvar-ela", spec, episodes=300, seeds=4, tau=tau,
                   feature_class=_cvar_ela_class(spec), c=0.1)  # fmt: skip
        return episodes_to_eps(np.asarray(r.regret), 0.05)

    assert run(0.025).mean() >= 3 * run(0.1).mean()
    with cvar_ela_bonus_without_inverse_tau():
        assert (run(0.1) == 300).all() and (run(0.025) == 300).all()
