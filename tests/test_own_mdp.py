"""Bring your own MDP (issue 33): arrays in other libraries' layouts, any reward scale through the
exact affine map, values/regret in the user's units, .npz files the CLI reads, VI's default rule.

The external instance is pymdptoolbox's ``forest`` (S = 2000, r1 = 4, r2 = 2, p = 0.1,
gamma = 0.96), built here from the definition printed in ``mdptoolbox.example.forest``'s
docstring, not imported. Independent answers: a direct linear solve of
``(I - gamma P_pi) V = R_pi`` on the raw rewards written out below, backward induction on the raw
rewards written out below, and pymdptoolbox itself where it is installed (skipped otherwise).
"""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

import theorylab as tl
from theorylab.algorithms.planning import evaluate_discounted, evaluate_policies, solve
from theorylab.cli import main
from theorylab.errors import InvalidMDPError
from theorylab.mdps import RewardMap, TabularMDP, from_gymnasium, make
from theorylab.validations.reference import regret_reference

S_FOREST, GAMMA_FOREST = 2000, 0.96


def forest(S: int = S_FOREST, r1: float = 4.0, r2: float = 2.0, p: float = 0.1):
    """mdptoolbox.example.forest as documented: P (A, S, S) with action 0 = wait, 1 = cut;
    R (S, A)."""
    P = np.zeros((2, S, S))
    P[0, :, 0] = p  # a fire sends the forest to the youngest state
    P[0, np.arange(S - 1), np.arange(1, S)] = 1 - p  # it grows a year older
    P[0, S - 1, S - 1] = 1 - p  # the oldest state stays oldest
    P[1, :, 0] = 1.0  # cutting resets it
    R = np.zeros((S, 2))
    R[S - 1, 0] = r1
    R[1 : S - 1, 1] = 1.0
    R[S - 1, 1] = r2
    return P, R


@pytest.fixture(scope="module")
def forest_arrays():
    return forest()


@pytest.fixture(scope="module")
def forest_mdp(forest_arrays):
    P, R = forest_arrays
    return TabularMDP.from_arrays(
        P, R, layout="ASS", reward_range="auto", gamma=GAMMA_FOREST, name="forest"
    )


def direct_values(P_ass: np.ndarray, R: np.ndarray, policy: np.ndarray, gamma: float):
    """V^pi on the raw rewards: solve (I - gamma P_pi) V = R_pi (written here, not imported)."""
    S = R.shape[0]
    P_pi = P_ass[policy, np.arange(S), :]  # (S, S)
    R_pi = R[np.arange(S), policy]  # (S,)
    return np.linalg.solve(np.eye(S) - gamma * P_pi, R_pi)


def raw_backward_induction(P_ass: np.ndarray, R: np.ndarray, H: int) -> np.ndarray:
    """V*_0 (S,) of the finite-horizon problem on the raw rewards (written here)."""
    V = np.zeros(R.shape[0])
    for _ in range(H):
        V = (R + np.einsum("ast,t->sa", P_ass, V)).max(axis=1)
    return V


# ------------------------------------------------------------------ the forest, discounted
def test_forest_loads_with_the_map_recorded(forest_mdp, forest_arrays):
    P, R = forest_arrays
    assert forest_mdp.reward_map == RewardMap(offset=0.0, scale=4.0)
    np.testing.assert_array_equal(forest_mdp.R, R / 4.0)
    np.testing.assert_array_equal(forest_mdp.P, P.transpose(1, 0, 2))
    with pytest.raises(InvalidMDPError, match=r"R at \(s=1999, a=0\) is 4, .*reward_range='auto'"):
        TabularMDP.from_arrays(P, R, layout="ASS", gamma=GAMMA_FOREST)  # reward_range=None


@pytest.mark.parametrize("method", ["policy_iteration", "value_iteration"])
def test_forest_solves_to_the_direct_linear_solve_in_user_units(forest_mdp, forest_arrays, method):
    P, R = forest_arrays
    sol = solve(forest_mdp, method)
    V_user = forest_mdp.user_value(sol.V)
    V_direct = direct_values(P, R, sol.policy, GAMMA_FOREST)
    # the optimal policy: the value of the greedy policy equals V* up to VI's certified error
    bound = 4.0 * sol.info["error_bound"] + 1e-9
    np.testing.assert_allclose(V_user, V_direct, rtol=0, atol=bound)
    # and no one-step deviation improves it (Bellman optimality of V_direct on raw rewards)
    Q = R + GAMMA_FOREST * np.einsum("ast,t->sa", P, V_direct)
    assert np.all(Q.max(axis=1) <= V_direct + 1e-9)
    if method == "value_iteration":
        assert sol.info["stopping"] == "span" and sol.info["error_bound"] <= 1e-10


