"""Tests of theorylab.bounds: Bound, exponents, evaluation, safe parsing, the registry, the docs."""

from __future__ import annotations

import ast
import builtins
import json
import math
import os
from pathlib import Path

import numpy as np
import pytest
import sympy as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from theorylab.bounds import (
    BOUNDS,
    LOWER_BOUNDS,
    PROVENANCE,
    VOCABULARY,
    Bound,
    BoundEvaluationError,
    BoundParseError,
    ExponentError,
    Source,
    all_bounds,
    get_bound,
    list_bounds,
    parse_bound_expression,
)
from theorylab.bounds.exponent import exponent as raw_exponent
from theorylab.bounds.exponent import leading_terms
from theorylab.bounds.registry import markdown_table, with_current_table
from theorylab.bounds.vocabulary import SYMBOLS
from theorylab.errors import UnknownNameError

ROOT = Path(__file__).resolve().parents[1]
HALF = sp.Rational(1, 2)

EXPECTED_NAMES = {
    "azar2017-thm1",
    "azar2017-thm2",
    "ajks-thm7.1",
    "ajks-thm7.1-delta",
    "ajks-thm7.6",
    "lower-stationary",
    "lower-stage-dependent",
    "lower-stage-dependent-pac",
    "jin2018-ucb-hoeffding",
    "jin2018-ucb-bernstein",
    "psrl-osband2013",
    "jin2020-lsvi-ucb",
    "lower-linear-mdp",
    "oful-abbasi2011",
    "lmc-lsvi",
    "rep-ucb-arxiv",
    "rep-ucb-earlier",
    "pevi-linear",
    "pevi-well-explored",
    "vi-lcb-upper",
    "vi-lcb-lower",
    "vi-lcb-lower-near-expert",
    "li2022-offline-finite-horizon",
    "li2022-offline-discounted",
    "wang2023-cvar-general",
    "wang2023-cvar-continuous",
    "wang2023-cvar-lower",
    "du2023-icvar-thm1",
    "du2023-icvar-lower-visitation",
    "du2023-icvar-lower-exponential",
    "du2023-maxwp",
    "xiong2023-linpevi-adv-plus",
    "zhao2024-cvar-lowrank-h7",
    "zhao2024-cvar-lowrank-h2",
    "auer2002-exp3-cor3.2",
    "anand-qu2024-subsample-q",
    "auer2002-ucb1-thm1",
    "zjj-thm3.2",
    "psl-dueling-known",
    "psl-dueling-unknown",
    "zhan2024-regime-queries",
    "jaksch2010-ucrl2-thm2",
    "wang2023-avg-sample-complexity",
    "wang2023-avg-earlier-upper",
    "he2024-loop-regret",
    "sukhija2024-neorl-regret",
    "chen2024-icvar-l-thm1",
    "chen2024-icvar-l-lower",
    "md-vi-thm1",
    "avi-error-propagation",
    "gshf-offline-pessimism",
    "xu2023-config-regret",  # 000#39 CONFIG (gp31)
    "mutti2024-c-psrl-thm1",  # 001#72 C-PSRL (task cards)
    "metelli2023-us-irl",  # 001#2 US-IRL, upper (radius derived here, [A])
    "metelli2023-irl-lower",  # 001#2 US-IRL, the abstract's lower bound [A]
}

S, A, K, H, eps, gamma, N = (SYMBOLS[n] for n in ("S", "A", "K", "H", "eps", "gamma", "N"))


# ---------------------------------------------------------------------------------------------
# registry and card metadata
# ---------------------------------------------------------------------------------------------
def test_registry_lists_every_card():
    assert set(list_bounds()) == EXPECTED_NAMES
    assert list_bounds() == sorted(list_bounds())
    assert [b.name for b in all_bounds()] == list_bounds()


def test_get_bound_is_case_insensitive_and_unknown_names_list_the_registry():
    assert get_bound("AZAR2017-THM1") is get_bound("azar2017-thm1")
    with pytest.raises(UnknownNameError, match="azar2017-thm1") as info:
        get_bound("azar2017-thm9")
    assert "unknown bound 'azar2017-thm9'" in str(info.value)


def test_registry_summary_and_make_are_wired_to_the_bound():
    b = get_bound("azar2017-thm1")
    assert BOUNDS.summary("azar2017-thm1") == b.summary()
    assert BOUNDS.make("azar2017-thm1") is b
    line = b.summary()
    assert "\n" not in line and "[V]" in line and "Azar" in line and "regret" in line


