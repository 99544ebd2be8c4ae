"""Every kind of invalid input is refused with a specific error that names the problem.

TabularMDP construction (shapes, finite values, probabilities, rows summing to 1, reward range,
initial distribution, stage-dependent and sparse forms), family parameters, and the registry's
unknown names and parameters. Each case checks the message text with ``match``.
"""

from __future__ import annotations

import re

import numpy as np
import pytest
import scipy.sparse as sp

from theorylab.errors import InvalidMDPError, UnknownNameError
from theorylab.mdps import TabularMDP, make


def _valid(S: int = 2, A: int = 2, H: int | None = None):
    """A valid (P, R): uniform transitions, zero rewards; stage-dependent when H is given."""
    shape = (S, A) if H is None else (H, S, A)
    return np.full((*shape, S), 1.0 / S), np.zeros(shape)


# ------------------------------------------------------------------------------ dense arrays
def test_P_shape_must_match_R():
    P, _ = _valid(S=3)
    _, R = _valid(S=2)
    with pytest.raises(InvalidMDPError, match=re.escape("(S, A, S) = (2, 2, 2) to match R")):
        TabularMDP(P, R, horizon=2)


def test_P_must_be_3d_or_4d():
    with pytest.raises(InvalidMDPError, match=re.escape("got shape (2, 4)")):
        TabularMDP(np.full((2, 4), 0.5), np.zeros((2, 2)), horizon=2)


def test_R_must_be_2d_or_3d():
    with pytest.raises(InvalidMDPError, match=re.escape("R must have shape (S, A) or (H, S, A)")):
        TabularMDP(*_valid()[:1], np.zeros(2), horizon=2)


def test_nan_in_stage_dependent_P_names_the_index():
    P, R = _valid(H=3)
    P[2, 0, 1, 0] = np.nan
    with pytest.raises(
        InvalidMDPError, match=re.escape("P is not finite at (h=2, s=0, a=1, s'=0)")
    ):
        TabularMDP(P, R, horizon=3)


def test_nan_in_stage_dependent_R_names_the_index():
    P, R = _valid(H=3)
    R[2, 0, 1] = np.nan
    with pytest.raises(InvalidMDPError, match=re.escape("R is not finite at (h=2, s=0, a=1): nan")):
        TabularMDP(P, R, horizon=3)


def test_infinite_P_names_the_index():
    P, R = _valid()
    P[1, 0, 1] = np.inf
    with pytest.raises(
        InvalidMDPError, match=re.escape("P is not finite at (s=1, a=0, s'=1): inf")
    ):
        TabularMDP(P, R, horizon=2)


def test_negative_probability_names_index_and_value():
    P, R = _valid()
    P[1, 0] = [1.1, -0.1]
    with pytest.raises(
        InvalidMDPError, match=re.escape("P has a negative probability at (s=1, a=0, s'=1): -0.1")
    ):
        TabularMDP(P, R, horizon=2)


def test_row_not_summing_to_one_reports_the_sum():
    P, R = _valid()
    P[0, 1] = [0.5, 0.4]
    with pytest.raises(
        InvalidMDPError, match=re.escape("P row (s=0, a=1) sums to 0.9, expected 1")
    ):
        TabularMDP(P, R, horizon=2)


def test_row_sum_tolerance_is_1e_9():
    P, R = _valid()
    P[0, 1] = [0.5, 0.5 + 5e-10]  # within 1e-9: accepted as is (not renormalised)
    assert TabularMDP(P, R, horizon=2).P[0, 1, 1] == 0.5 + 5e-10
    P, R = _valid()
    P[0, 1] = [0.5, 0.5 + 2e-9]
    with pytest.raises(InvalidMDPError, match=re.escape("P row (s=0, a=1) sums to 1.000000002")):
        TabularMDP(P, R, horizon=2)


@pytest.mark.parametrize("bad, shown", [(1.5, "1.5"), (-0.25, "-0.25")])
def test_rewards_outside_unit_interval(bad, shown):
    P, R = _valid()
    R[1, 0] = bad
    with pytest.raises(
        InvalidMDPError, match=re.escape(f"R at (s=1, a=0) is {shown}, mean rewards must lie in")
    ):
        TabularMDP(P, R, horizon=2)


def test_mu0_wrong_shape():
    with pytest.raises(InvalidMDPError, match=re.escape("mu0 must have shape (2,), got (3,)")):
        TabularMDP(*_valid(), np.full(3, 1 / 3), horizon=2)


def test_mu0_negative():
    with pytest.raises(InvalidMDPError, match=re.escape("mu0 has a negative probability at s=1")):
        TabularMDP(*_valid(), np.array([1.5, -0.5]), horizon=2)


def test_mu0_not_summing_to_one():
    with pytest.raises(InvalidMDPError, match=re.escape("mu0 sums to 0.5, expected 1")):
        TabularMDP(*_valid(), np.array([0.25, 0.25]), horizon=2)


