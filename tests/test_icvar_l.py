"""ICVaR-L / ICVaR-HF (seed 001#48; theorylab.algorithms.online.icvar_l) and the linear mixture
MDPs they run on: exact planning identities against independent planners, pinned radii and the
bound cards written out, input errors, optimism, the preference oracle and the mutation."""

from __future__ import annotations

import math

import numpy as np
import pytest

import theorylab as tl
from theorylab.agent import env_spec
from theorylab.algorithms.online import icvar_l
from theorylab.algorithms.online.icvar_l import (
    ICVaRHF,
    ICVaRL,
    btl_oracle,
    icvar_l_beta,
    optimistic_cvar_backup,
)
from theorylab.algorithms.planning.finite_horizon import backward_induction
from theorylab.algorithms.risk.iterated_cvar import iterated_cvar_planning
from theorylab.errors import InvalidMDPError
from theorylab.mdps import make
from theorylab.mdps.linear_mixture import LinearMixtureMDP, tabular_basis, value_features

SPEC = "linear-mixture:S=5,A=2,d=3,H=3,seed={seed},concentration=0.5"


def _plan_true(mdp, alpha: float, basis=None, theta=None) -> np.ndarray:
    """The learner's backup at the true parameter and no bonus: ``V (H+1, S)``."""
    basis = mdp.basis if basis is None else basis
    theta = mdp.theta if theta is None else theta
    V = np.zeros((1, mdp.horizon + 1, mdp.S))
    inv = np.eye(basis.shape[0])[None]
    for h in range(mdp.horizon - 1, -1, -1):
        tail, _ = optimistic_cvar_backup(basis, theta[None], inv, V[:, h + 1], alpha, 0.0)
        V[:, h] = (mdp.reward(h)[None] + tail).max(axis=2)
    return V[0]


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("alpha", [1.0, 0.6, 0.25, 0.05])
def test_backup_equals_sorting_dp(seed, alpha):
    m = make(SPEC.format(seed=seed))
    assert np.abs(_plan_true(m, alpha) - iterated_cvar_planning(m, alpha).V).max() <= 1e-12


@pytest.mark.parametrize("seed", range(5))
def test_alpha_one_is_backward_induction(seed):
    m = make(SPEC.format(seed=seed))
    assert np.abs(_plan_true(m, 1.0) - backward_induction(m).V).max() <= 1e-12


@pytest.mark.parametrize("seed", range(5))
def test_value_monotone_in_alpha_and_above_worst_path(seed):
    m = make(SPEC.format(seed=seed))
    vals = [iterated_cvar_planning(m, a).value for a in (0.01, 0.1, 0.3, 0.5, 0.8, 1.0)]
    assert np.all(np.diff(vals) >= -1e-12)
    assert iterated_cvar_planning(m, 0.0).value <= vals[0] + 1e-12


def test_tabular_basis_reproduces_any_model():
    m = make("random:S=4,A=2,H=3,seed=0")
    P = m.dense_P()
    P = P[0] if P.ndim == 4 else P  # (S, A, S)
    basis = tabular_basis(4, 2)
    assert np.allclose(np.einsum("isat,i->sat", basis, P.ravel()), P, atol=0)
    f = np.arange(4.0)
    assert np.allclose(value_features(basis, f) @ P.ravel(), P @ f)
    for alpha in (1.0, 0.3):
        mm = make("linear-mixture:S=4,A=2,d=2,H=3,seed=1")
        tb = tabular_basis(4, 2)
        theta = mm.P.reshape(-1) if mm.P.ndim == 3 else mm.dense_P().reshape(-1)
        ref = iterated_cvar_planning(mm, alpha).V
        assert np.abs(_plan_true(mm, alpha, tb, theta) - ref).max() <= 1e-12