def test_forest_matches_pymdptoolbox_policy_iteration(forest_mdp):
    """pymdptoolbox (optional, skipped when absent) as the independent answer: its own forest
    in its sparse layout (a tuple of CSR (S, S)), its policy iteration."""
    toolbox = pytest.importorskip("mdptoolbox.mdp")
    example = pytest.importorskip("mdptoolbox.example")

    P_sparse, R = example.forest(S=S_FOREST, r1=4, r2=2, p=0.1, is_sparse=True)
    pi = toolbox.PolicyIteration(P_sparse, R, GAMMA_FOREST)
    pi.run()
    V_theirs, policy_theirs = np.asarray(pi.V), np.asarray(pi.policy)
    m = TabularMDP.from_arrays(P_sparse, R, layout="ASS", reward_range="auto", gamma=GAMMA_FOREST)
    assert m.sparse  # kept sparse
    for mdp in (forest_mdp, m):
        ours = solve(mdp, "policy_iteration")
        np.testing.assert_array_equal(ours.policy, policy_theirs)
        np.testing.assert_allclose(mdp.user_value(ours.V), V_theirs, rtol=0, atol=1e-8)


# ------------------------------------------------------------------ the forest, episodic
def test_forest_ucbvi_bf_regret_is_reported_in_user_units(forest_arrays):
    """A finite-horizon forest (H = 5): UCBVI-BF's regret on the mapped model, reported in the
    user's units, is 4 x the regret of the same run on the hand-rescaled model (R / 4)."""
    P, R = forest_arrays
    H = 5
    mdp = TabularMDP.from_arrays(P, R, layout="ASS", reward_range="auto", horizon=H)
    by_hand = TabularMDP(P.transpose(1, 0, 2), R / 4.0, horizon=H)
    ours = tl.run("ucbvi-bernstein", mdp, episodes=3, seeds=1)
    ref = tl.run("ucbvi-bernstein", by_hand, episodes=3, seeds=1)
    assert ours.config["reward_map"]["units"] == "user" and ours.config["reward_map"]["scale"] == 4
    np.testing.assert_allclose(ours.regret, 4.0 * ref.regret, rtol=1e-12, atol=0)
    np.testing.assert_allclose(ours.returns, 4.0 * ref.returns, rtol=1e-12, atol=0)
    assert ours.regret.sum() > 0  # a learner in its first episodes has regret to scale
    assert ours.optimal_value == pytest.approx(raw_backward_induction(P, R, H)[0], abs=1e-9)


def test_negative_rewards_map_values_with_the_offset():
    """Rewards in [-10, 20]: offset -10, scale 30; every policy's value in user units equals the
    raw-reward value computed directly (finite horizon and discounted)."""
    rng = np.random.default_rng(3)
    S, A, H, g = 6, 3, 4, 0.8
    P = rng.dirichlet(np.ones(S), size=(A, S))  # (A, S, S)
    R = rng.uniform(-10, 20, size=(S, A))
    R[0, 0], R[1, 1] = -10.0, 20.0
    m = TabularMDP.from_arrays(P, R, layout="ASS", reward_range="auto", horizon=H)
    assert (m.reward_map.offset, m.reward_map.scale) == (-10.0, 30.0)
    V_user = m.user_value(solve(m).V[0])
    np.testing.assert_allclose(V_user, raw_backward_induction(P, R, H), rtol=0, atol=1e-9)
    d = TabularMDP.from_arrays(P, R, layout="ASS", reward_range="auto", gamma=g)
    sol = solve(d, "policy_iteration")
    direct = direct_values(P, R, sol.policy, g)
    np.testing.assert_allclose(d.user_value(sol.V), direct, rtol=0, atol=1e-9)
    # a declared range maps exactly onto it, and a reward outside it is refused
    wide = TabularMDP.from_arrays(P, R, layout="ASS", reward_range=(-20, 40), gamma=g)
    assert (wide.reward_map.offset, wide.reward_map.scale) == (-20.0, 60.0)
    np.testing.assert_allclose(
        wide.user_value(solve(wide, "policy_iteration").V), direct, atol=1e-9
    )
    with pytest.raises(InvalidMDPError, match=r"R\[1, 1\] = 20 lies outside reward_range"):
        TabularMDP.from_arrays(P, R, layout="ASS", reward_range=(-10, 19), gamma=g)


