"""Demonstration-regularised BPI (001#24): the planner against independent solvers, the KL
inequality behind the fast-rate stopping rule, the pinned lambda formula, input errors, the
claim and its controls."""

from __future__ import annotations

import math

import numpy as np
import pytest

import theorylab as tl
from theorylab.agent import env_spec
from theorylab.algorithms.online.demo_regularised_bpi import DemoRegularisedBPI
from theorylab.algorithms.planning.finite_horizon import backward_induction
from theorylab.algorithms.planning.soft_value_iteration import soft_backward_induction
from theorylab.algorithms.policy_optimization.demonstration_regularised import (
    expert_demonstrations,
)
from theorylab.mdps import make
from theorylab.validations.claims.demonstrations import DemoRegularisedSamples, trajectory_kl
from theorylab.validations.controls import get_control
from theorylab.validations.mutations import MUTATIONS  # noqa: F401  (registers the controls)

LOCK = "combination-lock:H=3,A=3,code_seed=3"


def agent(mdp, B=2, demos=16, **params):
    drawn = [expert_demonstrations(mdp, demos, np.random.default_rng(i)) for i in range(B)]
    states, actions = np.stack([s for s, _ in drawn]), np.stack([a for _, a in drawn])
    rngs = [np.random.default_rng(i) for i in range(B)]
    return DemoRegularisedBPI(env_spec(mdp), B, rngs, demonstrations=(states, actions), **params)


def known_model(ag, mdp) -> None:
    """Counts whose empirical model is the true one (one unit of mass per pair)."""
    P = mdp.dense_P()  # (S, A, S)
    ag.N[:] = 1.0
    ag.N_next[:] = P[None, None]
    ag.R_sum[:] = np.asarray(mdp.R, dtype=float)[None, None]
    ag.plan()


def test_registered_with_its_paper_and_runs_through_tl_run():
    from theorylab.algorithms.registry import get_algorithm

    entry = get_algorithm("demo-regularised-bpi")
    assert entry.kind == "online" and "001#24" in entry.papers
    mdp = make(LOCK)
    s, a = expert_demonstrations(mdp, 8, np.random.default_rng(0))
    res = tl.run("demo-regularised-bpi", LOCK, episodes=20, seeds=2, demonstrations=(s, a))
    assert res.regret.shape == (2, 20)


@pytest.mark.parametrize("lam", [0.05, 0.7, 3.0])
def test_plan_without_bonus_on_the_true_model_is_soft_backward_induction(lam):
    mdp = make("random:S=4,A=3,H=4,seed=2")
    ag = agent(mdp, lam=lam, bonus_scale=0.0)
    known_model(ag, mdp)
    for i in range(ag.n_seeds):
        V, _, pi = soft_backward_induction(mdp, lam, ag.bc[i])  # the planning floor, separately
        np.testing.assert_allclose(ag._Vu[i], V[0] @ mdp.mu0, rtol=1e-10)
        np.testing.assert_allclose(ag._pi[i], pi, atol=1e-10)
        # Vu = Vl without bonus: the certified gap is 0
        assert abs(ag.gap[i]) < 1e-9


def test_lambda_zero_plan_is_backward_induction():
    mdp = make("random:S=4,A=3,H=4,seed=5")
    ag = agent(mdp, lam=0.0, bonus_scale=0.0)
    known_model(ag, mdp)
    np.testing.assert_allclose(ag._Vu, backward_induction(mdp).value, rtol=1e-10)


def test_kl_of_softmaxes_is_below_the_fast_rate_term():
    # KL(pi || pi*) <= E_pi[min(delta, delta^2 / 2)] for pi = softmax(log ref + Qu / lam),
    # pi* = softmax(log ref + Q* / lam), delta = (Qu - Q*) / lam >= 0: brute force over draws
    rng = np.random.default_rng(0)
    for _ in range(2000):
        A = int(rng.integers(2, 6))
        lam = float(rng.choice([0.01, 0.3, 2.0]))
        ref = rng.dirichlet(np.ones(A))
        q_star = rng.uniform(0, 3, A)
        qu = q_star + rng.exponential(rng.choice([0.01, 0.5, 3.0]), A)
        pi = ref * np.exp((qu - qu.max()) / lam)
        pi /= pi.sum()
        ps = ref * np.exp((q_star - q_star.max()) / lam)
        ps /= ps.sum()
        m = pi > 0  # pi may underflow to 0 on a far-below action: 0 log 0 = 0
        kl = float(np.sum(pi[m] * (np.log(pi[m]) - np.log(ps[m]))))
        d = (qu - q_star) / lam
        assert kl <= float(pi @ np.minimum(d, d * d / 2)) + 1e-9


