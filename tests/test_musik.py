"""MusIK (seed 001#27) and the block combination lock: the family against closed forms, the
decoder, the matching, input errors, and the one-step baseline failing."""

from __future__ import annotations

import inspect

import numpy as np
import pytest

import theorylab as tl
from theorylab.algorithms.online import musik as mk
from theorylab.errors import InvalidMDPError
from theorylab.mdps import make
from theorylab.validations.claims.representation import decoding_accuracy

LOCK = "block-lock:H=3,A=2,n_good=2,m=2,reward=0.8,code_seed=1"


def policy_value(mdp, pol):
    """V^pi(mu0) by backward recursion over observations; pol ``(H, S)`` actions or
    ``(H, S, A)`` probabilities."""
    H, S, A = mdp.horizon, mdp.S, mdp.A
    P = np.broadcast_to(mdp.dense_P(), (H, S, A, S))
    R = np.broadcast_to(np.asarray(mdp.R), (H, S, A))
    V = np.zeros(S)
    for h in range(H - 1, -1, -1):
        Q = R[h] + P[h] @ V  # (S, A)
        p = pol[h] if pol.ndim == 3 else np.eye(A)[pol[h]]
        V = (p * Q).sum(axis=-1)
    return float(mdp.mu0 @ V)


def test_block_lock_closed_forms():
    mdp = make(LOCK)
    truth = mdp.reveal()
    H, S, A = mdp.horizon, mdp.S, mdp.A
    np.testing.assert_allclose(np.broadcast_to(mdp.dense_P(), (H, S, A, S)).sum(-1), 1.0)
    # the blocks are disjoint: every observation belongs to exactly one latent, m per latent
    assert np.bincount(truth.latent).tolist() == [2, 2, 2]
    # optimal: the secret action at every good latent; V* = reward * n_good / N
    best = np.zeros((H, S), dtype=np.int64)
    for h in range(H):
        for j in range(2):
            best[h, truth.latent == j] = truth.secrets[h, j]
    assert policy_value(mdp, best) == pytest.approx(0.8 * 2 / 3, abs=1e-12)
    # uniform policy: reward * (n_good / N) * A^-H
    uniform = np.full((H, S, A), 1.0 / A)
    assert policy_value(mdp, uniform) == pytest.approx(0.8 * (2 / 3) * 2.0**-H, abs=1e-12)
    # distinct secrets among the good latents of every step
    assert all(len(set(row)) == 2 for row in truth.secrets.tolist())


def test_block_lock_input_errors():
    with pytest.raises(InvalidMDPError, match="n_good must be <= A"):
        make("block-lock:A=2,n_good=3")
    with pytest.raises(InvalidMDPError, match="parameter m must be an integer >= 1"):
        make("block-lock:m=0")


def test_decoding_accuracy_is_permutation_invariant():
    latent = np.array([0, 0, 1, 1, 2, 2])
    assert decoding_accuracy(latent, np.array([2, 2, 0, 0, 1, 1]), 3) == 1.0
    # g0 and g1 merged into one label: 4 of 6 observations matched at best
    assert decoding_accuracy(latent, np.array([0, 0, 0, 0, 1, 1]), 3) == pytest.approx(4 / 6)


def test_reach_policy_reaches_good_latents_in_the_true_model():
    mdp = make(LOCK)
    truth = mdp.reveal()
    decoders = np.broadcast_to(truth.latent, (mdp.horizon, mdp.S))
    for target in range(2):  # good latents at step 2: reached with probability 2/3 * 1/2
        pol = np.zeros((mdp.horizon, mdp.S), dtype=np.int64)
        pol[:2] = mk.reach_policy(truth.T, decoders, target, 2)
        for h in range(2):
            for j in range(2):
                assert np.all(pol[h, truth.latent == j] == truth.secrets[h, j])


def run_musik(n, seeds=4):
    kept = []

    class Keep(mk.MusIK):
        def __init__(self, *a, **k):
            super().__init__(*a, **k)
            kept.append(self)

    Keep.__signature__ = inspect.signature(mk.MusIK)
    mdp = make(LOCK)
    res = tl.run(Keep, mdp, mdp.horizon * n + 1, seeds, seed=0, samples=n, n_latent=3)
    truth = mdp.reveal()
    acc = np.array(
        [[decoding_accuracy(truth.latent, d, 3) for d in decs] for decs in kept[0].decoders]
    )
    return res, acc


def test_musik_decodes_and_plays_optimally():
    res, acc = run_musik(1500)
    assert acc.min() == 1.0
    assert res.regret[:, -1].max() < 1e-9
    assert np.abs(res.value_estimates[:, -1] - res.optimal_value).max() < 0.1


def test_one_step_inverse_kinematics_merges_the_good_latents():
    from theorylab.validations.representation_mutations import musik_one_step_inverse_kinematics

    with musik_one_step_inverse_kinematics():
        _, acc = run_musik(1500)
    assert acc[:, 0].min() == 1.0  # layer 0 keeps the multi-step signature
    assert acc[:, 1:].max() < 0.9  # the merged good latents cost a third of the observations


@pytest.mark.parametrize(
    ("params", "match"),
    [
        ({}, "n_latent must be a positive integer"),
        ({"n_latent": 3, "samples": 0}, "samples must be a positive integer"),
        ({"n_latent": 3, "k_max": 0}, "k_max must be a positive integer"),
    ],
)
def test_input_errors(params, match):
    with pytest.raises(ValueError, match=match):
        tl.run("musik", LOCK, 2, 1, **params)