def test_rewards_in_unit_interval_stay_untouched():
    rng = np.random.default_rng(0)
    P = rng.dirichlet(np.ones(4), size=(4, 2))  # (S, A, S)
    R = rng.uniform(0.1, 0.6, size=(4, 2))
    m = TabularMDP.from_arrays(P, R, reward_range="auto", horizon=3)
    assert m.reward_map.identity
    np.testing.assert_array_equal(m.R, R)
    res = tl.run("ucbvi-bernstein", m, episodes=2, seeds=1)
    assert "reward_map" not in res.config


# ------------------------------------------------------------------ layouts and R shapes
def test_layouts_and_reward_shapes_agree():
    rng = np.random.default_rng(1)
    S, A = 5, 3
    P_ass = rng.dirichlet(np.ones(S), size=(A, S))  # (A, S, S)
    R_trans = rng.uniform(-1, 3, size=(A, S, S))  # reward per (a, s, s')
    R_mean = np.einsum("ast,ast->sa", P_ass, R_trans)  # (S, A)
    kw = dict(reward_range="auto", gamma=0.9)
    dense = TabularMDP.from_arrays(P_ass, R_mean, layout="ASS", **kw)
    per_transition = TabularMDP.from_arrays(P_ass, R_trans, layout="ASS", **kw)
    listed = TabularMDP.from_arrays(  # pymdptoolbox's sparse form: lists of A CSR (S, S)
        [sp.csr_array(m) for m in P_ass], [sp.csr_matrix(m) for m in R_trans], layout="ASS", **kw
    )
    flat = sp.csr_array(P_ass.transpose(1, 0, 2).reshape(S * A, S))  # row s*A + a
    csr = TabularMDP.from_arrays(flat, R_mean, **kw)
    sas_trans = TabularMDP.from_arrays(flat, R_trans.transpose(1, 0, 2), **kw)
    assert listed.sparse and csr.sparse and not dense.sparse
    for m in (per_transition, listed, csr, sas_trans):
        np.testing.assert_allclose(m.R, dense.R, rtol=0, atol=1e-12)
        np.testing.assert_allclose(m.dense_P(), dense.P, rtol=0, atol=0)
        assert m.reward_map.offset == dense.reward_map.offset
        assert m.reward_map.scale == pytest.approx(dense.reward_map.scale, rel=1e-14)
    state_reward = rng.uniform(0, 5, size=S)  # (S,): paid whatever the action
    m = TabularMDP.from_arrays(P_ass, state_reward, layout="ASS", **kw)
    np.testing.assert_allclose(
        m.reward_map.user_reward(m.R), np.repeat(state_reward[:, None], A, 1)
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (dict(layout="SSA"), "layout must be 'SAS'"),
        (dict(layout="ASS", reward_range="max"), "reward_range must be None, 'auto' or a pair"),
        (dict(layout="ASS", reward_range=(1, 1)), "reward_range must be finite with lo < hi"),
        (dict(layout="ASS", R=np.zeros((3, 2))), r"R must have shape \(S, A\) = \(4, 2\)"),
        (dict(layout="ASS", P=np.zeros((2, 4, 3))), r"layout='ASS' must have shape \(A, S, S\)"),
    ],
)
def test_bad_arrays_are_refused_in_one_line(args, message):
    P = np.full((2, 4, 4), 0.25)
    R = np.ones((4, 2)) * 3
    args = dict(args)
    P, R = args.pop("P", P), args.pop("R", R)
    args.setdefault("reward_range", "auto")
    with pytest.raises(InvalidMDPError, match=message):
        TabularMDP.from_arrays(P, R, gamma=0.9, **args)


