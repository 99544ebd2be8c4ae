"""Tests of tabular ReCOIL and SMODICE (algorithms/dual/recoil.py, smodice.py), the
behaviour-KL reference answer of f-DVL (behaviour_kl.py), the imitation runner, and the claims'
controls (validations/claims/dual_imitation.py; the claims pass at quick scale in
tests/test_validations.py)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import theorylab as tl
from theorylab.algorithms.dual.behaviour_kl import solve_behaviour_kl
from theorylab.algorithms.dual.f_divergences import divergence
from theorylab.algorithms.dual.inputs import DualInputError, UncoveredFlowError
from theorylab.algorithms.dual.recoil import (
    lower_bounded_conjugate,
    mixture_divergence,
    recoil,
    recoil_dual_q_value,
    solve_recoil,
    solve_recoil_primal,
)
from theorylab.algorithms.dual.smodice import discriminator_reward, smodice, solve_smodice
from theorylab.algorithms.offline.coverage import optimal_solution
from theorylab.algorithms.offline.dataset import make_dataset, population_dataset
from theorylab.algorithms.offline.scoring import policy_values
from theorylab.algorithms.planning import evaluate_discounted
from theorylab.algorithms.planning.lp import discounted_lp, occupancy_measure
from theorylab.mdps import TabularMDP, make
from theorylab.validations.claims.dual_imitation import (
    FDVLSoftFixedPoint,
    RecoilRelaxedCoverage,
    discounted_instance,
    restricted_optimum,
)
from theorylab.validations.controls import get_control
from theorylab.validations.mutations import MUTATIONS  # noqa: F401  (registers the mutations)

SMOOTH = ("kl", "chi2", "half-chi2")


def random_mdp(seed: int, S: int = 5, A: int = 3, gamma: float = 0.9) -> TabularMDP:
    rng = np.random.default_rng(seed)
    P = rng.dirichlet(np.ones(S), size=(S, A))
    return TabularMDP(P, rng.uniform(size=(S, A)), np.ones(S) / S, gamma=gamma)


def adversarial_policy(mdp) -> np.ndarray:
    """Uniform over the actions pi* (from the LP) does not play: never the optimal action."""
    best = discounted_lp(mdp).occupancy.argmax(axis=1)
    pi = np.ones((mdp.S, mdp.A))
    pi[np.arange(mdp.S), best] = 0.0
    return pi / pi.sum(axis=1, keepdims=True)


# ------------------------------------------------------------------------------ the conjugate
@pytest.mark.parametrize("f", SMOOTH)
def test_lower_bounded_conjugate_is_the_restricted_sup(f):
    fd = divergence(f)
    t0 = np.array([0.0, 0.3, 0.9])
    conj = lower_bounded_conjugate(fd, t0)
    t = np.linspace(0.0, 20.0, 400_001)
    for y in (-3.0, -0.5, 0.0, 0.7):
        yv = np.full(3, y)
        brute = [np.max(np.where(t >= lo, t * y - fd.f(t), -np.inf)) for lo in t0]
        np.testing.assert_allclose(conj.value(yv), brute, atol=1e-8)
        h = 1e-6  # C' = t(y): central differences
        fd_grad = (conj.value(yv + h) - conj.value(yv - h)) / (2 * h)
        np.testing.assert_allclose(conj.first(yv), fd_grad, atol=1e-6)


# ------------------------------------------------------------------------------ ReCOIL, exact
@settings(max_examples=15, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    f=st.sampled_from(SMOOTH),
    beta=st.sampled_from([0.05, 0.3, 0.5, 0.9, 1.0]),
    S=st.integers(2, 5),
    A=st.integers(1, 3),
)
def test_recoil_dual_matches_the_cvxpy_primal(seed, f, beta, S, A):
    """Strong duality of the derived dual, and the same optimum as cvxpy on the primal side, for
    a d^E that is *not* an occupancy (so the optimum is not trivially d^E)."""
    mdp = random_mdp(seed, S, A)
    rng = np.random.default_rng(seed + 1)
    dE = rng.dirichlet(np.ones(S * A)).reshape(S, A)
    dS = rng.dirichlet(np.ones(S * A)).reshape(S, A)
    dual = solve_recoil(mdp, dE, dS, beta, f)
    primal = solve_recoil_primal(mdp, dE, dS, beta, f)
    assert dual.occupancy.min() >= 0.0
    assert dual.flow_residual <= 1e-9
    assert abs(dual.gap) <= 1e-9 * (1 + dual.divergence_value)
    assert abs(dual.divergence_value - primal.divergence_value) <= 1e-6
    # The objective is a function of the mixture x = beta d + (1 - beta) d^S: cvxpy's tolerance
    # (~1e-8 on the objective) fixes x to ~1e-4, and d only to ~1e-4 / beta (measured: |dx| <=
    # 3.2e-5 over 810 instances; |dd| = 1.0e-4 at beta = 0.05), so the argmins are compared in x.
    mix = beta * (dual.occupancy - primal.occupancy)
    assert np.max(np.abs(mix)) <= 1e-4


@settings(max_examples=10, deadline=None)
@given(
    seed=st.integers(0, 10_000), f=st.sampled_from(SMOOTH), beta=st.sampled_from([0.2, 0.5, 1.0])
)
def test_the_papers_dual_q_form_is_the_mixture_primal(seed, f, beta):
    """Theorem 1's dual-Q objective (as quoted from the paper's source, recoil.py docstring):
    for every policy, min_Q = -D_f(beta d^pi + (1 - beta) d^S || m); its max over policies is
    attained at ReCOIL's policy, with the value of the primal optimum."""
    S, A = 4, 3
    mdp = random_mdp(seed, S, A)
    rng = np.random.default_rng(seed + 2)
    dE = rng.dirichlet(np.ones(S * A)).reshape(S, A)
    dS = rng.dirichlet(np.ones(S * A)).reshape(S, A)
    m = beta * dE + (1 - beta) * dS
    best = solve_recoil(mdp, dE, dS, beta, f)
    at_best, _ = recoil_dual_q_value(mdp, best.policy, dE, dS, beta, f)
    assert abs(at_best + best.divergence_value) <= 1e-10
    for _ in range(3):
        pi = rng.dirichlet(np.ones(A), size=S)
        value, _ = recoil_dual_q_value(mdp, pi, dE, dS, beta, f)
        d_pi = occupancy_measure(mdp, pi)
        expected = -mixture_divergence(divergence(f), d_pi, dS, m, beta)
        assert abs(value - expected) <= 1e-10 * (1 + abs(expected))
        assert value <= at_best + 1e-12