def test_lambda_is_eps_over_twice_the_kl_budget_as_written():
    # K = H min(S A kappa / N_E, ln A), lambda = eps / (2 K) (module docstring, [A])
    mdp = make(LOCK)
    S, A, H = 4, 3, 3
    for demos, kappa, eps in [(16, 1.0, 0.3), (512, 0.5, 0.1), (2, 1.0, 0.2)]:
        ag = agent(mdp, demos=demos, smoothing=kappa, eps=eps)
        K = H * min(S * A * kappa / demos, math.log(A))
        assert ag.budget == pytest.approx(K, rel=1e-12)
        assert ag.lam == pytest.approx(eps / (2 * K), rel=1e-12)
        assert ag.threshold == pytest.approx(eps / 2, rel=1e-12)
    ag = DemoRegularisedBPI(env_spec(mdp), 1, [np.random.default_rng(0)])  # no demonstrations
    assert ag.budget == pytest.approx(H * math.log(A)) and np.allclose(ag.bc, 1 / A)


def test_bonus_is_the_written_hoeffding_term():
    # b_h = c (H - h) sqrt(L / (2 n)), L = ln(6 S A H k^2 / delta) with k = episodes + 1 at the
    # plan after k - 1 updates; at the last step P V = 0, so Qu - Ql = 2 b where nothing clips
    mdp = make("random:S=4,A=3,H=3,seed=4")
    S, A, H, c, delta = 4, 3, 3, 0.01, 0.1
    ag = agent(mdp, B=1, lam=0.0, bonus_scale=c, delta=delta)
    env = [np.random.default_rng(3)]
    for _ in range(5):
        ag.update(mdp.rollout(ag.policy(), rng=env))
    L = math.log(6 * S * A * H * (5 + 1) ** 2 / delta)
    n = ag.N[0, H - 1]  # (S, A)
    b = c * (H - (H - 1)) * np.sqrt(L / (2 * np.maximum(n, 1)))
    r = ag._reward(H - 1, ag.N[:, H - 1])[0]  # (S, A)
    inside = (n > 0) & (r - b > 0) & (r + b < 1)  # neither the floor nor the cap binds
    assert inside.sum() >= 3
    np.testing.assert_allclose((ag._Qu - ag._Ql)[0, H - 1][inside], 2 * b[inside], rtol=1e-12)


def test_trajectory_kl_matches_enumeration_on_the_lock():
    # deterministic lock: pi* stays on the path, KL = sum_h -ln pi_BC_h(code_h | path_h)
    mdp = make(LOCK)
    ag = agent(mdp, demos=7)
    opt = backward_induction(mdp)
    expert = np.asarray(opt.policy)
    direct = [-sum(np.log(ag.bc[i, h, h, expert[h, h]]) for h in range(3)) for i in range(2)]
    np.testing.assert_allclose(trajectory_kl(mdp, expert, ag.bc), direct, rtol=1e-12)


def test_stopped_seed_freezes_its_output_and_certifies_it():
    mdp = make(LOCK)
    ag = agent(mdp, B=2, demos=4096, eps=0.5, bonus_scale=0.25)
    env = [np.random.default_rng([i, 9]) for i in range(2)]
    for _ in range(2000):
        ag.update(mdp.rollout(ag.policy(), rng=env))
        if (ag.stopped_at >= 0).all():
            break
    assert (ag.stopped_at > 0).all()
    out = ag.recommendation()
    ag.update(mdp.rollout(ag.policy(), rng=env))
    np.testing.assert_array_equal(ag.recommendation(), out)
    from theorylab.algorithms.planning.evaluation import evaluate_policies

    v = evaluate_policies(mdp, out, batched=True)[:, 0] @ mdp.mu0
    assert (1.0 - v <= 0.5).all()


@pytest.mark.parametrize(
    ("params", "match"),
    [
        ({"eps": 0.0}, "eps must be"),
        ({"lam": -1.0}, "lam must be"),
        ({"reference": "expert"}, "reference must be"),
        ({"smoothing": 0.0}, "smoothing must be"),
        ({"delta": 1.0}, "delta must lie"),
        ({"bonus_scale": -0.1}, "bonus_scale must be"),
        ({"demonstrations": (np.zeros((3, 2), int), np.zeros((3, 2), int))}, "shape"),
        ({"demonstrations": (np.zeros((3, 3), int), np.full((3, 3), 7))}, "actions must be"),
    ],
)
def test_input_errors_name_the_parameter(params, match):
    mdp = make(LOCK)
    with pytest.raises(ValueError, match=match) as err:
        DemoRegularisedBPI(env_spec(mdp), 1, [np.random.default_rng(0)], **params)
    assert "demo-regularised-bpi" in str(err.value) and "\n" not in str(err.value)


TINY = DemoRegularisedSamples(
    eps=0.5, scales={"tiny": {"demos": (1024, 2048, 4096), "seeds": 2, "cap": 3000}}
)


def test_claim_passes_on_a_tiny_scale():
    rep = TINY.run("tiny")
    assert rep.passed, [c.detail for c in rep.checks]


@pytest.mark.parametrize(
    ("control", "check"),
    [
        ("demo-bpi-ignore-demos", "samples-to-eps falls"),
        ("demo-bpi-uniform-reference", "the regularisation bias"),
    ],
)
def test_controls_fail_the_claim(control, check):
    with get_control(control).applied(TINY):
        rep = TINY.run("tiny")
    assert not rep.passed
    failed = next(c for c in rep.checks if c.name.startswith(check))
    assert not failed.passed, failed.detail
