"""Average reward (issue 30): the planning floor (gain, bias, span, diameter, mixing time) against
independent answers, the ``average-reward`` kind, and UCRL2 (radii pinned, EVI's inner step
against an LP, the claim and its controls).

Why the LP's second stage returns h* on a unichain model (algorithms/planning/average_reward.py):
every h with ``g* + h >= r_a + P_a h`` for all a satisfies, for an optimal pi* with stationary d*,
``d*(h - P_pi* h - r_pi* + g*) = 0``, so equality holds on pi*'s recurrent class R and
``h = h* + c`` there; off R, ``u = h - (h* + c)`` satisfies ``u >= P_pi* u`` with u = 0 on R, so
``u >= lim P_pi*^n u = 0``. Pinning h(ref) = 0 at a state of R, ``h* - h*(ref)`` is feasible and
below every feasible h: it is the unique minimiser of sum_s h(s).
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy.optimize import linprog

import theorylab as tl
from theorylab.algorithms.planning import average_reward as ar
from theorylab.errors import InvalidMDPError, InvalidPolicyError
from theorylab.mdps import make


# ------------------------------------------------------------------------------ instances
def ergodic(seed: int, S: int, A: int) -> tuple[np.ndarray, np.ndarray]:
    """Dense positive rows: every policy is ergodic (unichain, aperiodic)."""
    rng = np.random.default_rng(seed)
    return rng.dirichlet(np.ones(S), size=(S, A)), rng.uniform(size=(S, A))


def communicating(seed: int, S: int, A: int) -> tuple[np.ndarray, np.ndarray]:
    """Action 0 walks a deterministic cycle s -> s + 1 (so the model communicates; that chain is
    periodic); the other actions have sparse random rows (self-loops allowed: multichain
    policies exist)."""
    rng = np.random.default_rng(seed)
    P = np.zeros((S, A, S))
    for s in range(S):
        P[s, 0, (s + 1) % S] = 1.0
        for a in range(1, A):
            k = int(rng.integers(1, 3))
            support = rng.choice(S, size=k, replace=False)
            P[s, a, support] = rng.dirichlet(np.ones(k))
    return P, rng.uniform(size=(S, A))


def optimality_residual(P, R, gb) -> float:
    """``max_s |g + h(s) - max_a (r + P h)(s, a)|``."""
    return float(np.abs(gb.gain + gb.bias - (R + P @ gb.bias).max(axis=1)).max())


sizes = st.tuples(st.integers(0, 10**6), st.integers(2, 6), st.integers(1, 4))


# ------------------------------------------------------------------ gain and bias, two ways
@given(sizes)
def test_lp_and_rvi_agree_on_unichain_models(args):
    P, R = ergodic(*args)
    lp, rvi = ar.optimal_gain_bias_lp((P, R)), ar.optimal_gain_bias_rvi((P, R))
    assert abs(lp.gain - rvi.gain) <= 1e-8
    assert np.abs(lp.bias - rvi.bias).max() <= 1e-8  # both normalised to min h = 0
    assert optimality_residual(P, R, lp) <= 1e-8 and optimality_residual(P, R, rvi) <= 1e-8


@given(sizes.filter(lambda a: a[2] >= 2))
def test_lp_and_rvi_agree_on_communicating_models(args):
    P, R = communicating(*args)
    lp, rvi = ar.optimal_gain_bias_lp((P, R)), ar.optimal_gain_bias_rvi((P, R))
    assert abs(lp.gain - rvi.gain) <= 1e-8
    assert optimality_residual(P, R, rvi) <= 1e-8
    # the gain is attained: the greedy policy of RVI's bias earns g* from every state
    cesaro = np.linalg.matrix_power(
        0.5 * (np.eye(P.shape[0]) + P[np.arange(P.shape[0]), rvi.policy]), 4096
    )
    r_pi = R[np.arange(P.shape[0]), rvi.policy]
    assert np.abs(cesaro @ r_pi - lp.gain).max() <= 1e-8


def test_gain_by_enumeration_of_deterministic_policies():
    """g* = max over deterministic policies of the exact policy gain (small model)."""
    P, R = ergodic(7, 4, 3)
    best = max(
        ar.policy_gain_bias((P, R), np.array(pi)).gain
        for pi in itertools.product(range(3), repeat=4)
    )
    assert abs(best - ar.optimal_gain_bias_lp((P, R)).gain) <= 1e-10


@given(sizes)
def test_policy_gain_bias_solves_the_evaluation_equations(args):
    P, R = ergodic(*args)
    S, A = R.shape
    pi = np.random.default_rng(args[0]).dirichlet(np.ones(A), size=S)
    gb = ar.policy_gain_bias((P, R), pi)
    P_pi, r_pi = np.einsum("sa,sat->st", pi, P), (pi * R).sum(1)
    d = np.linalg.matrix_power(P_pi, 2**14)[0]  # the stationary distribution by powers
    assert abs(gb.gain - d @ r_pi) <= 1e-10
    assert np.abs(gb.gain + gb.bias - r_pi - P_pi @ gb.bias).max() <= 1e-10
    assert abs(d @ gb.bias) <= 1e-10
    # RVI on the one-action model of pi is a second answer for the bias (up to a constant)
    rvi = ar.optimal_gain_bias_rvi((P_pi[:, None, :], r_pi[:, None]))
    assert abs(rvi.gain - gb.gain) <= 1e-9
    assert np.abs((gb.bias - gb.bias.min()) - rvi.bias).max() <= 1e-8


def test_riverswim_gain_and_span():
    """RiverSwim S=3: always swimming right is optimal; its gain by hand: the chain of action 1
    has stationary d = (q0, q1, q2) with d P = d; gain = d2 * 0.6 * 1 (r(2, right) = 1 only)."""
    m = make("riverswim:S=3")
    P1 = m.dense_P()[:, 1]
    w, v = np.linalg.eig(P1.T)
    d = np.real(v[:, np.argmin(np.abs(w - 1))])
    d /= d.sum()
    lp = ar.optimal_gain_bias_lp(m)
    assert lp.policy.tolist() == [1, 1, 1]
    assert abs(lp.gain - d[2] * 1.0) <= 1e-12
    assert abs(lp.span - ar.span(lp.bias)) == 0.0


# --------------------------------------------------------------------------------- diameter
def diameter_by_enumeration(P: np.ndarray) -> float:
    S, A, _ = P.shape
    best = np.full((S, S), np.inf)
    for pi in itertools.product(range(A), repeat=S):
        P_pi = P[np.arange(S), np.array(pi)]
        for j in range(S):
            keep = [s for s in range(S) if s != j]
            M = np.eye(S - 1) - P_pi[np.ix_(keep, keep)]
            if abs(np.linalg.det(M)) < 1e-12:
                continue  # j is not reached from some state under pi
            tau = np.linalg.solve(M, np.ones(S - 1))
            best[keep, j] = np.minimum(best[keep, j], tau)
    return float(best[~np.eye(S, dtype=bool)].max())


@pytest.mark.parametrize("seed", range(4))
def test_diameter_by_value_iteration_equals_enumeration(seed):
    P, _ = communicating(seed, 4, 2)
    assert ar.diameter((P, np.zeros((4, 2)))) == pytest.approx(diameter_by_enumeration(P), rel=1e-9)


def test_riverswim_diameter_by_enumeration():
    m = make("riverswim:S=4")
    assert ar.diameter(m) == pytest.approx(diameter_by_enumeration(m.dense_P()), rel=1e-9)


def test_a_deterministic_cycle_has_diameter_s_minus_one():
    S = 5
    P = np.zeros((S, 1, S))
    P[np.arange(S), 0, (np.arange(S) + 1) % S] = 1.0
    assert ar.diameter((P, np.zeros((S, 1)))) == pytest.approx(S - 1, abs=1e-9)


# ------------------------------------------------------------------------------ mixing time
@pytest.mark.parametrize("p,q", [(0.1, 0.3), (0.05, 0.05), (0.5, 0.2), (0.01, 0.02)])
def test_two_state_mixing_time_closed_form(p, q):
    """d(t) = max(p, q) / (p + q) |1 - p - q|^t for P = [[1-p, p], [q, 1-q]]."""
    P = np.array([[1 - p, p], [q, 1 - q]])
    lam, c = abs(1 - p - q), max(p, q) / (p + q)
    t = 1
    while c * lam**t > 0.25:
        t += 1
    assert ar.policy_mixing_time(P) == t


def lazy_cycle(S: int, stay: float) -> tuple[np.ndarray, np.ndarray]:
    P = np.zeros((S, 1, S))
    for s in range(S):
        P[s, 0, s] = stay
        P[s, 0, (s + 1) % S] += 1 - stay
    return P, np.zeros((S, 1))


def test_mixing_time_grows_with_laziness_and_is_the_max_over_policies():
    times = [ar.mixing_time(lazy_cycle(4, stay)) for stay in (0.5, 0.8, 0.95)]
    assert times[0] < times[1] < times[2]
    P, R = ergodic(3, 3, 2)
    each = [ar.mixing_time((P, R), np.array(pi)) for pi in itertools.product(range(2), repeat=3)]
    assert ar.mixing_time((P, R)) == max(each)


# ---------------------------------------------------------------------------------- errors
def two_chains() -> tuple[np.ndarray, np.ndarray]:
    P = np.zeros((2, 1, 2))
    P[0, 0, 0] = P[1, 0, 1] = 1.0
    return P, np.array([[0.0], [1.0]])


def test_bad_inputs_get_one_line_errors():
    P, R = two_chains()
    with pytest.raises(InvalidPolicyError, match="2 recurrent classes"):
        ar.policy_gain_bias((P, R), np.array([0, 0]))
    with pytest.raises(InvalidMDPError, match="state 1 cannot be reached from state 0"):
        ar.diameter((P, R))
    with pytest.raises(InvalidPolicyError, match="periodic chains never mix"):
        ar.policy_mixing_time(lazy_cycle(3, 0.0)[0][:, 0], t_max=100)
    with pytest.raises(ValueError, match="A\\^S = 2\\^13"):
        ar.mixing_time(ergodic(0, 13, 2))
    with pytest.raises(InvalidPolicyError, match="expected shape"):
        ar.policy_gain_bias(ergodic(0, 3, 2), np.zeros(5, dtype=int))
    with pytest.raises(ValueError, match="tau must be in"):
        ar.optimal_gain_bias_rvi(ergodic(0, 3, 2), tau=0.0)


def test_the_kind_refuses_bad_budgets_and_parameters():
    with pytest.raises(ValueError, match="steps"):
        tl.run("ucrl2", "riverswim:S=3", steps=0)
    with pytest.raises(ValueError, match="delta must be in"):
        tl.run("ucrl2", "riverswim:S=3", steps=10, delta=2.0)
    with pytest.raises(Exception, match="episodes"):
        tl.run("ucrl2", "riverswim:S=3", episodes=10)


# ------------------------------------------------------------------------------------ UCRL2
def test_ucrl2_radii_are_the_papers(t: int = 1000, delta: float = 0.05):
    """Jaksch, Ortner & Auer 2010, Figure 1 (as the issue prints them):
    L1 radius sqrt(14 S log(2 A t / delta) / max(1, N)), reward radius
    sqrt(7/2 log(2 S A t / delta) / max(1, N)). Written out here, not imported."""
    from theorylab.algorithms.average_reward import ucrl2

    consts = ucrl2.radius_constants()
    for S, A, N in [(3, 2, 0), (3, 2, 1), (6, 2, 57), (10, 4, 12345)]:
        rp, rr = ucrl2.radii(S, A, t, delta, float(N), *consts)
        n = max(1, N)
        assert rp == pytest.approx(math.sqrt(14 * S * math.log(2 * A * t / delta) / n), rel=1e-14)
        assert rr == pytest.approx(math.sqrt(3.5 * math.log(2 * S * A * t / delta) / n), rel=1e-14)


@pytest.mark.parametrize("seed", range(6))
def test_evi_inner_step_is_the_lp_maximum(seed):
    """Figure 2's inner step against linprog: max p.u over the simplex, ||p - p_hat||_1 <= d."""
    from theorylab.algorithms.average_reward.ucrl2 import optimistic_inner

    rng = np.random.default_rng(seed)
    S = 5
    p_hat, u, d = rng.dirichlet(np.ones(S)), rng.normal(size=S), rng.uniform(0.05, 1.5)
    got = optimistic_inner(p_hat, d, u, np.argsort(-u), np.zeros(S))
    # variables p (S), e (S) with e >= |p - p_hat|
    c = np.r_[-u, np.zeros(S)]
    I = np.eye(S)
    A_ub = np.block([[I, -I], [-I, -I], [np.zeros((1, S)), np.ones((1, S))]])
    b_ub = np.r_[p_hat, -p_hat, d]
    res = linprog(c, A_ub, b_ub, np.r_[np.ones(S), np.zeros(S)][None], [1.0], bounds=(0, None))
    assert got == pytest.approx(-res.fun, abs=1e-9)


