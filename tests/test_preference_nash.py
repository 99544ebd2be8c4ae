"""General preferences: vN winner LP, regularised equilibrium, OMD / INPO dynamics."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import minimize
from scipy.special import softmax

from theorylab.algorithms.preference.nash import (
    NashError,
    duality_gap,
    exploitability,
    inpo_population_loss,
    omd_dynamics,
    regularised_equilibrium,
    sampled_omd,
    von_neumann_winner,
)
from theorylab.mdps.preference import PreferenceMatrixOracle, btl_matrix, cyclic_preference_matrix
from theorylab.seeding import generators

REF = np.full(4, 0.25)


@settings(max_examples=20)
@given(a=st.floats(0.02, 0.5), b=st.floats(0.02, 0.5), c=st.floats(0.02, 0.5))
def test_vn_winner_matches_closed_form_on_cycles(a, b, c):
    P = cyclic_preference_matrix(a, b, c)
    p, v = von_neumann_winner(P)
    np.testing.assert_allclose(p, np.array([c, b, a, 0.0]) / (a + b + c), atol=1e-8)
    assert v == pytest.approx(0.5, abs=1e-9)
    assert exploitability(P, p) == pytest.approx(0.0, abs=1e-8)


def test_vn_winner_of_btl_is_the_best_item():
    p, v = von_neumann_winner(btl_matrix([0.1, 0.9, -0.3]))
    np.testing.assert_allclose(p, [0, 1, 0], atol=1e-9)
    assert v == pytest.approx(0.5, abs=1e-12)


def test_gap_formula_against_brute_force_best_responses():
    """The closed-form gap equals max_x J(x, pi) - min_y J(pi, y) found by a numerical search
    over the simplex (softmax logits, BFGS)."""
    P = cyclic_preference_matrix()
    rng = np.random.default_rng(1)
    pi, tau = rng.dirichlet(np.ones(4)), 0.3

    def J(x, y):
        kl = lambda p: float((p * np.log(p / REF)).sum())  # noqa: E731
        return x @ P @ y - tau * kl(x) + tau * kl(y)

    best = -minimize(lambda z: -J(softmax(z), pi), np.zeros(4), method="BFGS").fun
    worst = minimize(lambda z: J(pi, softmax(z)), np.zeros(4), method="BFGS").fun
    assert duality_gap(P, pi, REF, tau) == pytest.approx(best - worst, abs=1e-7)


def test_omd_last_iterate_converges_to_the_regularised_equilibrium():
    P = cyclic_preference_matrix()
    star = regularised_equilibrium(P, REF, 0.2)
    assert duality_gap(P, star, REF, 0.2) == pytest.approx(0.0, abs=1e-14)
    d = omd_dynamics(P, REF, 0.2, 0.5, 400)
    assert np.abs(d.iterates[-1] - star).max() < 1e-12
    assert d.gap[-1] < 1e-12 and d.gap[0] > 0.05
    assert (np.diff(d.gap[:50]) < 0).all()  # monotone early on: linear convergence


def test_hedge_average_converges_but_last_iterate_cycles():
    """tau = 0: the average iterate's exploitability falls, the last iterate's does not (the
    negative control of the no-regret claim)."""
    P = cyclic_preference_matrix()
    d = omd_dynamics(P, REF, 0.0, 0.05, 20_000)
    assert d.average_gap[-1] < 0.005 < d.average_gap[100]
    assert d.gap[-5000:].min() > 0.03  # the last iterate keeps circling (measured min 0.038)


def test_inpo_loss_minimiser_is_the_omd_step():
    P = cyclic_preference_matrix()
    pi_t = np.array([0.1, 0.2, 0.3, 0.4])
    eta, tau = 0.5, 0.2
    step = softmax((1 - eta * tau) * np.log(pi_t) + eta * tau * np.log(REF) + eta * (P @ pi_t))
    res = minimize(
        lambda z: inpo_population_loss(z, pi_t, REF, P, eta, tau),
        np.zeros(4),
        method="BFGS",
        options={"gtol": 1e-12},
    )
    np.testing.assert_allclose(softmax(res.x), step, atol=1e-8)


def test_sampled_omd_counts_queries_and_is_seed_reproducible():
    P = cyclic_preference_matrix()
    o1 = PreferenceMatrixOracle(P, generators(3, range(3), 1))
    d1 = sampled_omd(o1, REF, 0.2, 0.2, 60, 40)
    o2 = PreferenceMatrixOracle(P, generators(3, [1], 1))
    d2 = sampled_omd(o2, REF, 0.2, 0.2, 60, 40)
    np.testing.assert_array_equal(d1.iterates[1], d2.iterates[0])
    assert d1.queries.tolist() == [60 * 4 * 40] * 3
    assert (d1.gap[:, -1] < 0.1 * d1.gap[:, 0]).all()


def test_bad_input():
    P = cyclic_preference_matrix()
    with pytest.raises(NashError, match="eta \\* tau < 1"):
        omd_dynamics(P, REF, 0.5, 3.0, 10)
    with pytest.raises(NashError, match=r"pi_ref\[2\] = 0"):
        omd_dynamics(P, [0.5, 0.5, 0.0, 0.0], 0.1, 0.1, 10)
    with pytest.raises(NashError, match="tau must be > 0"):
        regularised_equilibrium(P, REF, 0.0)


def test_inpo_step_minimises_the_empirical_loss_on_sampled_pairs():
    """INPO's loss on a finite set of labelled pairs, minimised by BFGS over the logits, has the
    same minimiser as the least-squares solve of ``inpo_step``."""
    from theorylab.algorithms.preference.nash import inpo_step

    rng = np.random.default_rng(5)
    pi_t = np.array([0.1, 0.2, 0.3, 0.4])
    eta, tau = 0.5, 0.2
    wins = rng.integers(0, 5, size=(4, 4)).astype(float)
    np.fill_diagonal(wins, 0.0)
    base = (1 - eta * tau) * np.log(pi_t) + eta * tau * np.log(REF)

    def loss(z):  # written from INPO's h: log pi(y)/pi(y') - the same for the prior
        h = (z[:, None] - z[None, :]) - (base[:, None] - base[None, :])
        return float((wins * (h - eta / 2) ** 2).sum())

    res = minimize(loss, np.zeros(4), method="BFGS", options={"gtol": 1e-12})
    got = inpo_step(pi_t, wins, np.log(REF), eta, tau)
    np.testing.assert_allclose(got, softmax(res.x), atol=1e-7)


def test_registered_inpo_runs_inpos_loss_and_matches_omd():
    """Issue 26: the registered inpo minimises INPO's loss (nash.inpo_step) at every iteration,
    and with exact expectations its iterates are exact OMD's."""
    import theorylab as tl
    from theorylab.algorithms.preference import nash

    calls = []
    original = nash.inpo_step

    def counting(*args):
        calls.append(1)
        return original(*args)

    nash.inpo_step = counting
    try:
        res = tl.run("inpo", "cyclic-preferences", iterations=50, tau=0.2, eta=0.5)
    finally:
        nash.inpo_step = original
    assert len(calls) == 50
    P = cyclic_preference_matrix()
    ref = omd_dynamics(P, REF, 0.2, 0.5, 50)
    np.testing.assert_allclose(res.values[0], ref.gap, atol=1e-13)