@pytest.mark.parametrize("name", sorted(EXPECTED_NAMES))
def test_every_card_is_complete(name):
    b = get_bound(name)
    assert b.kind in ("upper", "lower")
    assert b.quantity in ("regret", "suboptimality", "sample_complexity")
    assert b.provenance in {"V", "A", "S", "M"} and b.provenance in PROVENANCE
    assert isinstance(b.source, Source)
    # year >= 2010 catches typos; EXP3 and UCB1 (2002), the bandit bounds of 002-004#D3 and B3,
    # are the classics
    assert b.source.authors and b.source.title
    assert b.source.year >= 2010 or name in ("auer2002-exp3-cor3.2", "auer2002-ucb1-thm1")
    assert b.source.arxiv or b.source.venue
    assert b.probability.strip() and b.setting.strip() and b.version.strip()
    # the variables come from the vocabulary and are quantities or unspecified constants
    for n in b.variables:
        assert n in VOCABULARY
        assert VOCABULARY[n].role in ("quantity", "constant")
    for n in b.printed_variables:
        assert n in VOCABULARY
    # the order drops constants; lower bounds with an unknown constant carry it as a symbol
    assert not any(VOCABULARY[s.name].role == "constant" for s in b.order.free_symbols)
    assert b.rate_variable is not None
    # one-line summary, LaTeX, str
    assert "\n" not in b.summary()
    assert b.latex() and b.latex(form="order") and b.latex(form="full")
    assert name in str(b)


@pytest.mark.parametrize("name", sorted(EXPECTED_NAMES))
def test_every_card_round_trips_through_json_and_the_safe_parser(name):
    b = get_bound(name)
    data = json.loads(json.dumps(b.to_dict()))
    assert data["name"] == name and data["provenance"] == b.provenance
    rebuilt = Bound.from_dict(data)
    assert rebuilt.expr == b.expr and rebuilt.order == b.order
    for e in (b.printed, b.order_printed, b.expr, b.order):
        assert parse_bound_expression(str(e)) == e


def test_provenance_tags_say_what_was_checked():
    for name in ("jin2018-ucb-hoeffding", "jin2018-ucb-bernstein"):
        b = get_bound(name)
        # the statements were read in the full text [V]; the paper's constant is an unnamed
        # "absolute constant", so the card keeps a free C and says so
        assert b.provenance == "V"
        assert "1807.03765" in " ".join(b.notes) and "absolute constant" in " ".join(b.notes)
        assert b.constants == ("C",)
    assert get_bound("rep-ucb-arxiv").provenance == "V"  # Theorem 4 of arXiv v3 read
    assert "0.121" in get_bound("lmc-lsvi").probability  # Theorem 4.2's delta restriction [S]
    assert get_bound("psrl-osband2013").provenance == "M"
    assert get_bound("psrl-osband2013").probability.startswith("Bayesian")
    assert get_bound("oful-abbasi2011").provenance == "M"
    assert get_bound("lmc-lsvi").provenance == "A"
    # both printed versions of the two-version bounds are registered, with different rates
    assert get_bound("rep-ucb-arxiv").exponent("gamma") == -5
    assert get_bound("rep-ucb-earlier").exponent("gamma") == -3
    assert get_bound("zhao2024-cvar-lowrank-h7").exponent("H") == 7
    assert get_bound("zhao2024-cvar-lowrank-h2").exponent("H") == 2
    # Azar's erratum-level issues travel with the cards
    for name in ("azar2017-thm1", "azar2017-thm2"):
        notes = " ".join(get_bound(name).notes)
        assert "Eq. (11)" in notes and "2500" in notes and "4H^2 L" in notes


# ---------------------------------------------------------------------------------------------
# exponents
# ---------------------------------------------------------------------------------------------
def test_azar_exponents_in_k_are_one_half():
    for name in ("azar2017-thm1", "azar2017-thm2"):
        b = get_bound(name)
        assert b.exponent("K") == HALF
        assert b.exponent("K", form="full") == HALF
        assert float(b.exponent("K")) == 0.5


def test_azar_thm1_exponent_in_s_order_versus_full_expression():
    b = get_bound("azar2017-thm1")
    assert b.exponent("S") == HALF  # the stated rate H sqrt(SAT)
    assert b.exponent("S", form="full") == 2  # S -> oo at fixed K: the burn-in S^2 term wins
    assert b.exponent("S", form="full", leading_in="K") == HALF  # the term leading in K
    assert (
        b.exponent("A", form="full") == 1 and b.exponent("A", form="full", leading_in="K") == HALF
    )