def test_evi_with_zero_radius_is_value_iteration_on_the_model():
    from theorylab.algorithms.average_reward.ucrl2 import extended_vi

    P, R = ergodic(11, 5, 3)
    _, lo, hi, _ = extended_vi(P, R, np.zeros((5, 3)), 1e-11, 10**6)
    g = ar.optimal_gain_bias_lp((P, R)).gain
    assert lo - 1e-12 <= g <= hi + 1e-12 and hi - lo < 1e-11


def test_average_reward_kind_scores_regret_and_round_trips(tmp_path):
    res = tl.run("uniform-average", "riverswim:S=3", steps=200_000, seeds=2)
    m = make("riverswim:S=3")
    g_unif = ar.policy_gain_bias(m, np.full((3, 2), 0.5)).gain
    assert res.result_kind == "average-reward" and res.regret.shape == (2, res.steps.size)
    assert res.steps[-1] == 200_000
    assert abs(res.final().mean() / 200_000 - (res.gain_star - g_unif)) < 0.01
    back = tl.load_result(res.save(tmp_path / "r"))
    assert np.array_equal(back.regret, res.regret) and back.gain_star == res.gain_star
    one = tl.run("uniform-average", "riverswim:S=3", steps=1000, seeds=[1])
    both = tl.run("uniform-average", "riverswim:S=3", steps=1000, seeds=[0, 1])
    assert np.array_equal(one.regret[0], both.regret[1])  # a seed is the same alone or batched


