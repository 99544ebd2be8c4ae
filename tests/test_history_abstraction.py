"""Offline RL with observation histories (seed 000#49): the history MDP against the latent MDP it
unrolls (values by a separate latent recursion; the bisimulation partition by generic partition
refinement), bisimulation-vi at population, tl.run, input errors and the control."""

from __future__ import annotations

import numpy as np
import pytest

import theorylab as tl
from theorylab.algorithms.offline import make_dataset
from theorylab.algorithms.offline.dataset import population_dataset
from theorylab.algorithms.offline.history_abstraction import (
    HistoryAbstractionInputError,
    bisimulation_vi,
)
from theorylab.algorithms.offline.scoring import suboptimality
from theorylab.mdps import make
from theorylab.validations import representation_mutations as rm

SPEC = "history-pomdp:N=2,K=2,A=2,H=3"


def latent_optimal_value(N, A, H, hi, lo, stay) -> float:
    """V* of the latent POMDP (z observed through o), by backward recursion on N latents."""
    R = np.where(np.arange(A)[None, :] == np.arange(N)[:, None], hi, lo)  # (N, A)
    T = np.full((N, A, N), 1.0 / N)
    for z in range(N):
        T[z, z] = (1 - stay) / N
        T[z, z, z] += stay
    V = np.zeros(N)
    for _ in range(H):
        V = (R + T @ V).max(axis=1)
    return float(V.mean())


def refine(P: np.ndarray, R: np.ndarray, states: list[np.ndarray]) -> list[np.ndarray]:
    """Bisimulation classes of each stage's states by generic partition refinement, backwards:
    two stage-t states are together iff their rewards agree and, for every action, their laws
    over the stage-(t+1) classes agree."""
    H = len(states)
    classes: list[np.ndarray] = [None] * H
    for t in range(H - 1, -1, -1):
        keys = {}
        lab = np.empty(len(states[t]), dtype=np.int64)
        for i, s in enumerate(states[t]):
            parts = [tuple(np.round(R[t, s], 12))]
            if t < H - 1:
                nxt = states[t + 1]
                for a in range(P.shape[2]):
                    law = np.bincount(classes[t + 1], weights=P[t, s, a, nxt])
                    parts.append(tuple(np.round(law, 12)))
            lab[i] = keys.setdefault(tuple(parts), len(keys))
        classes[t] = lab
    return classes


def test_history_mdp_is_the_latent_mdp_unrolled():
    mdp = make(SPEC)
    P = mdp.dense_P()
    np.testing.assert_allclose(P.sum(axis=-1), 1.0, atol=1e-12)
    truth = mdp.reveal()
    assert mdp.S == 4 + 16 + 64 and truth.layout.offsets.tolist() == [0, 4, 20, 84]
    # V* of the history MDP equals V* of the latent model
    V = np.zeros(mdp.S)
    R = np.broadcast_to(np.asarray(mdp.R), (3, mdp.S, mdp.A))
    for t in range(2, -1, -1):
        V = (R[t] + P[t] @ V).max(axis=1)
    assert float(mdp.mu0 @ V) == pytest.approx(latent_optimal_value(2, 2, 3, 0.8, 0.2, 0.7))
    # the bisimulation classes of every stage are the latent states
    lay = truth.layout
    states = [np.arange(lay.offsets[t], lay.offsets[t + 1]) for t in range(3)]
    for t, lab in enumerate(refine(P, R, states)):
        z = truth.latent[states[t]]
        assert np.array_equal(lab[:, None] == lab[None, :], z[:, None] == z[None, :])


def test_bisimulation_vi_at_population():
    mdp = make(SPEC)
    fit = bisimulation_vi(population_dataset(mdp, coverage=0.0), observations=4)
    z_of_o = np.arange(4) // 2
    for h in range(3):
        lab = fit.info["blocks"][0, h]
        assert np.array_equal(lab[:, None] == lab[None, :], z_of_o[:, None] == z_of_o[None, :])
    assert suboptimality(mdp, fit.policy)[0] == pytest.approx(0.0, abs=1e-12)
    assert fit.value_estimate[0] == pytest.approx(
        latent_optimal_value(2, 2, 3, 0.8, 0.2, 0.7), abs=1e-9
    )


def test_unseen_histories_get_the_policy_of_their_block():
    """With data on a few trajectories only, bisimulation-vi still acts on every history (through
    its last observation) while history VI has no estimate for the unseen ones."""
    mdp = make("history-pomdp:N=2,K=4,A=2,H=3")
    data = make_dataset(mdp, 3 * 4096, coverage=0.0, seeds=1, seed=3)
    fit = bisimulation_vi(data, observations=8)
    seen = np.zeros(mdp.S, dtype=bool)
    seen[data.states[0]] = True
    last = mdp.reveal().layout.offsets[2]
    assert not seen[last:].all()  # some final-stage histories never appear
    assert suboptimality(mdp, fit.policy)[0] == pytest.approx(0.0, abs=1e-12)