def test_exponents_at_fixed_k_versus_fixed_t():
    b = get_bound("azar2017-thm2")  # sqrt(HSAT) with T = KH is H sqrt(SAK)
    assert b.exponent("H") == 1
    assert b.exponent("H", form="order_printed") == HALF
    assert b.exponent("T", form="order_printed") == HALF
    with pytest.raises(ExponentError, match="T was substituted"):
        b.exponent("T")


def test_logs_and_constants_count_zero():
    assert get_bound("azar2017-thm1").exponent("delta", form="full") == 0
    lower = get_bound("lower-stationary")
    assert lower.constants == ("c",)
    assert lower.exponent("K") == HALF and lower.exponent("K", form="full") == HALF
    assert lower.exponent("c") == 0  # the order has no constant
    assert get_bound("azar2017-thm1").exponent("d") == 0  # not a variable of the bound


def test_structural_exponent_agrees_with_sympy_limit():
    f = get_bound("azar2017-thm1").expr
    pos = {s: sp.Symbol(s.name, positive=True) for s in f.free_symbols}
    g = f.xreplace(pos)
    for name in ("K", "S"):
        x = pos[SYMBOLS[name]]
        limit = sp.limit(x * sp.diff(sp.log(g), x), x, sp.oo)
        assert raw_exponent(f, SYMBOLS[name]) == limit


def test_exponent_definition_on_small_expressions():
    x = SYMBOLS["K"]
    assert raw_exponent(x**2 + x, x) == 2
    assert raw_exponent(sp.sqrt(x) * sp.log(x) ** 2, x) == HALF
    assert raw_exponent(sp.log(1 + 1 / x), x) == -1  # log(1 + 1/x) ~ 1/x
    assert raw_exponent(2**x, x) == sp.oo
    assert raw_exponent(1 / eps**2 + 1 / eps, eps) == -2  # eps -> 0+: the eps^-2 term wins
    assert raw_exponent(sp.log(1 / eps) / eps**2, eps) == -2
    assert raw_exponent((1 - gamma) ** -5, gamma) == -5  # in (1 - gamma)
    m = sp.Min(1 / (1 - gamma), sp.sqrt(S / ((1 - gamma) ** 5 * N)))
    assert raw_exponent(m, N) == -HALF
    assert raw_exponent(m, gamma) == -1  # the trivial branch 1/(1-gamma) is active as gamma -> 1
    assert leading_terms(20 * x**HALF * S + 250 * S**2, x) == 20 * x**HALF * S


@settings(max_examples=25, deadline=None)
@given(
    a=st.fractions(min_value=-3, max_value=3, max_denominator=2),
    b=st.fractions(min_value=-3, max_value=3, max_denominator=2),
    e=st.fractions(min_value=-3, max_value=3, max_denominator=2),
    k=st.integers(min_value=0, max_value=3),
)
def test_exponent_of_a_monomial_with_log_factors_is_its_power(a, b, e, k):
    a, b, e = (sp.Rational(v.numerator, v.denominator) for v in (a, b, e))
    f = 7 * S**a * K**b * eps**e * sp.log(S * K / eps) ** k
    assert raw_exponent(f, S) == a
    assert raw_exponent(f, K) == b
    assert raw_exponent(f, eps) == e


