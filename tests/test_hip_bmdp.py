"""HiP-BMDP state abstractions (seed 001#31): the hip-bmdp family by hand, hip-abstraction-vi at
population (exact decoder, exact task models, optimal policy), pooled vs per-task decoders at a
fixed total of samples, tl.run, input errors and the control."""

from __future__ import annotations

import numpy as np
import pytest

import theorylab as tl
from theorylab.algorithms.offline import fit, make_dataset
from theorylab.algorithms.offline.dataset import population_dataset
from theorylab.algorithms.offline.hip_abstraction import (
    HiPAbstractionInputError,
    hip_abstraction_vi,
)
from theorylab.algorithms.offline.scoring import suboptimality
from theorylab.mdps import make
from theorylab.validations import representation_mutations as rm
from theorylab.validations.claims.representation import decoder_error


def test_hip_bmdp_by_hand():
    # M = 2: theta = 1/4, 3/4. N = 4 latents, b = 4: X = 16, q(4 z + j | z) = (j + 1) / 10.
    # task 0, x = 0 (z = 0), right (1): to z = 1 w.p. 0.1 + 0.8 / 4 = 0.3, so x' = 4 (j = 0)
    # w.p. 0.3 * 0.1 = 0.03 and x' = 0 + 3 (stay, j = 3) w.p. 0.7 * 0.4 = 0.28.
    # task 1 (states 16 ..), x = 0, left (0): to z = 3 w.p. 0.9 - 0.8 * 3 / 4 = 0.3, x' = 15
    # (j = 3) w.p. 0.3 * 0.4 = 0.12; no mass from task 1 to task 0.
    mdp = make("hip-bmdp:M=2,N=4,b=4")
    P = mdp.dense_P()
    assert mdp.S == 32 and mdp.A == 2
    assert P[0, 1, 4] == pytest.approx(0.03) and P[0, 1, 3] == pytest.approx(0.28)
    assert P[16, 0, 16 + 15] == pytest.approx(0.12)
    assert P[16:, :, :16].sum() == 0.0 and P[:16, :, 16:].sum() == 0.0
    np.testing.assert_allclose(P.sum(axis=-1), 1.0, atol=1e-12)
    R = np.asarray(mdp.R)
    np.testing.assert_array_equal(R[:, 0], np.tile(np.arange(16) < 4, 2).astype(float))
    truth = mdp.reveal()
    np.testing.assert_array_equal(truth.thetas, [0.25, 0.75])
    # every observation of a block has the same next-observation law in each task
    for m in range(2):
        rows = P[m * 16 : (m + 1) * 16, :, m * 16 : (m + 1) * 16]
        for z in range(4):
            np.testing.assert_allclose(rows[4 * z : 4 * z + 4], rows[4 * z][None].repeat(4, 0))


def test_population_decoder_models_and_policy_are_exact():
    mdp = make("hip-bmdp:M=3")
    res = hip_abstraction_vi(population_dataset(mdp, coverage=0.0), tasks=3, n_latent=4)
    truth = mdp.reveal()
    for m in range(3):
        lab = res.info["decoders"][0, m]
        assert decoder_error(lab, truth.decoder, 4) == 0.0
        perm = np.zeros(4, dtype=np.int64)
        perm[lab] = truth.decoder
        np.testing.assert_allclose(
            res.info["latent_models"][0, m][np.argsort(perm)][:, :, np.argsort(perm)],
            truth.T[m],
            atol=1e-9,
        )
    assert suboptimality(mdp, res.policy)[0] == pytest.approx(0.0, abs=1e-9)


def test_decoder_error_against_hand_values():
    truth = np.array([0, 0, 1, 1, 2, 2])
    assert decoder_error(np.array([2, 2, 0, 0, 1, 1]), truth, 3) == 0.0  # relabelled
    assert decoder_error(np.array([0, 0, 1, 1, 2, 1]), truth, 3) == pytest.approx(1 / 6)


def test_pooled_beats_per_task_at_fixed_total_and_the_control():
    mdp = make("hip-bmdp:M=16")
    truth = mdp.reveal()
    data = make_dataset(mdp, 600, coverage=0.0, seeds=4, seed=1)
    pooled = fit("hip-abstraction-vi", data, tasks=16, n_latent=4)
    alone = fit("hip-abstraction-vi", data, tasks=16, n_latent=4, pooled=False)

    def err(res):
        return np.mean(
            [decoder_error(d, truth.decoder, 4) for d in res.info["decoders"][:, :].reshape(-1, 16)]
        )

    # every task shares the pooled decoder
    assert (pooled.info["decoders"] == pooled.info["decoders"][:, :1]).all()
    assert err(pooled) + 0.2 <= err(alone)
    with rm.hip_ignores_shared_emission():
        mutated = fit("hip-abstraction-vi", data, tasks=16, n_latent=4)
    np.testing.assert_array_equal(mutated.info["decoders"], alone.info["decoders"])


def test_tl_run_and_input_errors():
    res = tl.run(
        "hip-abstraction-vi", "hip-bmdp:M=2", dataset_size=[200, 4000], seeds=2, tasks=2, n_latent=4
    )
    assert res.suboptimality.shape == (2, 2)
    data = make_dataset(make("hip-bmdp:M=2"), 50, coverage=0.0)
    with pytest.raises(HiPAbstractionInputError, match="tasks must be the number of tasks"):
        hip_abstraction_vi(data, tasks=3, n_latent=4)
    with pytest.raises(HiPAbstractionInputError, match="tasks must be the number of tasks"):
        hip_abstraction_vi(data, n_latent=4)
    with pytest.raises(HiPAbstractionInputError, match="n_latent must be an integer"):
        hip_abstraction_vi(data, tasks=2, n_latent=17)
    with pytest.raises(HiPAbstractionInputError, match="pooled must be True or False"):
        hip_abstraction_vi(data, tasks=2, n_latent=4, pooled="yes")
    finite = make_dataset(make("history-pomdp"), 30, coverage=0.0)
    with pytest.raises(HiPAbstractionInputError, match="needs discounted data"):
        hip_abstraction_vi(finite, tasks=1, n_latent=2)
