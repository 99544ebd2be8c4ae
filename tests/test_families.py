"""MDP families against values computed by hand, and rollouts against their models.

Every expected number below is worked out in the comment beside it from the family's definition
(the module docstrings of mdps/families/*.py), not read off the code under test.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.stats as stats

from theorylab.algorithms.planning import backward_induction, evaluate_policies, value_iteration
from theorylab.mdps import TabularMDP, make
from theorylab.mdps.families.chain import combination_code
from theorylab.mdps.families.deepsea import deepsea_action_mapping
from theorylab.mdps.families.gridworld import gridworld_states

LEFT, RIGHT = 0, 1
UP, G_RIGHT, DOWN, G_LEFT = 0, 1, 2, 3


# ------------------------------------------------------------------------------------ RiverSwim
def test_riverswim_S2_H1_and_H2_by_hand():
    # S = 2: r(0, left) = 0.005, r(1, right) = 1, others 0.
    # right at 0: 0.4 stay, 0.6 to 1; right at 1: 0.6 stay, 0.4 to 0; left -> 0.
    # H = 1: V(0) = max(0.005, 0) = 0.005 (left); V(1) = max(0, 1) = 1 (right).
    sol = backward_induction(make("riverswim:S=2,H=1"))
    np.testing.assert_allclose(sol.V[0], [0.005, 1.0], rtol=0, atol=1e-15)
    np.testing.assert_array_equal(sol.policy[0], [LEFT, RIGHT])
    # H = 2, stage 1 values are the H = 1 values V_1 = (0.005, 1):
    #   Q_0(0, left)  = 0.005 + V_1(0)                   = 0.010
    #   Q_0(0, right) = 0 + 0.4 * 0.005 + 0.6 * 1         = 0.602
    #   Q_0(1, left)  = 0 + V_1(0)                        = 0.005
    #   Q_0(1, right) = 1 + 0.6 * 1 + 0.4 * 0.005         = 1.602
    sol = backward_induction(make("riverswim:S=2,H=2"))
    np.testing.assert_allclose(sol.Q[0], [[0.010, 0.602], [0.005, 1.602]], rtol=0, atol=1e-15)
    np.testing.assert_allclose(sol.V[0], [0.602, 1.602], rtol=0, atol=1e-15)
    np.testing.assert_array_equal(sol.policy[0], [RIGHT, RIGHT])
    assert sol.value == pytest.approx(0.602, abs=1e-15)


def test_riverswim_default_optimal_policy_is_right_everywhere_at_h0():
    sol = backward_induction(make("riverswim:S=6,H=20"))
    np.testing.assert_array_equal(sol.policy[0], np.full(6, RIGHT))


# ------------------------------------------------------------------------------------ chain
def test_chain_transitions_follow_tabularl():
    # make_stochasticChain(4): right succeeds w.p. 3/4 and otherwise slips left; at s = 0 the
    # slip stays at 0; at s = S - 1 the success stays at S - 1.
    P = make("chain:S=4,H=4,fail=0.25").P
    np.testing.assert_array_equal(P[0, RIGHT], [0.25, 0.75, 0, 0])
    np.testing.assert_array_equal(P[2, RIGHT], [0, 0.25, 0, 0.75])
    np.testing.assert_array_equal(P[3, RIGHT], [0, 0, 0.25, 0.75])
    np.testing.assert_array_equal(P[0, LEFT], [1, 0, 0, 0])
    np.testing.assert_array_equal(P[2, LEFT], [0, 1, 0, 0])


@pytest.mark.parametrize("S, H, expected", [(5, 10, 6.0), (5, 4, 0.0), (2, 1, 0.0), (2, 3, 2.0)])
def test_chain_deterministic_value_is_H_minus_S_plus_1(S, H, expected):
    # fail = 0: S - 1 moves right reach the end, then right pays 1 at each remaining step:
    # V* = max(0, H - (S - 1)).
    assert backward_induction(make(f"chain:S={S},H={H}")).value == expected


def test_chain_stochastic_S2_H2_by_hand():
    # fail = 0.5, S = 2. Stage 1: V_1 = (0, 1) (only r(1, right) = 1).
    # Stage 0 at 0: right -> 1 w.p. 0.5, stays at 0 w.p. 0.5: Q = 0 + 0.5 * 1 + 0.5 * 0 = 0.5;
    # left stays at 0: Q = 0. So V* = 0.5.
    assert backward_induction(make("chain:S=2,H=2,fail=0.5")).value == 0.5


# ---------------------------------------------------------------------------- combination lock
@pytest.mark.parametrize("H, A", [(1, 2), (5, 4), (6, 2), (3, 3)])
def test_combination_lock_uniform_value_is_A_to_the_minus_H(H, A):
    mdp = make(f"combination-lock:H={H},A={A}")
    uniform = np.full((H, mdp.S, A), 1.0 / A)
    V = evaluate_policies(mdp, uniform)
    expected = float(A) ** (-H)
    if A in (2, 4):  # powers of two: every product is exact in binary floating point
        assert V[0] @ mdp.mu0 == expected
    else:
        assert V[0] @ mdp.mu0 == pytest.approx(expected, rel=1e-14, abs=0)
    sol = backward_induction(mdp)
    assert sol.value == 1.0
    np.testing.assert_array_equal([sol.policy[h, h] for h in range(H)], np.zeros(H))


def test_combination_lock_code_seed_sets_the_combination():
    mdp = make("combination-lock:H=6,A=5,code_seed=3")
    code = combination_code(6, 5, 3)
    assert code.shape == (6,) and code.min() >= 0 and code.max() < 5
    sol = backward_induction(mdp)
    np.testing.assert_array_equal([sol.policy[h, h] for h in range(6)], code)
    # any other action at a path state leads to the absorbing off state (index H = 6)
    for h in range(6):
        for a in range(5):
            if a != code[h]:
                assert mdp.P[h, a, 6] == 1.0
    assert mdp.P[6, :, 6].tolist() == [1.0] * 5 and mdp.R[6].tolist() == [0.0] * 5
    assert sol.value == 1.0


# ------------------------------------------------------------------------------------ gridworld
def test_gridworld_1x3_deterministic_by_hand():
    # cells 0 1 2, start 0, goal 2 (absorbing: acting in 2 pays 1, then the terminal state 3).
    # H = 3: right, right, then any action in the goal: V* = 1.  H = 2: the goal is reached at the
    # last stage's *next* state, never acted in: V* = 0.
    mdp = make("gridworld:rows=1,cols=3,H=3")
    assert (mdp.S, mdp.A) == (4, 4)
    sol = backward_induction(mdp)
    assert sol.value == 1.0
    assert sol.policy[0, 0] == G_RIGHT and sol.policy[1, 1] == G_RIGHT
    # right is the only action at (h=0, s=0) with value 1: up/down/left bump and stay.
    np.testing.assert_array_equal(sol.Q[0, 0], [0.0, 1.0, 0.0, 0.0])
    assert backward_induction(make("gridworld:rows=1,cols=3,H=2")).value == 0.0
    # reset mode, H = 6: 0 -> 1 -> 2 (collect, back to 0) -> 1 -> 2 (collect): V* = 2.
    assert backward_induction(make("gridworld:rows=1,cols=3,goal_mode=reset,H=6")).value == 2.0


def test_gridworld_2x2_slip_by_hand():
    # 2x2, start 0 (top-left), goal 3 (bottom-right), slip 0.3: intended move w.p. 0.7, each of
    # the other three directions w.p. 0.1; a blocked move stays.
    # From 0, right: to 1 w.p. 0.7; down (slip) to 2 w.p. 0.1; up and left blocked: stay 0.2.
    mdp = make("gridworld:rows=2,cols=2,slip=0.3,H=3")
    np.testing.assert_allclose(mdp.P[0, G_RIGHT, :4], [0.2, 0.7, 0.1, 0.0], rtol=0, atol=1e-15)
    # From 1 (top-right), down: to 3 w.p. 0.7; left (slip) to 0 w.p. 0.1; up, right blocked: 0.2.
    np.testing.assert_allclose(mdp.P[1, DOWN, :4], [0.1, 0.2, 0.0, 0.7], rtol=0, atol=1e-15)
    # H = 3: two moves then act in the goal. Best: right then down (or down then right):
    # P(in 3 at stage 2) = P(0->1) P(1->3) + P(0->2) P(2->3) = 0.7 * 0.7 + 0.1 * 0.7 = 0.56.
    assert backward_induction(mdp).value == pytest.approx(0.56, abs=1e-15)


def test_gridworld_walls_are_not_states():
    # 2x2 with a wall at cell 1: states are cells 0, 2, 3 (-> 0, 1, 2) and the terminal state 3.
    mdp = make("gridworld:rows=2,cols=2,walls=1,H=3")
    np.testing.assert_array_equal(gridworld_states(2, 2, (1,)), [0, -1, 1, 2])
    assert mdp.S == 4 and mdp.state_names == ["(0,0)", "(1,0)", "(1,1)", "terminal"]
    assert mdp.P[0, G_RIGHT, 0] == 1.0  # bumping into the wall stays put
    sol = backward_induction(mdp)
    assert sol.value == 1.0 and sol.policy[0, 0] == DOWN and sol.policy[1, 1] == G_RIGHT


def test_gridworld_name_round_trips():
    mdp = make("gridworld:rows=3,cols=4,walls=6|5,slip=0.1,goal=-2,H=7")
    assert mdp.name == (
        "gridworld:rows=3,cols=4,walls=5|6,slip=0.1,start=0,goal=10,goal_mode=absorbing,H=7"
    )
    again = make(mdp.name)
    np.testing.assert_array_equal(again.P, mdp.P)
    np.testing.assert_array_equal(again.R, mdp.R)
    assert again.name == mdp.name


@pytest.mark.parametrize(
    "spec",
    [
        "chain",
        "chain:S=7,H=9,fail=0.125,gamma=0.9,reward_model=bernoulli,sparse=true",
        "combination-lock:H=4,A=3,code_seed=2",
        "gridworld:rows=2,cols=3,walls=4,slip=0.2,start=1,goal=5,goal_mode=reset,H=9",
        "deepsea:N=5,mapping_seed=4,stochastic=true,sparse=true",
    ],
)
def test_family_names_are_canonical_and_rebuild_the_same_mdp(spec):
    mdp = make(spec)
    again = make(mdp.name)
    assert again.name == mdp.name and make(again.name).name == mdp.name
    assert (again.horizon, again.gamma, again.reward_model, again.sparse) == (
        mdp.horizon,
        mdp.gamma,
        mdp.reward_model,
        mdp.sparse,
    )
    np.testing.assert_array_equal(again.dense_P(), mdp.dense_P())
    np.testing.assert_array_equal(again.R, mdp.R)
    np.testing.assert_array_equal(again.mu0, mdp.mu0)
    # the options in the name are the ones that were asked for
    for option in ("gamma=0.9", "reward_model=bernoulli", "sparse=true"):
        assert (option in mdp.name) == (option in spec)


# ------------------------------------------------------------------------------------ deepsea
@pytest.mark.parametrize("N", [2, 3, 10])
def test_deepsea_optimal_value(N):
    # Shifted rewards: left pays 0.01/N, right 0, right in column N-1 pays 1. Always right:
    # N - 1 zeros and then 1, V* = 1 = bsuite's 1 - 0.01 plus the shift N * 0.01/N = 0.01.
    mdp = make(f"deepsea:N={N}")
    assert mdp.S == N * N + 1 and mdp.horizon == N
    sol = backward_induction(mdp)
    assert sol.value == 1.0
    assert sol.value - 0.01 == pytest.approx(0.99, abs=1e-15)  # bsuite's optimal return
    # the diagonal path takes "right" (action 1 under the deterministic mapping)
    np.testing.assert_array_equal([sol.policy[h, h * N + h] for h in range(N)], np.ones(N))
    # always left collects the shift at every step: N * 0.01/N = 0.01 (bsuite: 0)
    left = np.zeros((N, mdp.S), dtype=np.int64)
    assert evaluate_policies(mdp, left)[0] @ mdp.mu0 == pytest.approx(0.01, abs=1e-15)


def test_deepsea_random_mapping_matches_bsuite():
    # bsuite: mapping = RandomState(mapping_seed).binomial(1, 0.5, [N, N]); "right" iff
    # action == mapping[row, col]. The optimal action on the diagonal is the "right" one.
    N, seed = 6, 42
    mapping = np.random.RandomState(seed).binomial(1, 0.5, [N, N])
    np.testing.assert_array_equal(deepsea_action_mapping(N, seed), mapping)
    mdp = make(f"deepsea:N={N},mapping_seed={seed}")
    sol = backward_induction(mdp)
    assert sol.value == 1.0
    np.testing.assert_array_equal(
        [sol.policy[h, h * N + h] for h in range(N)], [mapping[h, h] for h in range(N)]
    )


def test_deepsea_stochastic_N2_by_hand():
    # N = 2, right succeeds w.p. 1/2 (else the column stays). Shift c/N = 0.005.
    # Stage 1 at (1,1): right pays 1. At (1,0): right pays 0, left pays 0.005 -> V = 0.005.
    # Stage 0 at (0,0): right: 0 + 0.5 * 1 + 0.5 * 0.005 = 0.5025; left: 0.005 + 0.005 = 0.01.
    sol = backward_induction(make("deepsea:N=2,stochastic=true"))
    assert sol.value == pytest.approx(0.5025, abs=1e-15)
    # bsuite's value of that policy is 0.5025 - 0.01 = 0.4925 > its _optimal_return 0.49.


def test_deepsea_discounted_shift_is_policy_independent():
    # With a discount the shift adds (c/N)(1 - gamma^N)/(1 - gamma) to every policy's value.
    N, g, c = 4, 0.9, 0.01
    mdp = make(f"deepsea:N={N},gamma={g}")
    shift = (c / N) * (1 - g**N) / (1 - g)
    sol = value_iteration(mdp, tol=1e-13)
    # bsuite's discounted optimum: right N times, costs c/N each, 1 at the last step:
    bsuite_value = -(c / N) * (1 - g**N) / (1 - g) + g ** (N - 1)
    assert sol.value == pytest.approx(bsuite_value + shift, abs=1e-12)


# ------------------------------------------------------------------------------------ rollouts
def _stage_dependent_example() -> TabularMDP:
    # H = 3, S = 3, A = 2, a different transition matrix at each stage, with zeros in rows.
    rng = np.random.default_rng(7)
    P = rng.random((3, 3, 2, 3)) * (rng.random((3, 3, 2, 3)) < 0.7)
    P[..., 0] += 0.05
    P /= P.sum(-1, keepdims=True)
    R = rng.random((3, 3, 2))
    return TabularMDP(P, R, np.array([0.5, 0.0, 0.5]), horizon=3, reward_model="bernoulli")


@pytest.mark.parametrize(
    "mdp",
    [
        make("riverswim:S=6,H=20"),
        make("gridworld:rows=3,cols=3,walls=4,slip=0.2,H=12,reward_model=bernoulli"),
        make("deepsea:N=5,stochastic=true,mapping_seed=1"),
        _stage_dependent_example(),
    ],
    ids=["riverswim", "gridworld", "deepsea", "stage-dependent"],
)
def test_dense_and_sparse_rollouts_are_identical(mdp):
    B = 64
    rng = np.random.default_rng(11)
    policy = rng.integers(0, mdp.A, size=(B, mdp.horizon, mdp.S))
    seeds = np.random.SeedSequence(5).spawn(B)
    dense = mdp.to_dense().rollout(policy, rng=[np.random.default_rng(s) for s in seeds])
    sparse = mdp.to_sparse().rollout(policy, rng=[np.random.default_rng(s) for s in seeds])
    assert mdp.to_sparse().sparse and not mdp.to_dense().sparse
    for field in ("states", "actions", "rewards", "next_states"):
        np.testing.assert_array_equal(getattr(dense, field), getattr(sparse, field))
    # and the trajectories are not degenerate: several distinct next states were visited
    assert len(np.unique(dense.next_states)) > 2


def test_empirical_next_state_frequencies_match_P():
    """Counts of s' after (s, a) are Binomial(n, P(s'|s,a)) given n i.i.d. one-step rollouts.

    Each of the K = S*A*S checks accepts [lo, hi], where lo = binom.ppf(q) and hi = binom.isf(q)
    with q = 1e-6 / (2K), so P(count < lo) < q and P(count > hi) <= q under the exact binomial
    law; by the union bound a correct sampler fails this test with probability below 1e-6.
    """
    base = make("riverswim:S=3,H=1")
    S, A, n = base.S, base.A, 10_000
    K = S * A * S
    q = 1e-6 / (2 * K)
    for s in range(S):
        mu0 = np.zeros(S)
        mu0[s] = 1.0
        mdp = TabularMDP(base.P, base.R, mu0, horizon=1)
        for a in range(A):
            policy = np.full((1, S), a, dtype=np.int64)
            tr = mdp.rollout(policy, n_seeds=n, rng=1000 * s + a)
            assert np.all(tr.states == s) and np.all(tr.actions == a)
            counts = np.bincount(tr.next_states[:, 0], minlength=S)
            for s2 in range(S):
                p = base.P[s, a, s2]
                lo, hi = stats.binom.ppf(q, n, p), stats.binom.isf(q, n, p)
                assert lo <= counts[s2] <= hi, (s, a, s2, counts[s2], n * p, lo, hi)


class _FixedUniforms:
    """A stand-in generator whose ``random(n)`` returns ``n`` copies of one number."""

    def __init__(self, u: float) -> None:
        self.u = u

    def random(self, n):
        return np.full(n, self.u)


def test_dense_sampler_never_returns_a_zero_probability_state():
    S = 11
    P = np.zeros((S, 1, S))
    P[0, 0, :10] = 0.1  # cumulative sum 0.1 * 10 = 0.9999999999999999 in floating point
    P[1:, 0, 0] = 1.0
    mdp = TabularMDP(P, np.zeros((S, 1)), horizon=1)
    u = np.nextafter(1.0, 0.0)  # the largest value Generator.random() returns
    for form in (mdp.to_sparse(), mdp.to_dense()):
        tr = form.rollout(np.zeros((1, S), dtype=np.int64), rng=[_FixedUniforms(u)])
        assert P[0, 0, tr.next_states[0, 0]] > 0, f"sparse={form.sparse}"