def test_rates_of_the_registered_bounds():
    regret_sqrt_k = [
        b
        for b in all_bounds()
        if b.quantity == "regret"
        and b.name
        not in (
            "oful-abbasi2011",
            "du2023-maxwp",
            "jaksch2010-ucrl2-thm2",
            "he2024-loop-regret",
            "sukhija2024-neorl-regret",
            "auer2002-ucb1-thm1",
            "xu2023-config-regret",
        )
    ]
    for b in regret_sqrt_k:
        assert b.exponent("K") == HALF, b.name
    maxwp = get_bound("du2023-maxwp")  # constant in K (Du et al. Theorem 4)
    assert maxwp.rate_variable == "K" and maxwp.exponent("K") == 0
    assert get_bound("oful-abbasi2011").exponent("T") == HALF
    ucb1 = get_bound("auer2002-ucb1-thm1")  # gap-dependent: logarithmic in the pulls
    assert ucb1.exponent("K") == 0 and ucb1.exponent("inv_gap_sum") == 1
    ucrl2 = get_bound("jaksch2010-ucrl2-thm2")  # average reward: T steps, no episodes
    assert ucrl2.exponent("T") == HALF and ucrl2.exponent("D") == 1 and ucrl2.exponent("S") == 1
    assert get_bound("wang2023-avg-sample-complexity").exponent("t_mix") == 1
    for name in ("he2024-loop-regret", "sukhija2024-neorl-regret"):  # T steps, no episodes
        assert get_bound(name).exponent("T") == HALF
    config = get_bound("xu2023-config-regret")  # T rounds; gamma_T an instance number
    assert config.exponent("T") == HALF and config.exponent("gamma_T") == HALF
    assert get_bound("wang2023-avg-earlier-upper").exponent("t_mix") == 2
    for b in all_bounds():
        if b.quantity == "sample_complexity":
            assert b.exponent("eps") == -2, b.name
    assert get_bound("jin2020-lsvi-ucb").exponent("d") == sp.Rational(3, 2)
    assert get_bound("wang2023-cvar-general").exponent("tau") == -1
    assert get_bound("wang2023-cvar-continuous").exponent("tau") == -HALF
    assert get_bound("vi-lcb-upper").exponent("N") == -HALF
    assert get_bound("vi-lcb-upper").exponent("gamma") == sp.Rational(-5, 2)
    assert get_bound("pevi-well-explored").exponent("K") == -HALF
    icvar = get_bound("du2023-icvar-lower-exponential")
    assert sp.simplify(icvar.exponent("alpha") - (1 - SYMBOLS["H"]) / 2) == 0
    with pytest.raises(ExponentError):
        icvar.exponent("H")  # exponential in H, growing only if alpha < 1


# ---------------------------------------------------------------------------------------------
# evaluation
# ---------------------------------------------------------------------------------------------
def test_azar_thm1_against_hand_arithmetic():
    # S=6, A=2, H=20, K=1000, delta=0.1:  T = K*H = 20000
    # L = ln(5*H*S*A*T/delta) = ln(5*20*6*2*20000/0.1) = ln(240_000_000) = 19.29615...
    L = math.log(240_000_000)
    # 20*H^(3/2)*L*sqrt(S*A*K) = 20 * 20^1.5 * L * sqrt(12000)   ~ 3.78e6
    # 250*H^2*S^2*A*L^2       = 250*400*36*2 * L^2 = 7_200_000 * L^2 ~ 2.68e9
    expected = 20 * 20**1.5 * L * math.sqrt(12000) + 7_200_000 * L**2
    value = get_bound("azar2017-thm1").evaluate(S=6, A=2, H=20, K=1000, delta=0.1)
    assert isinstance(value, float)
    assert value == pytest.approx(expected, rel=1e-12)
    assert value == pytest.approx(2.6846392e9, rel=1e-7)


def test_azar_thm2_against_hand_arithmetic():
    # same point; L = ln(240_000_000)
    L = math.log(240_000_000)
    # 30*H*L*sqrt(SAK) + 2500*H^2*S^2*A*L^2 + 4*H^(3/2)*sqrt(K*L)
    # = 30*20*L*sqrt(12000) + 2500*400*36*2*L^2 + 4*20^1.5*sqrt(1000*L)
    expected = 600 * L * math.sqrt(12000) + 72_000_000 * L**2 + 4 * 20**1.5 * math.sqrt(1000 * L)
    value = get_bound("azar2017-thm2").evaluate(S=6, A=2, H=20, K=1000, delta=0.1)
    assert value == pytest.approx(expected, rel=1e-12)


