"""Representation from videos (seed 001#30): the exogenous block MDP against its definition, the
three decoders at population (exact answers: the latent, or exactly the distractor), the
downstream policy against brute-force evaluation, input errors, and both controls failing."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import theorylab as tl
from theorylab.algorithms.offline import video_representation as vr
from theorylab.algorithms.offline.dataset import make_dataset, population_dataset
from theorylab.errors import InvalidMDPError
from theorylab.mdps import make
from theorylab.mdps.families.exo_block import distractor_of
from theorylab.validations import representation_mutations as rm
from theorylab.validations.claims.representation import decoding_accuracy

IID = "exo-block:N=4,E=4,m=2,slip=0.5,noise=iid"
STICKY = "exo-block:N=4,E=4,m=2,slip=0.5,noise=sticky,stay=0.95"


def test_exo_block_definition():
    mdp = make(STICKY)
    P = mdp.dense_P()
    z, e = mdp.reveal().latent, distractor_of(mdp.S, 4, 2)
    np.testing.assert_allclose(P.sum(axis=-1), 1.0)
    # the distractor's law does not depend on the action or the latent, and is sticky
    for x, a in itertools.product(range(mdp.S), range(mdp.A)):
        law_e = np.bincount(e, weights=P[x, a], minlength=4)
        expected = np.full(4, 0.05 / 3)
        expected[e[x]] = 0.95
        np.testing.assert_allclose(law_e, expected, atol=1e-12)
        # the latent moves left / stays / right with probability 0.5 + 0.5 / 4
        law_z = np.bincount(z, weights=P[x, a], minlength=4)
        target = (z[x] + (-1, 0, 1)[a]) % 4
        assert law_z[target] == pytest.approx(0.5 + 0.125)
    # reward 1 at latent 0 for every action
    np.testing.assert_array_equal(mdp.reward(0), np.repeat((z == 0)[:, None] * 1.0, 3, axis=1))
    iid = make(IID).dense_P()
    np.testing.assert_allclose(
        np.bincount(e, weights=iid[5, 1], minlength=4), np.full(4, 0.25), atol=1e-12
    )


def test_exo_block_input_errors():
    with pytest.raises(InvalidMDPError, match="noise must be one of"):
        make("exo-block:noise=bursty")
    with pytest.raises(InvalidMDPError, match="parameter N must be an integer >= 3"):
        make("exo-block:N=2")
    with pytest.raises(InvalidMDPError, match="gamma must lie in"):
        make("exo-block:gamma=0")


@pytest.mark.parametrize("spec", [IID, STICKY])
def test_population_decoders(spec):
    """At population: inverse kinematics always decodes the latent; the video objectives decode
    the latent with iid noise and exactly the distractor with persistent noise."""
    mdp = make(spec)
    z, e = mdp.reveal().latent, distractor_of(mdp.S, 4, 2)
    C = vr.transition_counts(population_dataset(mdp, coverage=0.0))
    for obj in vr.OBJECTIVES:
        labels = vr.decode(C, obj, 4)[0]
        if obj == "inverse-kinematics" or spec == IID:
            assert decoding_accuracy(z, labels, 4) == 1.0
        else:
            assert decoding_accuracy(e, labels, 4) == 1.0
            assert decoding_accuracy(z, labels, 4) == 0.25


def test_inverse_signature_is_the_bayes_posterior():
    """P(a | x, x') from the population counts equals pi(a) T(z'|z, a) / sum_b pi(b) T(z'|z, b)
    written out from the latent model (the distractor cancels)."""
    mdp = make(STICKY)
    z, T = mdp.reveal().latent, mdp.reveal().T[0]  # (N, A, N)
    C = vr.transition_counts(population_dataset(mdp, coverage=0.0))[0]
    sig = vr.signatures(C, "inverse-kinematics").reshape(mdp.S, mdp.S, mdp.A)
    post = T / T.sum(axis=1, keepdims=True)  # uniform behaviour: pi(a) = 1/3 cancels
    np.testing.assert_allclose(sig, np.swapaxes(post, 1, 2)[z][:, z], atol=1e-9)


def test_downstream_policy_against_enumeration():
    """With the true decoder, the latent plan is optimal: its value equals the best of all
    3^4 latent-deterministic policies evaluated exactly."""
    mdp = make(STICKY)
    z = mdp.reveal().latent
    res = vr.video_representation(population_dataset(mdp, coverage=0.0), "inverse-kinematics", 4)
    P, R, g = mdp.dense_P(), mdp.reward(0), mdp.gamma

    def value(pol):  # pol (S,) actions
        Pp, rp = P[np.arange(mdp.S), pol], R[np.arange(mdp.S), pol]
        return float(mdp.mu0 @ np.linalg.solve(np.eye(mdp.S) - g * Pp, rp))

    best = max(value(np.array(acts)[z]) for acts in itertools.product(range(3), repeat=4))
    assert value(res.policy[0]) == pytest.approx(best, abs=1e-9)
    assert res.value_estimate[0] == pytest.approx(best, abs=1e-6)


def test_tl_run_and_input_errors():
    res = tl.run("video-representation", STICKY, dataset_size=[2000, 16000], seeds=2, n_latent=4)
    assert res.suboptimality.shape == (2, 2)
    assert np.all(res.suboptimality[:, -1] <= 1e-9)
    data = make_dataset(make(STICKY), 500, coverage=0.0)
    with pytest.raises(vr.VideoRepresentationInputError, match="objective must be one of"):
        vr.video_representation(data, "autoencoder", 4)
    with pytest.raises(vr.VideoRepresentationInputError, match="n_latent must be an integer"):
        vr.video_representation(data, "forward", None)
    with pytest.raises(vr.VideoRepresentationInputError, match="prior must be a positive"):
        vr.video_representation(data, "forward", 4, prior=0.0)


def test_controls_break_each_side():
    # the distractor forced iid: the video objective recovers the latent on the sticky spec
    with rm.exo_block_distractor_iid():
        mdp = make(STICKY)
        C = vr.transition_counts(population_dataset(mdp, coverage=0.0))
    assert decoding_accuracy(mdp.reveal().latent, vr.decode(C, "forward", 4)[0], 4) == 1.0
    # inverse kinematics without the actions: it decodes the distractor instead
    mdp = make(STICKY)
    C = vr.transition_counts(population_dataset(mdp, coverage=0.0))
    with rm.video_ik_without_actions():
        labels = vr.decode(C, "inverse-kinematics", 4)[0]
    assert decoding_accuracy(mdp.reveal().latent, labels, 4) == 0.25