def test_ucrl2_run_records_epochs_and_the_cli_runs_it(capsys):
    res = tl.run("ucrl2", "riverswim:S=3", steps=20_000, seeds=1)
    starts = res.diagnostics["epoch_start"][0]
    starts = starts[np.isfinite(starts)]
    assert starts[0] == 1 and np.all(np.diff(starts) > 0)
    assert np.all(res.diagnostics["covered"][0][: starts.size] == 1.0)
    from theorylab.cli import main

    assert main(["run", "ucrl2", "riverswim:S=3", "--steps", "5000", "-B", "1"]) == 0
    assert "ucrl2" in capsys.readouterr().out


def test_ucrl2_claim_passes_and_its_controls_fail():
    from theorylab.validations.registry import validate

    rep = validate("ucrl2-regret-riverswim", "quick")
    assert rep.verdict == "PASS", [c.detail for c in rep.checks]
    verdicts = {c["control"]: c["verdict"] for c in rep.controls}
    assert verdicts == {"ucrl2-uniform-null": "FAIL", "ucrl2-radius-over-n": "FAIL"}


# ------------------------------------------------------------------- 001#1: generative model
def test_reduction_discount_is_one_minus_eps_over_tmix():
    """The reduction's discount, written out: gamma = 1 - eps / (c_gamma t_mix) [A]."""
    from theorylab.algorithms.average_reward.generative import discount_for

    for eps, t_mix, c in [(0.01, 45.0, 1.0), (0.1, 3.0, 1.0), (0.05, 10.0, 2.0)]:
        assert discount_for(eps, t_mix, c) == pytest.approx(1.0 - eps / (c * t_mix), abs=1e-15)