def test_other_cards_against_hand_arithmetic():
    # LSVI-UCB, C=1, d=4, H=10, K=100, delta=0.05: T = 1000, iota = ln(2*4*1000/0.05) = ln(160000)
    # sqrt(d^3 H^3 T iota^2) = sqrt(64 * 1000 * 1000) * iota = 8000 * iota
    v = get_bound("jin2020-lsvi-ucb").evaluate(C=1, d=4, H=10, K=100, delta=0.05)
    assert v == pytest.approx(8000 * math.log(160000), rel=1e-12)
    # Wang-Kallus-Sun general, C=1, S=5, A=3, K=400, tau=0.25: sqrt(6000) / 0.25
    v = get_bound("wang2023-cvar-general").evaluate(C=1, S=5, A=3, K=400, tau=0.25)
    assert v == pytest.approx(math.sqrt(6000) / 0.25, rel=1e-12)
    # Rep-UCB (arXiv), C=1, A=2, d=3, eps=0.1, gamma=0.9: 2^2 * 3^4 / (0.01 * 0.1^5) = 3.24e9
    v = get_bound("rep-ucb-arxiv").evaluate(C=1, A=2, d=3, eps=0.1, gamma=0.9)
    assert v == pytest.approx(3.24e9, rel=1e-9)
    # Du et al. exponential lower bound, c=1, A=2, K=100, alpha=0.5, H=5: sqrt(200 / 0.5^4)
    v = get_bound("du2023-icvar-lower-exponential").evaluate(c=1, A=2, K=100, alpha=0.5, H=5)
    assert v == pytest.approx(math.sqrt(3200), rel=1e-12)
    # AJKS Theorem 7.6 at S=2, A=2, H=3, K=10: with Lg = ln(S*A*H^2*K^2) = ln(3600)
    # 8e*H^2*sqrt(SAK)*sqrt(Lg) + 2e*H^3*S^2*A*ln(K)*Lg
    lg = math.log(3600)
    expected = (
        8 * math.e * 9 * math.sqrt(40) * math.sqrt(lg) + 2 * math.e * 27 * 8 * math.log(10) * lg
    )
    v = get_bound("ajks-thm7.6").evaluate(S=2, A=2, H=3, K=10)
    assert v == pytest.approx(expected, rel=1e-12)


def test_ajks_theorem_7_1_has_the_log_inside_the_root():
    """Issue 14 item 2: the typeset theorem (AJKS p. 75) and its proof (p. 78) give
    10 H^2 S sqrt(AK ln(SAH^2K^2)) + 2 at delta = 1/(KH), and
    10 H^2 S sqrt(AK ln(SAHK/delta)) + 2 delta K H at any delta. The former card had the log
    outside the root, 4.5x larger at S = 4, A = 2, H = 4, K = 2000."""
    S_, A_, H_, K_ = 4, 2, 4, 2000
    inside = 10 * H_**2 * S_ * math.sqrt(A_ * K_ * math.log(S_ * A_ * H_**2 * K_**2)) + 2
    outside = 10 * H_**2 * S_ * math.sqrt(A_ * K_) * math.log(S_ * A_ * H_**2 * K_**2)
    assert outside / inside == pytest.approx(4.48, abs=0.01)
    v = get_bound("ajks-thm7.1").evaluate(S=S_, A=A_, H=H_, K=K_)
    assert v == pytest.approx(inside, rel=1e-12)
    delta = 0.1
    with_delta = 10 * H_**2 * S_ * math.sqrt(A_ * K_ * math.log(S_ * A_ * H_ * K_ / delta))
    v = get_bound("ajks-thm7.1-delta").evaluate(S=S_, A=A_, H=H_, K=K_, delta=delta)
    assert v == pytest.approx(with_delta + 2 * delta * K_ * H_, rel=1e-12)
    # at delta = 1/(KH) the two cards agree
    v = get_bound("ajks-thm7.1-delta").evaluate(S=S_, A=A_, H=H_, K=K_, delta=1 / (K_ * H_))
    assert v == pytest.approx(inside, rel=1e-12)
    assert get_bound("ajks-thm7.1").probability.startswith("expectation")


def test_vectorised_evaluation_equals_scalar_evaluation():
    b = get_bound("azar2017-thm1")
    ks = np.arange(1, 1001)
    values = b.evaluate(S=6, A=2, H=20, K=ks, delta=0.1)
    assert isinstance(values, np.ndarray) and values.shape == (1000,)
    for k in (1, 2, 17, 500, 1000):
        assert values[k - 1] == pytest.approx(b.evaluate(S=6, A=2, H=20, K=k, delta=0.1), rel=1e-13)
    # broadcasting across two arrays, and a bound with min(...)
    icvar = get_bound("du2023-icvar-thm1")
    alphas = np.array([[0.1], [0.5], [1.0]])
    grid = icvar.evaluate(C=1, S=5, A=3, H=10, K=ks[:4], delta=0.1, alpha=alphas, w_min=0.01)
    assert grid.shape == (3, 4)
    one = icvar.evaluate(C=1, S=5, A=3, H=10, K=3, delta=0.1, alpha=0.5, w_min=0.01)
    assert grid[1, 2] == pytest.approx(one, rel=1e-13)
    # order evaluation drops constants and logs
    assert b.evaluate_order(S=6, A=2, H=20, K=1000) == pytest.approx(20**1.5 * math.sqrt(12000))