@pytest.mark.parametrize("f", SMOOTH)
@pytest.mark.parametrize("beta", [0.1, 0.5, 1.0])
def test_recoil_recovers_an_expert_occupancy_without_coverage(f, beta):
    """d^E an occupancy and d^S with *no* mass on the expert's pairs: the optimum is d^E."""
    mdp = random_mdp(3)
    dE = discounted_lp(mdp).occupancy
    dS = occupancy_measure(mdp, adversarial_policy(mdp))
    assert np.all(dS[dE > 0] == 0)  # the other data does not cover the expert
    sol = solve_recoil(mdp, dE, dS, beta, f)
    np.testing.assert_allclose(sol.occupancy, dE, atol=1e-10)
    assert sol.divergence_value <= 1e-12


def test_recoil_bad_input():
    mdp = random_mdp(0)
    d = np.full((mdp.S, mdp.A), 1.0 / (mdp.S * mdp.A))
    for beta in (0.0, -0.1, 1.5, "x"):
        with pytest.raises(DualInputError, match="beta"):
            solve_recoil(mdp, d, d, beta)
    with pytest.raises(DualInputError, match="smooth f"):
        solve_recoil(mdp, d, d, 0.5, "tv")
    one = np.zeros_like(d)
    one[:, 0] = 1.0 / mdp.S  # m lives on action 0 only
    with pytest.raises(DualInputError, match="s=0, a=1"):
        recoil_dual_q_value(mdp, np.full(d.shape, 1.0 / mdp.A), one, one, 0.5)
    with pytest.raises(DualInputError, match="d\\^E"):
        solve_recoil(mdp, d * 2, d, 0.5)
    gap = d.copy()
    gap[0] = 0.0  # no data at all at state 0, which mu0 starts in
    gap /= gap.sum()
    with pytest.raises(UncoveredFlowError, match="s=0"):
        solve_recoil(mdp, gap, gap, 0.5)