def test_radius_written_out():
    # (H/2) sqrt(2 log(1/delta) + d log(1 + n L^2 / (d lambda))) + sqrt(lambda) S_theta
    d, H, n, lam, delta, L, St = 4, 3.0, 300, 1.0, 0.1, 6.0, 1.0
    want = 1.5 * math.sqrt(2 * math.log(10.0) + 4 * math.log(1 + 300 * 36 / 4)) + 1.0
    assert icvar_l_beta(d, H, n, lam, delta, L, St) == pytest.approx(want, rel=1e-15)
    env = env_spec(make(SPEC.format(seed=0)))
    agent = ICVaRL(env, 2, None, alpha=0.5, basis=make(SPEC.format(seed=0)).basis)
    # L = H max_{s,a} ||sum_t phi(t|s,a)||_2 = H sqrt(d) for a simplex basis; S_theta = 1
    assert agent.beta == pytest.approx(0.5 * 3 * math.sqrt(2 * math.log(10)) + 1.0)
    assert agent.L_phi == pytest.approx(math.sqrt(3))


def test_bound_cards_written_out():
    from theorylab.bounds.registry import LOWER_BOUNDS, get_bound
    from theorylab.validations.claims.risk_icvar_fa import informative_k

    up, low = get_bound("chen2024-icvar-l-thm1"), get_bound("chen2024-icvar-l-lower")
    a, d, H, K = 0.25, 4, 2, 10_000
    assert float(up.evaluate(alpha=a, d=d, H=H, K=K, C=1)) == pytest.approx(
        math.sqrt(a ** (-3) * (16 * 16 + 4 * 64) * K)
    )
    assert float(low.evaluate(alpha=a, d=d, H=H, K=K, c=1)) == pytest.approx(4 * math.sqrt(4 * K))
    assert LOWER_BOUNDS["chen2024-icvar-l-thm1"] == "chen2024-icvar-l-lower"
    # informative (below K H at C = 1) exactly from K = alpha^-(H+1) (d^2 H^4 + d H^6) / H^2
    k0 = 0.25**-3 * (16 * 16 + 4 * 64) / 4
    assert informative_k(a, d, H) == pytest.approx(k0) == pytest.approx(8192)
    for k, below in ((int(k0) - 1, False), (int(k0) + 1, True)):
        assert (float(up.evaluate(alpha=a, d=d, H=H, K=k, C=1)) < k * H) is below


def test_optimism_on_early_episodes():
    m = make("linear-mixture:S=5,A=2,d=4,H=3,seed=13,concentration=1.0")
    r = tl.run("icvar-l", m.name, episodes=40, seeds=3, alpha=0.25, basis=m.basis)
    assert np.all(np.asarray(r.value_estimates) >= r.optimal_value - 1e-9)


def test_policy_is_read_only_and_regret_is_exact_icvar():
    m = make("linear-mixture:S=5,A=2,d=4,H=3,seed=13,concentration=1.0")
    agent = ICVaRL(env_spec(m), 2, None, alpha=0.25, basis=m.basis)
    pi = agent.policy()
    with pytest.raises(ValueError):
        pi[0, 0, 0] = 1
    r = tl.run("icvar-l", m.name, episodes=5, seeds=1, alpha=0.25, basis=m.basis)
    assert r.optimal_value == pytest.approx(iterated_cvar_planning(m, 0.25).value, abs=1e-12)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"alpha": 1.5}, "alpha"),
        ({"alpha": 0.0}, "worst-path"),
        ({"delta": 1.0}, "delta"),
        ({"lam": 0.0}, "lam"),
        ({"bonus_scale": -1.0}, "bonus_scale"),
        ({"basis": np.ones((2, 3, 3, 3))}, "basis must have shape"),
        ({"basis": "random:S=5,A=2,H=3"}, "no linear mixture"),
    ],
)
def test_input_errors(kwargs, match):
    env = env_spec(make(SPEC.format(seed=0)))
    with pytest.raises(ValueError, match=match):
        ICVaRL(env, 1, None, **kwargs)


def test_family_and_model_errors():
    with pytest.raises(InvalidMDPError, match="concentration"):
        make("linear-mixture:concentration=0")
    with pytest.raises(InvalidMDPError, match="parameter d"):
        make("linear-mixture:d=0")
    m = make(SPEC.format(seed=0))
    bad = np.array(m.basis)
    bad[0, 0, 0] *= 2
    with pytest.raises(InvalidMDPError, match=r"basis\[0, 0, 0\] sums to"):
        LinearMixtureMDP(bad, m.theta, m.R, horizon=3)
    with pytest.raises(InvalidMDPError, match="simplex"):
        LinearMixtureMDP(m.basis, m.theta * 2, m.R, horizon=3)


