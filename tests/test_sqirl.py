"""SQIRL and the effective horizon (000#4): k* against brute-force enumeration of greedy
policies, the bait lock's closed form, the agent's schedule, input errors, the claim and its
control."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import theorylab as tl
from theorylab.agent import env_spec
from theorylab.algorithms.online.sqirl import SQIRL
from theorylab.algorithms.planning.effective_horizon import (
    effective_horizon,
    qvi_iterate,
    random_policy_q,
)
from theorylab.errors import InvalidMDPError
from theorylab.mdps import make
from theorylab.validations.claims.exploration import SQIRLEffectiveHorizon, sqirl_success
from theorylab.validations.controls import get_control
from theorylab.validations.mutations import MUTATIONS  # noqa: F401  (registers the controls)


# ------------------------------------------------------------------ brute force, written apart
def _q_iterates(P, R, H, kmax):
    """Q^1..Q^kmax ``(H, S, A)`` by explicit loops: Q^1 = Q of the uniform policy."""
    S, A = R.shape
    Q = np.zeros((H + 1, S, A))
    for t in range(H - 1, -1, -1):
        for s in range(S):
            for a in range(A):
                Q[t, s, a] = R[s, a] + sum(P[s, a, x] * Q[t + 1, x].mean() for x in range(S))
    out = [Q[:H].copy()]
    for _ in range(kmax - 1):
        new = np.zeros((H + 1, S, A))
        for t in range(H):
            for s in range(S):
                for a in range(A):
                    new[t, s, a] = R[s, a] + sum(P[s, a, x] * Q[t + 1, x].max() for x in range(S))
        Q = new
        out.append(Q[:H].copy())
    return out


def _value(P, R, mu0, H, pi):
    V = np.zeros(R.shape[0])
    for t in range(H - 1, -1, -1):
        V = np.array([R[s, pi[t][s]] + P[s, pi[t][s]] @ V for s in range(R.shape[0])])
    return float(mu0 @ V)


def _brute_force_k(mdp):
    """Smallest k such that every deterministic policy greedy w.r.t. Q^k (all tie-breaks,
    enumerated) attains the best value over all deterministic policies (enumerated)."""
    P, R, H, mu0 = mdp.dense_P(), np.asarray(mdp.R, float), mdp.H, np.asarray(mdp.mu0)
    S, A = R.shape
    all_pis = itertools.product(itertools.product(range(A), repeat=S), repeat=H)
    best = max(_value(P, R, mu0, H, pi) for pi in all_pis)
    for k, Q in enumerate(_q_iterates(P, R, H, H), start=1):
        ties = [
            [np.flatnonzero(Q[t, s] >= Q[t, s].max() - 1e-12) for s in range(S)] for t in range(H)
        ]
        stages = [list(itertools.product(*ties[t])) for t in range(H)]
        if all(_value(P, R, mu0, H, pi) >= best - 1e-9 for pi in itertools.product(*stages)):
            return k
    raise AssertionError("Q^H must be solvable")


@pytest.mark.parametrize(
    "spec",
    [
        "bait-lock:H=3,A=2,k=1,code_seed=2",
        # the two H = 4 locks enumerate every policy in 37-39 s each (CI durations): slow; the
        # H = 3 locks and the random models keep the brute-force check in the default run
        pytest.param("bait-lock:H=4,A=2,k=3,code_seed=5", marks=pytest.mark.slow),
        "bait-lock:H=3,A=3,k=2,bait=0.5",
        "bait-lock:H=3,A=2,k=2,bait=0.25",  # bait below 1/A: no trap, k* = 1
        pytest.param("combination-lock:H=4,A=2,code_seed=3", marks=pytest.mark.slow),
        "chain:S=3,H=4",
        "random:S=3,A=2,H=3,seed=0",
        "random:S=3,A=2,H=3,seed=4",
        "random:S=2,A=3,H=3,seed=7",
    ],
)
def test_effective_horizon_matches_brute_force_enumeration(spec):
    mdp = make(spec)
    assert effective_horizon(mdp) == _brute_force_k(mdp)


def test_qvi_iterates_match_the_explicit_loops():
    mdp = make("random:S=4,A=3,H=4,seed=2")
    ref = _q_iterates(mdp.dense_P(), np.asarray(mdp.R, float), 4, 4)
    for k in range(1, 5):
        np.testing.assert_allclose(qvi_iterate(mdp, k), ref[k - 1], atol=1e-12)


@pytest.mark.parametrize("A,k", [(2, 4), (3, 3)])
def test_bait_lock_closed_form(A, k):
    # Q^j_0(path0, good) = A^-(k-j) for j <= k, the bait is worth `bait`, so k* = k
    mdp = make(f"bait-lock:H={k + 2},A={A},k={k},bait=0.9,code_seed=-1")
    assert np.isclose(random_policy_q(mdp)[0, 0, 0], float(A) ** (1 - k))
    for j in range(1, k + 1):
        Q = qvi_iterate(mdp, j)
        assert np.isclose(Q[0, 0, 0], float(A) ** (j - k)) and np.isclose(Q[0, 0, 1], 0.9)
    assert effective_horizon(mdp) == k
    assert effective_horizon(make(f"bait-lock:H={k + 5},A={A},k={k},bait=0.9")) == k


# ------------------------------------------------------------------ the agent
def test_registered_with_its_paper_and_runs_through_tl_run():
    from theorylab.algorithms.registry import get_algorithm

    entry = get_algorithm("sqirl")
    assert entry.kind == "online" and "000#4" in entry.papers
    res = tl.run(
        "sqirl", "bait-lock:H=4,A=2,k=2,code_seed=1", episodes=4 * 30, seeds=2, k=2, rollouts=30
    )
    assert res.regret.shape == (2, 120)


def test_schedule_plays_learned_actions_before_the_stage_and_uniform_after():
    mdp = make("bait-lock:H=4,A=2,k=2,code_seed=1")
    ag = SQIRL(env_spec(mdp), 2, [np.random.default_rng(i) for i in range(2)], k=2, rollouts=3)
    rngs = [np.random.default_rng([9, i]) for i in range(2)]
    for stage in range(4):
        pi = ag.policy()
        assert ag.stage == stage
        np.testing.assert_array_equal(pi[:, stage:], 0.5)
        np.testing.assert_array_equal(pi[:, :stage], np.eye(2)[ag.learned[:, :stage]])
        for _ in range(3):
            ag.update(mdp.rollout(ag.policy(), rng=rngs))
    assert ag.done and ag.stage == 4


def test_lookahead_at_the_effective_horizon_succeeds_and_below_fails():
    mdp = make("bait-lock:H=5,A=2,k=3,code_seed=4")
    assert sqirl_success(mdp, 3, 400, 8, 0).all()
    assert not sqirl_success(mdp, 2, 400, 8, 0).any()  # Q^2 of the lock ~ 1/2 < bait 0.75


@pytest.mark.parametrize(
    "kw,needle",
    [({"k": 0}, "k must be"), ({"k": 1.5}, "k must be"), ({"rollouts": 0}, "rollouts must be")],
)
def test_agent_input_errors(kw, needle):
    mdp = make("bait-lock:H=3,A=2,k=2")
    with pytest.raises(ValueError, match=needle):
        SQIRL(env_spec(mdp), 1, [np.random.default_rng(0)], **kw)


@pytest.mark.parametrize(
    "spec,needle",
    [
        ("bait-lock:H=3,A=2,k=4", "k must be <= H=3"),
        ("bait-lock:H=3,A=2,k=2,bait=1.0", "bait must lie"),
        ("bait-lock:H=3,A=1,k=2", "A must be an integer >= 2"),
    ],
)
def test_bait_lock_input_errors(spec, needle):
    with pytest.raises(InvalidMDPError, match=needle):
        make(spec)


def test_effective_horizon_refuses_a_discounted_model():
    with pytest.raises(ValueError, match="finite-horizon, undiscounted"):
        effective_horizon(make("riverswim:S=4,H=5,gamma=0.9"))
    with pytest.raises(ValueError, match="k must be an integer >= 1"):
        qvi_iterate(make("bait-lock:H=3,A=2,k=2"), 0)


# ------------------------------------------------------------------ the claim and its control
TINY = SQIRLEffectiveHorizon(
    scales={"tiny": {"ks": (1, 2, 3), "H": 4, "Hs": (3, 5, 7), "k": 2, "seeds": 24}}
)


def test_claim_passes_on_a_tiny_scale():
    rep = TINY.run("tiny")
    assert rep.passed, [c.detail for c in rep.checks]


def test_short_lookahead_fails_the_claim():
    with get_control("sqirl-short-lookahead").applied(TINY):
        rep = TINY.run("tiny")
    assert not rep.passed
    growth = next(c for c in rep.checks if c.name.startswith("rollouts needed grow"))
    assert not growth.passed, growth.detail


def test_bait_lock_name_round_trips():
    mdp = make("bait-lock:H=5,A=3,k=2,bait=0.6,code_seed=4")
    again = make(mdp.name)
    assert again.name == mdp.name
    np.testing.assert_array_equal(again.dense_P(), mdp.dense_P())
    np.testing.assert_array_equal(again.R, mdp.R)