def test_tl_run_and_input_errors():
    res = tl.run("bisimulation-vi", SPEC, dataset_size=[96, 3 * 2048], seeds=2, observations=4)
    assert res.suboptimality.shape == (2, 2)
    data = make_dataset(make(SPEC), 30, coverage=0.0)
    with pytest.raises(HistoryAbstractionInputError, match="observations=3 does not match"):
        bisimulation_vi(data, observations=3)
    with pytest.raises(HistoryAbstractionInputError, match="observations must be the number"):
        bisimulation_vi(data)
    with pytest.raises(HistoryAbstractionInputError, match=r"delta must lie in \(0, 1\)"):
        bisimulation_vi(data, observations=4, delta=1.5)
    discounted = make_dataset(make("exo-block"), 30, coverage=0.0)
    with pytest.raises(HistoryAbstractionInputError, match="needs finite-horizon"):
        bisimulation_vi(discounted, observations=4)


def test_no_merge_control_keeps_every_observation():
    mdp = make(SPEC)
    data = make_dataset(mdp, 3 * 4096, coverage=0.0, seeds=2)
    with rm.bisimulation_no_merge():
        fit = bisimulation_vi(data, observations=4)
    assert all(len(set(fit.info["blocks"][b, h].tolist())) == 4 for b in range(2) for h in range(3))


# ------------------------------------------------------------ stitching (history-stitch)
STITCH = "history-stitch:K=2,H=4,exit=0.3"


def test_stitch_family_by_hand():
    # K = 2: observations o = 2 z + xi, z in path 0 / side 1 / sink 2; O = 6, S = 6 + 36 + 216
    # + 1296. From history o_0 = 0 (path, xi 0) at stage 0: advance (1) goes to (path, xi) w.p.
    # 1/2 each, exit (0) to (sink, xi) w.p. 1/2 each and pays 0.3; advance pays 1 only at stage 3.
    mdp = make(STITCH)
    assert mdp.S == 1554 and mdp.A == 2
    P = mdp.dense_P()
    np.testing.assert_allclose(P[0, 0, 1, 6 + 0 * 6 + np.array([0, 1])], [0.5, 0.5])
    np.testing.assert_allclose(P[0, 0, 0, 6 + np.array([4, 5])], [0.5, 0.5])
    R = np.asarray(mdp.R)
    assert R[0, 0, 0] == 0.3 and R[0, 0, 1] == 0.0
    last_path = int(mdp.reveal().layout.offsets[3])  # first stage-3 history: all (path, xi 0)
    assert R[3, last_path, 1] == 1.0 and R[2, int(mdp.reveal().layout.offsets[2]), 1] == 0.0
    # mu0: path or side, each with probability 1/2, xi uniform
    np.testing.assert_allclose(mdp.mu0[:6], [0.25, 0.25, 0.25, 0.25, 0.0, 0.0])


def test_stitch_optimal_value_by_enumeration():
    from theorylab.algorithms.planning import backward_induction
    from theorylab.validations.claims.representation import stitch_optimal_value

    # advance always: the path start collects 1 at stage H - 1, the side start joins at stage 1
    assert stitch_optimal_value(4, 0.3) == 1.0
    assert backward_induction(make(STITCH)).value == pytest.approx(1.0, abs=1e-12)


def test_halves_behaviour_covers_halves_only():
    from theorylab.mdps.families.history_pomdp import halves_behaviour

    mdp = make(STITCH)
    data = make_dataset(mdp, 4 * 512, behaviour=halves_behaviour(mdp), seeds=1, seed=2)
    s, a = data.states[0].reshape(512, 4), data.actions[0].reshape(512, 4)
    path_start = mdp.reveal().latent[s[:, 0]] == 0
    assert path_start.any() and (~path_start).any()
    np.testing.assert_array_equal(a[path_start][:, :2], 1)  # advance before stage 2
    np.testing.assert_array_equal(a[path_start][:, 2], 0)  # then exit
    np.testing.assert_array_equal(mdp.reveal().latent[s[~path_start][:, 1:]], 0)  # on the path


def test_stitching_only_through_the_abstraction_and_the_control():
    from theorylab.mdps.families.history_pomdp import halves_behaviour

    mdp = make(STITCH)
    data = make_dataset(mdp, 4 * 512, behaviour=halves_behaviour(mdp), seeds=4, seed=1)
    from theorylab.algorithms.offline import fit

    # history VI: path starts exit at stage 2 -> 0.3, side starts reach 1: V = 0.65 at best
    hist = suboptimality(mdp, fit("naive-vi", data).policy)
    assert (hist >= 0.35 - 1e-9).all()
    fitted = bisimulation_vi(data, observations=6)
    np.testing.assert_allclose(suboptimality(mdp, fitted.policy), 0.0, atol=1e-12)
    with rm.bisimulation_seen_histories_only():
        from theorylab.algorithms.offline import history_abstraction

        mutated = history_abstraction.bisimulation_vi(data, observations=6)
    assert (suboptimality(mdp, mutated.policy) >= 0.35 - 1e-9).all()