def test_btl_oracle_frequencies():
    rngs = [np.random.default_rng(i) for i in range(2000)]
    y = btl_oracle(np.full(2000, 1.0), np.zeros(2000), rngs)
    assert abs(y.mean() - 1 / (1 + math.exp(-1))) < 0.035


def test_icvar_hf_runs_blind_to_rewards():
    m = make("linear-mixture:S=5,A=2,d=4,H=3,seed=13,concentration=1.0")
    r = tl.run("icvar-hf", m.name, episodes=60, seeds=2, alpha=0.25, basis=m.basis,
               known_rewards=False, reward_bonus_scale=0.05)  # fmt: skip
    assert np.asarray(r.cumulative_regret).shape == (2, 60)
    agent = ICVaRHF(env_spec(m), 2, [np.random.default_rng(0)] * 2, basis=m.basis)
    assert agent.env.reward is None  # told nothing about rewards even when env knows them
    rew = agent.rewards(0)
    assert rew.shape == (2, 5, 2) and np.all((rew >= 0) & (rew <= 2))


def test_mutation_breaks_the_exact_backup():
    import theorylab.validations.mutations  # noqa: F401  (registers the mutations)
    from theorylab.validations.claims.risk_icvar_fa import _exact_checks
    from theorylab.validations.controls import get_control

    assert all(c.passed for c in _exact_checks(2, 0))
    with get_control("icvar-l-risk-neutral-backup").applied(None):
        checks = _exact_checks(2, 0)
        assert not checks[1].passed  # the sorting DP at alpha < 1 differs
    assert icvar_l.optimistic_cvar_backup is optimistic_cvar_backup


def test_hf_planner_is_risk_neutral_at_alpha_one_and_the_dp_otherwise():
    from theorylab.validations.claims.risk_icvar_fa import ALPHAS, _hf_planning_errors

    for seed in range(3):
        m = make(f"linear-mixture:S=3,A=2,d=2,H=3,seed={seed},concentration=0.5")
        err_bi, err_dp = _hf_planning_errors(m, ALPHAS)
        assert err_bi <= 1e-12 and err_dp <= 1e-12


def test_labels_ignored_mutation_makes_labels_independent_of_returns():
    import theorylab.validations.mutations  # noqa: F401  (registers the mutations)
    from theorylab.validations.controls import get_control

    rngs = [np.random.default_rng(i) for i in range(4000)]
    high, low = np.full(4000, 2.0), np.zeros(4000)
    assert btl_oracle(high, low, rngs).mean() > 0.85  # sigmoid(2) = 0.88
    with get_control("icvar-hf-labels-ignored").applied(None):
        y = icvar_l.btl_oracle(high, low, [np.random.default_rng(i) for i in range(4000)])
        assert abs(y.mean() - 0.5) < 0.03
    assert icvar_l.btl_oracle is btl_oracle


def test_hf_reward_fit_reports_inf_without_a_reward_estimate(monkeypatch):
    """A control that replaces icvar-hf by an agent with no reward estimate fails the check."""
    from theorylab.validations.claims import risk_icvar_fa

    class NoReward:
        def __init__(self, env, n_seeds, rngs, **kw):
            self.pi = np.zeros((n_seeds, env.H, env.S), dtype=np.int64)

        def policy(self):
            return self.pi

        def update(self, traj):
            pass

    monkeypatch.setattr(
        "theorylab.algorithms.registry.make_agent", lambda *a, **k: NoReward(*a[1:3], None)
    )
    out = risk_icvar_fa._hf_reward_fit(make(risk_icvar_fa.HF_MDP), 0.25, 16, 2, 0)
    assert out["ordered"] is False and out["rms"] == math.inf


HYPER = "icvar-linear-hypercube:m={m},alpha={alpha},gap={gap},H={H},seed={seed}"


def _cvar_two_point(p_bad: float, v_good: float, alpha: float) -> float:
    """CVaR_alpha (lower tail) of v_good w.p. 1 - p_bad and 0 w.p. p_bad, written out."""
    return v_good * max(0.0, alpha - p_bad) / alpha if p_bad < alpha else 0.0