# ------------------------------------------------------------------ gymnasium's P[s][a] lists
def test_gymnasium_model_records_its_map():
    """A custom env written as toy text, rewards -5 and +1: the map is recorded on the model and
    values in user units are the raw-reward values computed here."""

    class Env:
        P = {
            0: {0: [(1.0, 1, -5.0, False)], 1: [(0.5, 0, 1.0, False), (0.5, 1, 1.0, True)]},
            1: {0: [(1.0, 0, 1.0, False)], 1: [(1.0, 1, -5.0, True)]},
        }

    mdp = from_gymnasium(Env(), horizon=3)
    assert (mdp.reward_map.offset, mdp.reward_map.scale) == (-5.0, 6.0)
    # raw finite-horizon values; the added terminal state (index 2) pays raw 0 forever
    V = np.zeros(3)
    for _ in range(3):
        Q = np.array(
            [
                [-5.0 + V[1], 1.0 + 0.5 * V[0] + 0.5 * V[2]],
                [1.0 + V[0], -5.0 + V[2]],
                [V[2], V[2]],
            ]
        )
        V = Q.max(axis=1)
    np.testing.assert_allclose(mdp.user_value(solve(mdp).V[0]), V, rtol=0, atol=1e-12)


# ------------------------------------------------------------------ files and the CLI
def test_save_load_round_trip_keeps_sparse_and_the_map(tmp_path, forest_mdp):
    path = forest_mdp.save(tmp_path / "forest.npz")
    back = TabularMDP.load(path)
    np.testing.assert_array_equal(back.P, forest_mdp.P)
    np.testing.assert_array_equal(back.R, forest_mdp.R)
    assert back.reward_map == forest_mdp.reward_map and back.gamma == GAMMA_FOREST
    assert back.name == "forest"
    sparse = forest_mdp.to_sparse()
    back = TabularMDP.load(sparse.save(tmp_path / "sparse.npz"))
    assert back.sparse and (back.P != sparse.P).nnz == 0
    assert make(str(tmp_path / "sparse.npz")).name == str(tmp_path / "sparse.npz")


def test_cli_solves_a_file_in_user_units(tmp_path, forest_mdp, forest_arrays, capsys):
    path = str(forest_mdp.to_sparse().save(tmp_path / "forest.npz"))  # (dense: the test above)
    assert main(["solve", path]) == 0
    text = capsys.readouterr().out
    assert "span rule" in text and "certified error" in text and "r_user = 4 * r + 0" in text
    assert main(["solve", path, "--json", "--method", "policy_iteration"]) == 0
    out = json.loads(capsys.readouterr().out)
    P, R = forest_arrays
    pi = solve(forest_mdp, "policy_iteration").policy
    expected = direct_values(P, R, pi, GAMMA_FOREST)[0]  # mu0 = state 0
    assert out["value"] == pytest.approx(expected, abs=1e-9)
    assert out["value_unit_rewards"] == pytest.approx(expected / 4, abs=1e-9)


def test_run_reads_a_file_and_reports_user_units(tmp_path, capsys):
    P, R = forest(S=12)
    mdp = TabularMDP.from_arrays(P, R, layout="ASS", reward_range="auto", horizon=6)
    path = str(mdp.save(tmp_path / "small.npz"))
    from_file = tl.run("ucbvi-bernstein", path, episodes=20, seeds=2)
    direct = tl.run("ucbvi-bernstein", mdp, episodes=20, seeds=2)
    np.testing.assert_array_equal(from_file.regret, direct.regret)
    assert from_file.config["mdp"] == path
    plot, js = tmp_path / "r.png", tmp_path / "r.json"
    argv = ["run", "ucbvi-bernstein", path, "--episodes", "20", "--seeds", "2", "--no-progress"]
    assert main([*argv, "--plot", str(plot), "--json", str(js)]) == 0
    text = capsys.readouterr().out
    assert "times scale = 4" in text and plot.exists()
    saved = json.loads(js.read_text())
    assert saved["optimal_value"] == pytest.approx(direct.optimal_value)


def test_bound_and_null_lines_are_scaled_to_user_units(tmp_path):
    P, R = forest(S=12)
    mdp = TabularMDP.from_arrays(P, R, layout="ASS", reward_range="auto", horizon=6)
    by_hand = TabularMDP(P.transpose(1, 0, 2), R / 4.0, horizon=6)
    ours = tl.run("ucbvi-bernstein", mdp, episodes=10, seeds=1)
    ref_run = tl.run("ucbvi-bernstein", by_hand, episodes=10, seeds=1)
    ours_ref, hand_ref = regret_reference(ours, mdp), regret_reference(ref_run, by_hand)
    assert ours_ref.null_per_episode == pytest.approx(4 * hand_ref.null_per_episode, rel=1e-12)
    assert ours_ref.max_per_episode == pytest.approx(4 * hand_ref.max_per_episode, rel=1e-12)
    np.testing.assert_allclose(ours_ref.bound_curve, 4 * hand_ref.bound_curve, rtol=1e-12)
    assert any("times scale = 4" in n for n in ours_ref.notes)


