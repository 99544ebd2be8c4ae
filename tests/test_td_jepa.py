"""TD-JEPA (seed 002-004#A4), idealised: the symmetric-walk family against its definition, the
dynamics against an exact SVD of the successor matrix, rank conservation, the zero-shot Q against
a linear solve, the estimator through tl.run, input errors, and both controls failing."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.linalg import subspace_angles

import theorylab as tl
from theorylab.algorithms.offline import td_jepa as tj
from theorylab.algorithms.offline.dataset import population_dataset
from theorylab.errors import InvalidMDPError
from theorylab.mdps import make
from theorylab.validations import representation_mutations as rm
from theorylab.validations.claims.representation import span_sine

WALK = "symmetric-walk:S=12,A=3,gamma=0.9,rank=3,seed=4"


def exact(mdp):
    """(P^u, M, U, V^u, Q^u) of the uniform policy, written out independently of the module."""
    S, A, g = mdp.S, mdp.A, mdp.gamma
    P = mdp.dense_P()
    Pu = P.sum(axis=1) / A
    M = np.linalg.inv(np.eye(S) - g * Pu)
    U = np.linalg.svd(M)[0]
    r = mdp.reward(0).mean(axis=1)
    V = np.linalg.solve(np.eye(S) - g * Pu, r)
    return Pu, M, U, V, mdp.reward(0) + g * P @ V


def test_symmetric_walk_definition():
    mdp = make(WALK)
    Pu, M, U, V, _ = exact(mdp)
    P = mdp.dense_P()
    for a in range(mdp.A):
        np.testing.assert_allclose(P[:, a], P[:, a].T)  # each action's kernel is symmetric
    np.testing.assert_allclose(P.sum(axis=-1), 1.0)
    np.testing.assert_allclose(P.sum(axis=0), 1.0)  # doubly stochastic
    np.testing.assert_allclose(Pu, mdp.reveal().P_uniform)
    # M is symmetric positive definite, its top singular vector is constant
    assert np.linalg.eigvalsh(M).min() > 0
    np.testing.assert_allclose(np.abs(U[:, 0]), 1 / np.sqrt(mdp.S), atol=1e-10)
    # the reward, hence V^u = M r, lies in the top-3 singular subspace of M
    R = mdp.reward(0)
    assert R.min() >= 0 and R.max() <= 1 and np.ptp(R, axis=1).max() == 0
    proj = U[:, :3] @ U[:, :3].T
    np.testing.assert_allclose(proj @ R[:, 0], R[:, 0], atol=1e-10)
    np.testing.assert_allclose(proj @ V, V, atol=1e-9)


def test_symmetric_walk_input_errors():
    with pytest.raises(InvalidMDPError, match="gamma must lie in"):
        make("symmetric-walk:gamma=1.0")
    with pytest.raises(InvalidMDPError, match="rank must be < S"):
        make("symmetric-walk:S=4,rank=4")
    with pytest.raises(InvalidMDPError, match="parameter S must be an integer >= 3"):
        make("symmetric-walk:S=2")


def test_dynamics_reach_the_top_singular_subspace_and_keep_rank():
    mdp = make(WALK)
    Pu, M, U, V, Q = exact(mdp)
    fit = tj.train(np.stack([Pu, Pu]), mdp.gamma, 3, 3000, 1.0, np.random.default_rng(1))
    for b in range(2):
        assert np.sin(subspace_angles(fit.Phi[b], U[:, :3])).max() < 1e-5
        assert np.sin(subspace_angles(fit.Psi[b], U[:, :3])).max() < 1e-5
        # the predictor recovers the successor features of Psi: Phi T = M Psi
        np.testing.assert_allclose(fit.Phi[b] @ fit.T[b], M @ fit.Psi[b], atol=1e-5)
    # the Gram matrix only grows from I (next test), so sigma_min(Phi / sqrt(S)) stays at 1
    assert fit.min_singular.min() > 1 - 1e-9
    pi = np.full((mdp.S, mdp.A), 1.0 / mdp.A)
    Q_hat = tj.zero_shot_q(fit, mdp.dense_P(), mdp.reward(0), pi, mdp.gamma)  # (2, S, A)
    np.testing.assert_allclose(Q_hat, np.stack([Q, Q]), atol=1e-5)


def test_semi_gradient_conserves_the_gram_matrix_to_first_order():
    """At the LSTD predictor the residual is orthogonal to span Phi, so Phi^T G = 0 and a step
    changes the Gram matrix by lr^2 G^T G only (positive semi-definite: it never shrinks)."""
    mdp = make(WALK)
    Pu = exact(mdp)[0][None]
    Phi, Psi = tj.initial_encoders(1, mdp.S, 3, np.random.default_rng(0))
    for _ in range(5):
        G, G_task = tj.semi_gradients(Phi, Psi, Pu, mdp.gamma)
        np.testing.assert_allclose(np.swapaxes(Phi, -1, -2) @ G, 0.0, atol=1e-10)
        np.testing.assert_allclose(np.swapaxes(Psi, -1, -2) @ G_task, 0.0, atol=1e-10)
        new = Phi - 0.7 * G
        step = np.swapaxes(new, -1, -2) @ new - np.swapaxes(Phi, -1, -2) @ Phi
        np.testing.assert_allclose(step, 0.49 * np.swapaxes(G, -1, -2) @ G, atol=1e-10)
        Phi, Psi = new, Psi - 0.7 * G_task


def test_orthogonal_encoders_are_a_fixed_point():
    """Phi^T Psi = 0 gives T = 0 and no movement: why the initialisations are independent."""
    mdp = make(WALK)
    Pu = exact(mdp)[0][None]
    Q = np.linalg.qr(np.random.default_rng(0).normal(size=(mdp.S, 6)))[0] * np.sqrt(mdp.S)
    G, _ = tj.semi_gradients(Q[None, :, :3], Q[None, :, 3:], Pu, mdp.gamma)
    np.testing.assert_allclose(G, 0.0, atol=1e-12)


def test_estimator_at_population_data_is_exact_and_through_tl_run():
    mdp = make(WALK)
    _, _, _, V, _ = exact(mdp)
    pi = np.full((mdp.S, mdp.A), 1.0 / mdp.A)
    data = population_dataset(mdp, coverage=0.0, seeds=2)
    values, fit = tj.td_jepa(data, pi, rank=3, iterations=2000)
    np.testing.assert_allclose(values, mdp.mu0 @ V, atol=1e-5)
    res = tl.run(
        "td-jepa", WALK, dataset_size=[2000, 20000], target="uniform", seeds=3, iterations=500
    )
    assert res.estimates.shape == (3, 2)
    assert res.true_value == pytest.approx(mdp.mu0 @ V, abs=1e-10)
    assert np.abs(res.estimates[:, -1] - res.true_value).mean() < 0.1


def test_span_sine_counts_rank_deficient_spans_as_one():
    U = np.linalg.qr(np.random.default_rng(0).normal(size=(8, 3)))[0]
    assert span_sine(U @ np.diag([1.0, 2.0, 3.0]), U) < 1e-12
    assert span_sine(np.repeat(U[:, :1], 3, axis=1), U) == 1.0


def test_input_errors_name_the_parameter():
    data = population_dataset(make(WALK), coverage=0.0)
    pi = np.full((12, 3), 1 / 3)
    with pytest.raises(tj.TDJEPAInputError, match="rank must be < S = 12"):
        tj.td_jepa(data, pi, rank=12)
    with pytest.raises(tj.TDJEPAInputError, match="iterations must be a positive integer"):
        tj.td_jepa(data, pi, iterations=0)
    with pytest.raises(tj.TDJEPAInputError, match=r"lr must be a number in \(0, 1\]"):
        tj.td_jepa(data, pi, lr=2.0)


@pytest.mark.parametrize("control", ["degenerate_init", "no_stop_gradient"])
def test_controls_break_the_subspace(control):
    mdp = make(WALK)
    Pu, _, U, _, _ = exact(mdp)
    with getattr(rm, f"td_jepa_{control}")():
        fit = tj.train(Pu[None], mdp.gamma, 3, 1000, 1.0, np.random.default_rng(0))
    assert span_sine(fit.Phi[0], U[:, :3]) > 0.5
    if control == "degenerate_init":
        assert np.linalg.matrix_rank(fit.Phi[0]) == 1
        assert fit.min_singular[0] == 0.0