def test_evaluation_errors_name_what_is_wrong():
    b = get_bound("azar2017-thm1")
    with pytest.raises(BoundEvaluationError, match=r"missing value\(s\) for \['K', 'delta'\]"):
        b.evaluate(S=6, A=2, H=20)
    with pytest.raises(BoundEvaluationError, match=r"unknown variable\(s\) \['k'\]"):
        b.evaluate(S=6, A=2, H=20, k=10, delta=0.1)
    with pytest.raises(BoundEvaluationError, match="T cannot be given"):
        b.evaluate(S=6, A=2, H=20, K=10, T=200, delta=0.1)
    with pytest.raises(BoundEvaluationError, match=r"delta=1.5 is outside the domain \(0, 1\)"):
        b.evaluate(S=6, A=2, H=20, K=10, delta=1.5)
    with pytest.raises(BoundEvaluationError, match="outside the domain"):
        b.evaluate(S=6, A=2, H=20, K=np.array([1.0, np.nan]), delta=0.1)
    with pytest.raises(BoundEvaluationError, match="unspecified absolute constant"):
        get_bound("lower-stationary").evaluate(S=6, A=2, H=20, K=10)
    # unused vocabulary names are accepted (one parameter dict serves several bounds)
    assert b.evaluate(S=6, A=2, H=20, K=10, delta=0.1, d=3, c=1) > 0


# ---------------------------------------------------------------------------------------------
# lower bounds against the matching upper bounds
# ---------------------------------------------------------------------------------------------
# A lower bound's absolute constant c is unknown, so comparing it numerically with an upper bound
# is meaningful only as a shape check: constants set to 1, inside the lower bound's regime, for
# many episodes. The constant-free comparison is of exponents in the rate variable.
PAIR_POINTS = {
    "azar2017-thm1": dict(S=6, A=2, H=20, delta=0.1),
    "azar2017-thm2": dict(S=6, A=2, H=20, delta=0.1),
    "ajks-thm7.1": dict(S=6, A=2, H=20),
    "ajks-thm7.1-delta": dict(S=6, A=2, H=20, delta=0.1),
    "ajks-thm7.6": dict(S=6, A=2, H=20),
    "jin2018-ucb-hoeffding": dict(S=6, A=2, H=20, delta=0.1),
    "jin2018-ucb-bernstein": dict(S=6, A=2, H=20, delta=0.1),
    "jin2020-lsvi-ucb": dict(d=5, H=10, delta=0.1),
    "lmc-lsvi": dict(d=5, H=10),
    "wang2023-cvar-general": dict(S=6, A=2, tau=0.1),
    "wang2023-cvar-continuous": dict(S=6, A=2, tau=0.1),
    # regime of the visitation lower bound: w_min > alpha^(H-1) = 0.5^9 ~ 0.002
    "du2023-icvar-thm1": dict(S=6, A=2, H=10, delta=0.1, alpha=0.5, w_min=0.05),
    "chen2024-icvar-l-thm1": dict(d=4, H=3, alpha=0.25),
}


@pytest.mark.parametrize("upper_name", sorted(LOWER_BOUNDS))
def test_lower_bounds_stay_below_the_matching_upper_bounds(upper_name):
    upper, lower = get_bound(upper_name), get_bound(LOWER_BOUNDS[upper_name])
    assert upper.kind == "upper" and lower.kind == "lower"
    assert upper.quantity == lower.quantity
    rate = upper.rate_variable
    assert rate == lower.rate_variable
    # constant-free: the lower bound does not grow faster than the upper bound
    assert lower.exponent(rate) <= upper.exponent(rate)
    if upper_name == "vi-lcb-upper":
        grid = dict(N=np.logspace(1, 8, 30), S=10, C_star=2.5, gamma=0.9)
    else:
        grid = dict(K=np.logspace(2, 7, 30), **PAIR_POINTS[upper_name])
    ones = {n: 1.0 for n in ("c", "C", "c_prime")}
    up = upper.evaluate(**grid, **ones)
    low = lower.evaluate(**grid, **ones)
    assert np.all(low <= up)


def test_azar_thm2_matches_the_stationary_lower_bound_in_rate():
    # Theorem 2's stated rate is the lower bound's rate: O~(sqrt(HSAT)) vs Omega(sqrt(HSAT))
    upper, lower = get_bound("azar2017-thm2"), get_bound("lower-stationary")
    assert sp.simplify(upper.order - lower.order) == 0
    for var in ("S", "A", "H", "K"):
        assert upper.exponent(var) == lower.exponent(var)


