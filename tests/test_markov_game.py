"""Offline zero-sum Markov games (seed row 001#43): the exact solvers against independent
answers, the bonus as printed, the dataset's coverage, input errors, the claim and its control."""

from __future__ import annotations

import math

import numpy as np
import pytest

import theorylab as tl
from theorylab.algorithms.offline.markov_game_pessimism import (
    coverage_mask,
    hoeffding_bonus,
    make_game_dataset,
)
from theorylab.algorithms.planning.markov_game import (
    best_response_values,
    duality_gap,
    evaluate,
    matrix_game,
    nash_backward_induction,
)
from theorylab.errors import InvalidMDPError
from theorylab.mdps import make
from theorylab.seeding import ENV_STREAM, generators
from theorylab.validations.claims.markov_game import brute_force_best_responses


def test_matrix_game_closed_forms():
    v, x, y = matrix_game(np.array([[1.0, 0.0], [0.0, 1.0]]))  # matching pennies, value 1/2
    assert abs(v - 0.5) < 1e-9
    np.testing.assert_allclose(x, [0.5, 0.5], atol=1e-9)
    np.testing.assert_allclose(y, [0.5, 0.5], atol=1e-9)
    v, x, y = matrix_game(np.array([[0.5, 0.8], [0.2, 0.9]]))  # saddle point at (0, 0)
    assert abs(v - 0.5) < 1e-9 and x[0] > 1 - 1e-9 and y[0] > 1 - 1e-9
    # 2x2 without a saddle: v = (ad - bc) / (a + d - b - c)
    a, b, c, d = 0.9, 0.1, 0.3, 0.6
    v, _, _ = matrix_game(np.array([[a, b], [c, d]]))
    assert abs(v - (a * d - b * c) / (a + d - b - c)) < 1e-9


def test_nash_and_best_responses_against_enumeration():
    g = make("random-game:S=2,A=2,B=2,H=2,seed=3")
    V, x, y = nash_backward_induction(g)
    assert duality_gap(g, x, y) <= 1e-9
    np.testing.assert_allclose(evaluate(g, x, y)[0], V[0], atol=1e-9)
    rng = np.random.default_rng(0)
    xr, yr = rng.dirichlet(np.ones(2), (2, 2)), rng.dirichlet(np.ones(2), (2, 2))
    up, lo = best_response_values(g, xr, yr)
    bu, bl = brute_force_best_responses(g, xr, yr)
    assert abs(g.mu0 @ up[0] - bu) < 1e-12 and abs(g.mu0 @ lo[0] - bl) < 1e-12
    assert duality_gap(g, xr, yr) > 0


def test_bonus_is_the_printed_hoeffding_formula():
    H, h, cells, delta = 3, 1, 27, 0.1
    n = np.array([0, 1, 10, 1000])
    want = [(H - h) * math.sqrt(math.log(2 * H * cells / delta) / (2 * max(k, 1))) for k in n]
    np.testing.assert_allclose(hoeffding_bonus(n, H, h, cells, delta, 1.0), want, rtol=1e-12)


def test_dataset_stays_on_the_covered_cells():
    g = make("random-game:S=3,A=3,B=3,H=2,seed=0")
    for cov in ("unilateral", "nash"):
        mask = coverage_mask(g, cov)
        d = make_game_dataset(g, 500, cov, generators(0, [0], ENV_STREAM))
        for h in range(2):
            hit = mask[h, d.s[0, h], d.a[0, h], d.b[0, h]]
            assert hit.all()
    assert coverage_mask(g, "nash").sum() < coverage_mask(g, "unilateral").sum()


def test_runner_scores_the_gap_and_the_interval():
    r = tl.run("pessimistic-nash", "random-game:S=2,A=2,B=2,H=2", dataset_size=[4000], seeds=2)
    assert r.pessimism_holds.all()
    assert np.all(r.suboptimality >= -1e-12)
    assert np.all(np.asarray(r.info["width"]) >= r.suboptimality - 1e-9)  # gap <= width


def test_input_errors():
    with pytest.raises(InvalidMDPError, match="S must be an integer >= 1"):
        make("random-game:S=0")
    with pytest.raises(ValueError, match="coverage must be one of"):
        tl.run("pessimistic-nash", "random-game:S=2,A=2,B=2,H=2", dataset_size=100,
               coverage="some")  # fmt: skip
    with pytest.raises(ValueError, match="c must be a finite number >= 0"):
        tl.run("pessimistic-nash:c=-1", "random-game:S=2,A=2,B=2,H=2", dataset_size=100)
    with pytest.raises(ValueError, match="needs a zero-sum Markov game"):
        tl.run("pessimistic-nash", "riverswim:S=4,H=5", dataset_size=100)


@pytest.mark.slow  # test_validations runs the claim and its control at quick scale
def test_claim_passes_and_control_fails():
    from theorylab.validations import validate

    rep = validate("markov-game-pessimistic-interval", "quick")
    assert rep.verdict == "PASS", rep.format()
    assert {c["control"]: c["verdict"] for c in rep.controls} == {"markov-game-no-bonus": "FAIL"}


def test_game_result_round_trips(tmp_path):
    from theorylab.results import load_result

    r = tl.run("pessimistic-nash", "random-game:S=2,A=2,B=2,H=2", dataset_size=[500, 2000],
               seeds=2)  # fmt: skip
    back = load_result(r.save(tmp_path / "run"))
    np.testing.assert_array_equal(back.suboptimality, r.suboptimality)
    assert back.optimal_value == r.optimal_value
    r.plot(tmp_path / "gap.png")
    assert (tmp_path / "gap.png").exists()