def test_lazy_models_keep_gains_and_scale_bias_and_mixing():
    from theorylab.validations.claims.average_reward import hub_mdp

    hub = hub_mdp()
    base = ar.optimal_gain_bias_lp(hub)
    for stay in (0.5, 0.75, 0.9):
        m = ar.lazy(hub, stay)
        gb = ar.optimal_gain_bias_rvi(m)
        assert abs(gb.gain - base.gain) <= 1e-10
        assert np.abs(gb.bias - base.bias / (1 - stay)).max() <= 1e-8
    with pytest.raises(ValueError, match="stay must be in"):
        ar.lazy(hub, 1.0)


def test_plugin_estimator_counts_and_its_limit():
    from theorylab.algorithms.average_reward.generative import draw_counts, plugin_policy
    from theorylab.validations.claims.average_reward import hub_mdp

    hub = hub_mdp()
    P, R = ar.model_arrays(hub)
    counts = draw_counts(P, 1000, np.random.default_rng(0))
    assert counts.shape == P.shape and np.all(counts.sum(axis=2) == 1000)
    pi, g_hat = plugin_policy(P, R, 1 - 0.01 / 2, 0.0, np.random.default_rng(0))
    assert pi.tolist() == ar.optimal_gain_bias_lp(hub).policy.tolist()
    assert abs(g_hat - ar.optimal_gain_bias_lp(hub).gain) < 0.01