def test_mu0_nan():
    with pytest.raises(InvalidMDPError, match=re.escape("mu0 is not finite at s=0")):
        TabularMDP(*_valid(), np.array([np.nan, 1.0]), horizon=2)


# ------------------------------------------------------------------------------ objective
def test_needs_horizon_or_gamma():
    with pytest.raises(InvalidMDPError, match="give a finite horizon H"):
        TabularMDP(*_valid())


@pytest.mark.parametrize("H", [0, -3, 2.5, True])
def test_horizon_must_be_positive_integer(H):
    with pytest.raises(InvalidMDPError, match="horizon must be a positive integer"):
        TabularMDP(*_valid(), horizon=H)


@pytest.mark.parametrize("gamma", [1.0, -0.1, 1.5])
def test_gamma_must_lie_in_0_1(gamma):
    with pytest.raises(InvalidMDPError, match=re.escape(f"gamma must lie in [0, 1), got {gamma}")):
        TabularMDP(*_valid(), gamma=gamma)


def test_unknown_reward_model():
    with pytest.raises(
        InvalidMDPError, match="reward_model must be 'deterministic' or 'bernoulli'"
    ):
        TabularMDP(*_valid(), horizon=2, reward_model="gaussian")


# ------------------------------------------------------------------------------ stage-dependent
def test_stage_dependent_P_with_wrong_H():
    P, R = _valid(H=2)
    with pytest.raises(
        InvalidMDPError, match=re.escape("(H, S, A, S) = (3, 2, 2, 2), got (2, 2, 2, 2)")
    ):
        TabularMDP(P, R[0], horizon=3)


def test_stage_dependent_R_with_wrong_H():
    P, R = _valid(H=2)
    with pytest.raises(InvalidMDPError, match="stage-dependent R has 2 stages but horizon is 3"):
        TabularMDP(P[0], R, horizon=3)


def test_stage_dependent_P_needs_a_horizon():
    P, R = _valid(H=2)
    with pytest.raises(InvalidMDPError, match="stage-dependent P .* needs a finite horizon"):
        TabularMDP(P, R[0], gamma=0.9)


def test_stage_dependent_row_error_names_the_stage():
    P, R = _valid(H=3)
    P[1, 1, 0] = [0.7, 0.7]
    with pytest.raises(InvalidMDPError, match=re.escape("P row (h=1, s=1, a=0) sums to 1.4")):
        TabularMDP(P, R, horizon=3)


# ------------------------------------------------------------------------------ sparse
def test_sparse_wrong_number_of_rows():
    P = sp.csr_array(np.full((3, 2), 0.5))  # S*A = 4 rows expected
    with pytest.raises(
        InvalidMDPError, match=re.escape("sparse P must have shape (S*A, S) = (4, 2) or (H*S*A, S)")
    ):
        TabularMDP(P, np.zeros((2, 2)), horizon=2)


def test_sparse_wrong_number_of_columns():
    P = sp.csr_array(np.full((4, 3), 1 / 3))
    with pytest.raises(InvalidMDPError, match="sparse P must have S = 2 columns to match R"):
        TabularMDP(P, np.zeros((2, 2)), horizon=2)


def test_sparse_row_not_summing_to_one():
    dense = np.full((4, 2), 0.5)
    dense[2] = [0.5, 0.0]  # row 2 = (s=1, a=0)
    with pytest.raises(InvalidMDPError, match=re.escape("P row (s=1, a=0) sums to 0.5")):
        TabularMDP(sp.csr_array(dense), np.zeros((2, 2)), horizon=2)


def test_sparse_empty_row():
    dense = np.full((4, 2), 0.5)
    dense[3] = 0.0  # (s=1, a=1) has no stored entry at all
    with pytest.raises(InvalidMDPError, match=re.escape("P row (s=1, a=1) sums to 0")):
        TabularMDP(sp.csr_array(dense), np.zeros((2, 2)), horizon=2)


def test_sparse_negative_and_nan_entries_name_row_and_column():
    dense = np.full((4, 2), 0.5)
    dense[1] = [1.5, -0.5]
    with pytest.raises(
        InvalidMDPError, match=re.escape("negative probability at (s=0, a=1), s'=1: -0.5")
    ):
        TabularMDP(sp.csr_array(dense), np.zeros((2, 2)), horizon=2)
    dense = np.full((4, 2), 0.5)
    dense[2, 0] = np.nan
    with pytest.raises(InvalidMDPError, match=re.escape("P is not finite at row (s=1, a=0), s'=0")):
        TabularMDP(sp.csr_array(dense), np.zeros((2, 2)), horizon=2)