# ---------------------------------------------------------------------------------------------
# LaTeX
# ---------------------------------------------------------------------------------------------
def test_latex_renders():
    b = get_bound("azar2017-thm1")
    text = b.latex(definitions=True)
    assert r"\sqrt{A K S}" in text and r"H^{\frac{3}{2}}" in text
    assert r"L = \ln{\left(\frac{5 A H S T}{\delta} \right)}" in text and "T = H K" in text
    assert r"\varepsilon" in get_bound("rep-ucb-arxiv").latex()
    assert r"C^{\star}" in get_bound("vi-lcb-upper").latex()
    assert r"\min" in get_bound("vi-lcb-upper").latex()
    assert r"\tau" in get_bound("wang2023-cvar-general").latex()


# ---------------------------------------------------------------------------------------------
# Bound construction
# ---------------------------------------------------------------------------------------------
def _fields(**over):
    fields = dict(
        name="test-bound",
        printed="C*sqrt(S*A*T*iota)",
        definitions={"iota": "log(S*A*T/delta)", "T": "K*H"},
        order_printed="sqrt(S*A*T)",
        kind="upper",
        quantity="regret",
        probability="1 - delta",
        setting="test",
        source=Source(authors="A, B", title="T", venue="V", year=2020),
        provenance="M",
        version="test",
    )
    fields.update(over)
    return fields


def test_bound_construction_validates_its_fields():
    b = Bound(**_fields())
    assert b.variables == ("S", "A", "H", "K", "delta", "C")
    assert b.exponent("K") == HALF
    with pytest.raises(ValueError, match="kind"):
        Bound(**_fields(kind="both"))
    with pytest.raises(ValueError, match="provenance"):
        Bound(**_fields(provenance="X"))
    with pytest.raises(ValueError, match="quantity"):
        Bound(**_fields(quantity="loss"))
    with pytest.raises(ValueError, match=r"uses \['iota'\] without a definition"):
        Bound(**_fields(definitions={"T": "K*H"}))
    with pytest.raises(ValueError, match="the order must drop constants"):
        Bound(**_fields(order_printed="C*sqrt(S*A*T)"))
    with pytest.raises(BoundParseError, match="unknown name 'q'"):
        Bound(**_fields(printed="q*S"))
    with pytest.raises(ValueError, match="lower case"):
        Bound(**_fields(name="Test Bound"))
    # symbols built elsewhere (with assumptions) are mapped onto the vocabulary's symbols
    s_pos, k_pos = sp.Symbol("S", positive=True), sp.Symbol("K", positive=True)
    built = Bound(**_fields(printed=sp.sqrt(s_pos * k_pos), definitions={}, order_printed="S"))
    assert built.variables == ("S", "K") and built.evaluate(S=4, K=9) == 6.0


# ---------------------------------------------------------------------------------------------
# safe parsing
# ---------------------------------------------------------------------------------------------
def test_parser_grammar():
    x, y = sp.symbols("x y")
    table = {"x": x, "y": y}
    assert parse_bound_expression("-x^2", table) == -(x**2)
    assert parse_bound_expression("2^3^2", table) == 512  # right-associative
    assert parse_bound_expression("2**-1", table) == HALF
    assert parse_bound_expression("x/y/2", table) == x / (2 * y)
    assert parse_bound_expression("1.5e-1*x", table) == sp.Rational(3, 20) * x  # exact
    assert parse_bound_expression("sqrt(x)*ln(y) - log(x)", table) == sp.sqrt(x) * sp.log(
        y
    ) - sp.log(x)
    assert parse_bound_expression("min(x, y, 2)", table) == sp.Min(x, y, 2)
    assert parse_bound_expression("Max(x, y)", table) == sp.Max(x, y)
    assert parse_bound_expression("abs(-x) + exp(y)", table) == sp.Abs(x) + sp.exp(y)
    assert parse_bound_expression("8*e*x + pi", table) == 8 * sp.E * x + sp.pi
    assert parse_bound_expression("  ( x + y ) * 2 ", table) == 2 * (x + y)
    # names map to the vocabulary's symbols by default or from a list of names
    assert parse_bound_expression("S*A") == SYMBOLS["S"] * SYMBOLS["A"]
    assert parse_bound_expression("S*q", ["S", "q"]) == SYMBOLS["S"] * sp.Symbol("q")
    with pytest.raises(BoundParseError, match="unknown name 'A'"):
        parse_bound_expression("S*A", ["S"])