# ------------------------------------------------------------------------------ SMODICE, exact
def test_smodice_is_kl_to_the_expert_under_coverage():
    """With disc_clip = 0 the objective E_d[log d^E/d^S] - KL(d || d^S) is -KL(d || d^E) and the
    optimum is d^E when d^S covers it; the clip 1e-6 moves it by O(1e-6)."""
    mdp = random_mdp(5)
    dE = discounted_lp(mdp).occupancy
    dS = occupancy_measure(mdp, np.full((mdp.S, mdp.A), 1.0 / mdp.A))
    exact = solve_smodice(mdp, dE, dS, disc_clip=0.0)
    np.testing.assert_allclose(exact.occupancy, dE, atol=1e-10)
    assert abs(exact.primal_value) <= 1e-10  # = -KL(d* || d^E) = 0
    assert abs(exact.gap) <= 1e-9
    clipped = solve_smodice(mdp, dE, dS)
    assert np.max(np.abs(clipped.occupancy - dE)) <= 1e-4
    assert clipped.flow_residual <= 1e-10
    # the state-matching version also pays E_d KL(pi || pi^S): it stays near the uniform policy
    state = solve_smodice(mdp, dE, dS, match="state", disc_clip=0.0)
    v_star = optimal_solution(mdp).value
    assert v_star - policy_values(mdp, state.policy[None])[0] > 0.1
    assert abs(state.gap) <= 1e-9


def test_smodice_without_coverage():
    mdp = random_mdp(5)
    dE = discounted_lp(mdp).occupancy
    dS = occupancy_measure(mdp, adversarial_policy(mdp))
    with pytest.raises(UncoveredFlowError, match="SMODICE"):
        solve_smodice(mdp, dE, dS, disc_clip=0.0)
    sol = solve_smodice(mdp, dE, dS)  # the clipped discriminator: a policy on d^S's actions
    assert np.all(sol.occupancy[dS == 0] == 0)
    v_star = optimal_solution(mdp).value
    floor = v_star - restricted_optimum(mdp, dS > 0)
    sub = v_star - policy_values(mdp, sol.policy[None])[0]
    assert floor > 0.1 and sub >= floor - 1e-9


def test_discriminator_reward():
    e = np.array([[0.5, 0.0], [0.25, 0.25]])
    s = np.array([[0.25, 0.25], [0.0, 0.5]])
    r = discriminator_reward(e, s, disc_clip=0.0)
    np.testing.assert_allclose(r[0, 0], np.log(2.0))
    assert r[0, 1] == -np.inf and r[1, 0] == np.inf
    r_state = discriminator_reward(e, s, match="state", disc_clip=0.0)
    np.testing.assert_allclose(r_state, np.log([[1.0, 1.0], [1.0, 1.0]]))
    with pytest.raises(DualInputError, match="match"):
        discriminator_reward(e, s, match="trajectory")
    with pytest.raises(DualInputError, match="disc_clip"):
        discriminator_reward(e, s, disc_clip=0.5)


# ------------------------------------------------------------------------------ on datasets
@pytest.fixture(scope="module")
def chain():
    return discounted_instance(0)