@pytest.mark.parametrize(("m", "alpha", "gap", "H", "seed"),
                         [(1, 0.25, 0.02, 2, 0), (3, 0.25, 0.02, 2, 1), (4, 0.5, 0.05, 3, 2),
                          (5, 1.0, 0.09, 2, 3)])  # fmt: skip
def test_hypercube_closed_form(m, alpha, gap, H, seed):
    mdp = make(HYPER.format(m=m, alpha=alpha, gap=gap, H=H, seed=seed))
    assert (mdp.d, mdp.A, mdp.S) == (2 * m, 2**m, 3)
    sol = iterated_cvar_planning(mdp, alpha)
    bits = (np.arange(2**m)[:, None] >> np.arange(m)[None]) & 1  # (A, m)
    acts = 2 * bits - 1
    p_bad = mdp.P[0, :, 2]  # (A,)
    sigma = acts[int(np.argmin(p_bad))]  # the hidden signs: the action with the least P(bad)
    np.testing.assert_allclose(p_bad, alpha / 2 - gap * acts @ sigma, atol=1e-15)
    for a in range(2**m):
        q = _cvar_two_point(p_bad[a], H - 1.0, alpha)
        assert sol.Q[0, 0, a] == pytest.approx(q, abs=1e-12)
        wrong = int((acts[a] != sigma).sum())
        assert sol.value - q == pytest.approx(wrong * 2 * gap * (H - 1) / alpha, abs=1e-12)
    assert sol.value == pytest.approx((H - 1) * (1 - (alpha / 2 - m * gap) / alpha), abs=1e-12)
    # the uniformly random policy's expected regret per episode: m / 2 wrong coordinates
    gaps = sol.value - sol.Q[0, 0]  # (A,)
    assert float(gaps.mean()) == pytest.approx(m * gap * (H - 1) / alpha, abs=1e-12)
    if alpha == 0.25 and gap == 0.02 and H == 2:
        from theorylab.validations.claims.risk_icvar_fa import hypercube_null_regret

        assert hypercube_null_regret(m, alpha, 100) == pytest.approx(100 * float(gaps.mean()))


@pytest.mark.parametrize(
    ("spec", "match"),
    [
        ("icvar-linear-hypercube:m=0", "parameter m"),
        ("icvar-linear-hypercube:m=11,gap=0.001", "m must be <= 10"),
        ("icvar-linear-hypercube:alpha=0", "alpha"),
        ("icvar-linear-hypercube:m=3,alpha=0.25,gap=0.05", "m gap < alpha / 2"),
        ("icvar-linear-hypercube:H=1", "parameter H"),
    ],
)
def test_hypercube_errors(spec, match):
    with pytest.raises(InvalidMDPError, match=match):
        make(spec)


def test_radius_grows_with_d_on_the_hypercube():
    # the pinned radius of the d-sweep's learner: d enters the log term (mutation
    # icvar-l-radius-without-d drops it); L = H max ||sum_t phi(t|s,a)||_2 = H sqrt(2m) here
    m, H, n = 4, 2, 200
    mdp = make(HYPER.format(m=m, alpha=0.25, gap=0.02, H=H, seed=0))
    agent = ICVaRL(env_spec(mdp), 1, None, alpha=0.25, basis=mdp.basis)
    agent.n_regressions = n
    d, L2 = 2 * m, H * H * 2 * m
    want = (H / 2) * math.sqrt(2 * math.log(10.0) + d * math.log(1 + n * L2 / d)) + 1.0
    assert agent.beta == pytest.approx(want, rel=1e-12)


def test_the_d_sweep_fails_for_the_random_agent():
    from theorylab.validations import VALIDATIONS
    from theorylab.validations.claims.risk_icvar_fa import hypercube_d_exponent
    from theorylab.validations.controls import get_control

    with get_control("random").applied(VALIDATIONS.get("icvar-l-linear-mixture")):
        check = hypercube_d_exponent(200, 1, 2, 0, 0.25, 0.1)
    assert not check.passed
    assert min(check.values["null_ratio"]) > 0.8
    # its exponent is the null agent's exactly-linear growth, inside the window: the learn ratio
    # is what fails it
    assert 0.75 < check.values["exponent"] < 1.25