def test_offline_suboptimality_is_reported_in_user_units():
    rng = np.random.default_rng(5)
    S, A = 5, 2
    P = rng.dirichlet(np.ones(S), size=(S, A))
    R = rng.uniform(-2, 6, size=(S, A))
    mdp = TabularMDP.from_arrays(P, R, reward_range="auto", gamma=0.8)
    rmap = mdp.reward_map
    by_hand = TabularMDP(P, rmap.to_unit(R), gamma=0.8)
    ours = tl.run("vi-lcb", mdp, dataset_size=200, seeds=2)
    ref = tl.run("vi-lcb", by_hand, dataset_size=200, seeds=2)
    np.testing.assert_allclose(ours.suboptimality, rmap.scale * ref.suboptimality, rtol=1e-12)
    shift = rmap.offset / (1 - 0.8)
    assert ours.optimal_value == pytest.approx(rmap.scale * ref.optimal_value + shift)
    np.testing.assert_allclose(ours.policy_value, rmap.scale * ref.policy_value + shift)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"not an archive", "is not a theorylab MDP file .*not an .npz"),
        (None, "has no __theorylab_mdp__ entry"),
    ],
)
def test_cli_refuses_a_file_that_is_not_an_mdp(tmp_path, capsys, content, message):
    path = tmp_path / "x.npz"
    if content is None:
        np.savez(path, x=np.arange(3))
    else:
        path.write_bytes(content)
    assert main(["solve", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert err.startswith("theorylab solve: error:")
    assert re.search(message, err)


def test_a_corrupted_file_fails_its_checksum(tmp_path):
    mdp = make("riverswim:S=4,H=5")
    path = mdp.save(tmp_path / "rs.npz")
    arrays = dict(np.load(path))
    arrays["R"] = arrays["R"] * 0.5  # still a valid model: only the checksum can tell
    np.savez(tmp_path / "edited.npz", **arrays)
    with pytest.raises(InvalidMDPError, match="corrupted: its arrays do not match the sha256"):
        TabularMDP.load(tmp_path / "edited.npz")
    with pytest.raises(ValueError, match="ends in .npz"):
        mdp.save(tmp_path / "rs.bin")


@settings(max_examples=30, deadline=None)
@given(
    seed=st.integers(0, 2**31 - 1),
    lo=st.floats(-1e3, 1e3),
    width=st.floats(1e-3, 1e3),
    horizon=st.sampled_from([None, 1, 4]),
)
def test_every_policy_value_maps_back_exactly(seed, lo, width, horizon):
    """For random rewards on [lo, lo + width] and a random policy: the policy's value on the
    mapped model, mapped back, equals its value on the raw rewards computed here (finite horizon:
    H backups; discounted: a linear solve)."""
    rng = np.random.default_rng(seed)
    S, A, g = 4, 3, 0.7
    P = rng.dirichlet(np.ones(S), size=(A, S))  # (A, S, S)
    R = rng.uniform(lo, lo + width, size=(S, A))
    pi = rng.integers(0, A, size=S)
    kw = {"horizon": horizon} if horizon else {"gamma": g}
    mdp = TabularMDP.from_arrays(P, R, layout="ASS", reward_range="auto", **kw)
    if horizon:
        V_raw = np.zeros(S)
        for _ in range(horizon):
            V_raw = R[np.arange(S), pi] + P[pi, np.arange(S), :] @ V_raw
        V_model = evaluate_policies(mdp, np.broadcast_to(pi, (horizon, S)))[0]
    else:
        V_raw = direct_values(P, R, pi, g)
        V_model = evaluate_discounted(mdp, pi)
    scale = max(abs(lo), abs(lo + width), 1.0) * (horizon or 1 / (1 - g))
    np.testing.assert_allclose(mdp.user_value(V_model), V_raw, rtol=0, atol=1e-11 * scale)