def test_population_data(chain):
    """Infinite data: ReCOIL imitates exactly in both settings; SMODICE only when covered."""
    v_star = optimal_solution(chain).value
    expert = population_dataset(chain, coverage=1.0)
    for other, smodice_ok in (("uniform", True), ("adversarial", False)):
        data = population_dataset(chain, coverage=0.0, other=other)
        res = recoil(expert, data)
        assert v_star - policy_values(chain, res.policy)[0] <= 1e-8
        assert np.all(np.isnan(res.value_estimate))
        assert res.info["flow_residual"].max() <= 1e-9
        sub = v_star - policy_values(chain, smodice(expert, data).policy)[0]
        assert (sub <= 1e-4) == smodice_ok


def test_datasets_must_match(chain):
    a = make_dataset(chain, 100, coverage=1.0, seeds=2)
    b = make_dataset(chain, 100, coverage=0.0, seeds=3)
    with pytest.raises(DualInputError, match="same model and seeds"):
        recoil(a, b)
    h = make("riverswim:S=6,H=10")
    with pytest.raises(DualInputError, match="discounted"):
        recoil(make_dataset(h, 100, coverage=1.0), make_dataset(h, 100, coverage=0.0))


def test_tl_run_imitation_kind():
    res = tl.run(
        "recoil",
        "random:S=6,A=3,gamma=0.9,seed=3",
        dataset_size=[500, 4000],
        expert_size=[100, 1000],
        other="adversarial",
        seeds=2,
    )
    assert res.suboptimality.shape == (2, 2)
    assert res.config["expert_size"] == [100, 1000]
    assert np.all(res.suboptimality >= -1e-12)
    with pytest.raises(ValueError, match="expert_size"):
        tl.run("recoil", "random:S=6,A=3,gamma=0.9", dataset_size=[10, 20], expert_size=[5])
    seeds_alone = tl.run("smodice", "random:S=6,A=3,gamma=0.9", dataset_size=500, seeds=[1])
    batched = tl.run("smodice", "random:S=6,A=3,gamma=0.9", dataset_size=500, seeds=[0, 1])
    np.testing.assert_allclose(seeds_alone.suboptimality[0], batched.suboptimality[1])


def test_cli_runs_recoil(capsys):
    from theorylab.cli import main

    code = main(
        [
            "run",
            "recoil",
            "random:S=5,A=2,gamma=0.9",
            "-N",
            "400",
            "--expert-size",
            "100",
            "--other",
            "adversarial",
            "--seeds",
            "2",
            "--no-progress",
        ]
    )
    assert code == 0
    assert "recoil" in capsys.readouterr().out


# ------------------------------------------------------------------------------ behaviour KL
def test_behaviour_kl_limits():
    """lam -> inf: the behaviour policy's value; lam -> 0: the optimum over its support."""
    mdp = random_mdp(7)
    pi_b = np.random.default_rng(7).dirichlet(np.ones(mdp.A), size=mdp.S)
    v_b = float(evaluate_discounted(mdp, pi_b) @ mdp.mu0)
    big = solve_behaviour_kl(mdp, pi_b, 1e4)["value"]
    assert abs(big - v_b) <= 1e-3
    small = solve_behaviour_kl(mdp, pi_b, 1e-4)["value"]
    v_star = restricted_optimum(mdp, pi_b > 0)
    assert v_star - 1e-2 <= small <= v_star + 1e-7
    with pytest.raises(DualInputError, match="row s=0"):
        solve_behaviour_kl(mdp, pi_b * 2, 1.0)


# ------------------------------------------------------------------------------ the controls
def test_controls_fail_the_claims():
    for claim, control, check in (
        (
            RecoilRelaxedCoverage(),
            "recoil-reference-without-expert",
            "ReCOIL recovers the expert (population, covered and uncovered)",
        ),
        (
            FDVLSoftFixedPoint(),
            "f-dvl-unweighted-value-step",
            "f-DVL fixed point = behaviour-KL optimum",
        ),
    ):
        small = replace(claim, scales={"quick": {**claim.scales["quick"], "mdps": 1}})
        with get_control(control).applied(small):
            report = small.run("quick")
        assert not report.passed
        assert not {c.name: c.passed for c in report.checks}[check]
