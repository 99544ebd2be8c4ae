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