MALICIOUS = [
    ("__import__('os').system('x')", "__import__", 0),
    ("().__class__", ")", 1),
    ("lambda: 1", "lambda", 0),
    ("S.__class__", ".", 1),
    ("exec('1')", "exec", 0),
    ("eval", "eval", 0),
    ("S[0]", "[", 1),
    ("'S'", "'", 0),
    ('"S"', '"', 0),
    ("S; S", ";", 1),
    ("S if S else A", "if", 2),
    ("S(1)", "(", 1),
    ("2 S", "S", 2),
    ("_S", "_S", 0),
    ("S__x", "S__x", 0),
    ("sqrt", "", 4),
    ("sqrt(S, A)", "sqrt", 0),
    ("S +", "", 3),
    ("", "", 0),
    ("1/0", "/", 1),
    ("10^10^10", "^", 2),
    ("S @ A", "@", 2),
    ("{S}", "{", 0),
    ("S = 1", "=", 2),
]


@pytest.mark.parametrize(("text", "token", "position"), MALICIOUS)
def test_parser_rejects_with_token_and_position(text, token, position):
    with pytest.raises(BoundParseError) as info:
        parse_bound_expression(text)
    assert isinstance(info.value, ValueError)
    assert info.value.token == token
    assert info.value.position == position
    assert f"position {position}" in str(info.value)


def test_parser_bounds_size_depth_and_numbers():
    with pytest.raises(BoundParseError, match="nested deeper"):
        parse_bound_expression("(" * 150 + "S" + ")" * 150)
    with pytest.raises(BoundParseError, match="nested deeper"):
        parse_bound_expression("-" * 500 + "S")
    with pytest.raises(BoundParseError, match="characters long"):
        parse_bound_expression("S+" * 3000 + "S")
    with pytest.raises(BoundParseError, match="too long"):
        parse_bound_expression("9" * 100)
    with pytest.raises(BoundParseError, match="too large"):
        parse_bound_expression("S^100000")
    with pytest.raises(BoundParseError, match="not finite"):
        parse_bound_expression("log(0)")
    assert parse_bound_expression("(" * 90 + "S" + ")" * 90) == SYMBOLS["S"]


def test_parser_executes_nothing(monkeypatch):
    calls = []

    def forbidden(*args, **kwargs):
        calls.append(args)
        raise AssertionError("the parser must not execute code")

    monkeypatch.setattr(builtins, "eval", forbidden)
    monkeypatch.setattr(builtins, "exec", forbidden)
    monkeypatch.setattr(builtins, "compile", forbidden)
    monkeypatch.setattr(os, "system", forbidden)
    monkeypatch.setattr(sp, "sympify", forbidden)
    monkeypatch.setattr(sp, "parse_expr", forbidden)
    for text, _, _ in MALICIOUS:
        with pytest.raises(BoundParseError):
            parse_bound_expression(text)
    # valid text parses under the same restrictions
    assert parse_bound_expression("20*H^(3/2)*L*sqrt(S*A*K) + 250*H^2*S^2*A*L^2") is not None
    assert calls == []


def test_parser_source_calls_no_evaluator():
    tree = ast.parse((ROOT / "bounds" / "parse.py").read_text())
    banned_names = {"eval", "exec", "compile", "__import__", "getattr"}
    banned_attributes = {"sympify", "parse_expr", "lambdify", "eval", "exec"}
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            fn = node.func
            if isinstance(fn, ast.Name):
                assert fn.id not in banned_names, f"parse.py calls {fn.id} (line {node.lineno})"
            elif isinstance(fn, ast.Attribute):
                assert fn.attr not in banned_attributes, f"parse.py calls .{fn.attr}"


# ---------------------------------------------------------------------------------------------
# architecture rule and docs
# ---------------------------------------------------------------------------------------------
def test_bounds_imports_nothing_else_from_the_project():
    allowed = ("theorylab.registry", "theorylab.errors", "theorylab.table", "theorylab.bounds")
    for path in (ROOT / "bounds").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                names = [node.module or ""]
            else:
                continue
            for name in names:
                if name.split(".")[0] in ("theorylab", "mdps", "algorithms", "validations"):
                    assert name.startswith(allowed), f"{path.name} imports {name}"


def test_docs_table_is_current():
    text = (ROOT / "docs" / "bounds.md").read_text(encoding="utf-8")
    assert with_current_table(text) == text, "run: python -m theorylab.bounds docs/bounds.md"
    table = markdown_table()
    for name in EXPECTED_NAMES:
        assert f"`{name}`" in table