def test_sparse_stage_dependent_bad_row_names_the_stage():
    dense = np.full((3 * 4, 2), 0.5)  # H = 3 stages of S*A = 4 rows
    dense[4 + 1] = [0.25, 0.25]  # stage 1, row 1 = (s=0, a=1)
    with pytest.raises(InvalidMDPError, match=re.escape("P row (h=1, s=0, a=1) sums to 0.5")):
        TabularMDP(sp.csr_array(dense), np.zeros((2, 2)), horizon=3)
    # and with the wrong horizon the shape itself is refused
    with pytest.raises(InvalidMDPError, match=re.escape("(H*S*A, S) = (8, 2), got (12, 2)")):
        TabularMDP(sp.csr_array(np.full((12, 2), 0.5)), np.zeros((2, 2)), horizon=2)


def test_sparse_duplicates_are_summed_before_validation():
    # (s=0, a=0) stores s'=1 twice with 0.5 each: a valid row once the duplicates are added.
    data = np.array([0.5, 0.5, 1.0])
    indices = np.array([1, 1, 0])
    indptr = np.array([0, 2, 3])
    mdp = TabularMDP(
        sp.csr_array((data, indices, indptr), shape=(2, 2)), np.zeros((2, 1)), horizon=1
    )
    np.testing.assert_array_equal(mdp.dense_P()[:, 0], [[0.0, 1.0], [1.0, 0.0]])


# ------------------------------------------------------------------------------ caller's arrays
def test_construction_leaves_the_callers_arrays_writable():
    P, R = _valid()
    mu0 = np.array([1.0, 0.0])
    TabularMDP(P, R, mu0, horizon=2)
    assert P.flags.writeable and R.flags.writeable and mu0.flags.writeable


# ------------------------------------------------------------------------------ families
@pytest.mark.parametrize(
    "spec, match",
    [
        ("chain:S=1", "chain: parameter S must be an integer >= 2, got S=1"),
        ("chain:H=0", "chain: parameter H must be an integer >= 1, got H=0"),
        (
            "chain:fail=1.5",
            r"chain: parameter fail must be a probability in \[0, 1\], got fail=1.5",
        ),
        ("chain:gamma=1.0", r"chain: parameter gamma must lie in \[0, 1\)"),
        ("chain:reward_model=gaussian", "reward_model must be 'deterministic' or 'bernoulli'"),
        ("combination-lock:A=1", "combination-lock: parameter A must be an integer >= 2, got A=1"),
        ("combination-lock:code_seed=-2", "parameter code_seed must be -1 .* got code_seed=-2"),
        ("gridworld:slip=1.5", r"parameter slip must be a probability in \[0, 1\], got slip=1.5"),
        ("gridworld:slip=-0.1", "got slip=-0.1"),
        ("gridworld:rows=0", "parameter rows must be an integer >= 1, got rows=0"),
        ("gridworld:rows=1,cols=1", "the grid needs at least 2 cells, got rows=1, cols=1"),
        ("gridworld:walls=16", r"wall cell 16 is outside the grid: cells are 0\.\.15"),
        ("gridworld:walls=-1", r"wall cell -1 is outside the grid"),
        ("gridworld:walls=0", "wall cell 0 is on the start cell"),
        ("gridworld:walls=3|15", "wall cell 15 is on the goal cell"),
        ("gridworld:walls=5|6|5", "wall cell 5 is listed twice"),
        ("gridworld:start=16", r"parameter start=16 is outside the grid"),
        ("gridworld:goal=0", "start and goal are the same cell 0"),
        ("gridworld:goal_mode=teleport", "goal_mode must be 'absorbing' or 'reset'"),
        ("deepsea:N=1", "deepsea: parameter N must be an integer >= 2, got N=1"),
        ("deepsea:move_cost=-0.01", r"move_cost must lie in \[0, N\]"),
        ("deepsea:mapping_seed=-5", "mapping_seed must be -1 .* got mapping_seed=-5"),
    ],
)
def test_bad_family_parameters(spec, match):
    with pytest.raises(InvalidMDPError, match=match):
        make(spec)


def test_family_parameter_of_the_wrong_type():
    with pytest.raises(ValueError, match="gridworld: parameter rows='abc' is not an integer"):
        make("gridworld:rows=abc")
    with pytest.raises(ValueError, match="deepsea: parameter stochastic='maybe' is not a boolean"):
        make("deepsea:stochastic=maybe")


def test_unknown_family_lists_the_available_names():
    with pytest.raises(UnknownNameError) as err:
        make("frozenlake:S=4")
    message = str(err.value)
    assert "unknown MDP family 'frozenlake'" in message
    for name in ("chain", "combination-lock", "deepsea", "gridworld", "riverswim"):
        assert name in message


def test_unknown_parameter_lists_the_parameters():
    with pytest.raises(ValueError, match="MDP family 'gridworld' has no parameter 'size'") as err:
        make("gridworld:size=4")
    for part in ("rows=4", "cols=4", "walls=()", "slip=0.0", "start=0", "goal=-1", "H=20"):
        assert part in str(err.value)