def test_generative_kind_scores_gain_gaps_and_refuses_bad_input(tmp_path):
    from theorylab.validations.claims.average_reward import hub_mdp

    hub = hub_mdp()
    res = tl.run("plugin-average", hub, samples=[10, 100_000], seeds=3, eps=0.01)
    assert res.result_kind == "average-reward-generative" and res.gain_gap.shape == (3, 2)
    assert np.all(res.gain_gap[:, -1] <= 1e-12) and np.all(res.gain_gap >= -1e-12)
    back = tl.load_result(res.save(tmp_path / "g"))
    assert np.array_equal(back.gain_gap, res.gain_gap)
    null = tl.run("null-generative", hub, samples=[100_000], seeds=2)
    assert np.all(null.gain_gap > 0.01)  # state 1 plays the 0.9 action: gap 0.5 * 0.1 / 1.1
    with pytest.raises(ValueError, match="samples must be increasing"):
        tl.run("plugin-average", hub, samples=[100, 10])
    with pytest.raises(ValueError, match="eps must be in"):
        tl.run("plugin-average", hub, samples=10, eps=1.5)


def test_plugin_claim_passes_and_its_controls_fail():
    from theorylab.validations.registry import validate

    rep = validate("plugin-average-tmix-linear", "quick")
    assert rep.verdict == "PASS", [c.detail for c in rep.checks]
    verdicts = {c["control"]: c["verdict"] for c in rep.controls}
    assert verdicts == {
        "plugin-average-null": "FAIL",
        "plugin-average-no-tmix-discount": "FAIL",
    }
