"""Contrastive UCB (seed 000#12): the contrastive loss, its minimiser, the LSVI-UCB plan on the
learned features, input errors, and the claim against its mutation."""

from __future__ import annotations

import inspect
import math

import numpy as np
import pytest
from scipy.linalg import subspace_angles

import theorylab as tl
from theorylab.algorithms.online import contrastive_ucb as cu
from theorylab.mdps import make

MDP = "lowrank-simplex:S=6,A=3,d=2,H=3,seed=3"


def test_loss_gradient_matches_finite_differences():
    rng = np.random.default_rng(0)
    U, W = rng.standard_normal((2, 6, 3)), rng.standard_normal((2, 4, 3))
    pos = rng.integers(0, 5, (2, 6, 4)).astype(float)
    neg = rng.integers(0, 5, (2, 6, 4)).astype(float)
    loss, gU, gW = cu.contrastive_loss(U, W, pos, neg)
    eps = 1e-6
    for idx in [(0, 2, 1), (1, 5, 0)]:
        U2 = U.copy()
        U2[idx] += eps
        fd = (cu.contrastive_loss(U2, W, pos, neg)[0] - loss)[idx[0]] / eps
        assert fd == pytest.approx(gU[idx], rel=1e-4, abs=1e-7)
    for idx in [(0, 1, 2), (1, 3, 1)]:
        W2 = W.copy()
        W2[idx] += eps
        fd = (cu.contrastive_loss(U, W2, pos, neg)[0] - loss)[idx[0]] / eps
        assert fd == pytest.approx(gW[idx], rel=1e-4, abs=1e-7)


def test_loss_written_out():
    """L = sum C+ log(1 + 1/f) + C- log(1 + f), divided by the number of positives."""
    rng = np.random.default_rng(1)
    U, W = rng.standard_normal((3, 2)), rng.standard_normal((4, 2))
    pos = rng.integers(0, 4, (3, 4)).astype(float)
    neg = rng.integers(0, 4, (3, 4)).astype(float)
    want = 0.0
    for i in range(3):
        z = np.exp(U[i]) / np.exp(U[i]).sum()
        for j in range(4):
            f = sum(z[k] * math.exp(W[j, k]) for k in range(2))
            want += pos[i, j] * math.log(1 + 1 / f) + neg[i, j] * math.log(1 + f)
    assert cu.contrastive_loss(U, W, pos, neg)[0] == pytest.approx(want / pos.sum(), rel=1e-12)


def test_population_minimiser_is_the_density_ratio_and_recovers_the_span():
    """With expected counts C+ = N P(s'|s,a), C- = N m / S (m negatives per positive, uniform
    P^-), the minimiser is f = P / (m / S) = S P / m, rank d: the fitted factorisation reaches it
    and its span is phi*'s."""
    mdp = make(MDP)
    S, A, H = mdp.S, mdp.A, mdp.horizon
    P = np.broadcast_to(mdp.dense_P(), (H, S, A, S)).reshape(H, S * A, S)
    m = 2
    pos = 100.0 * P
    neg = np.full_like(P, 100.0 * m / S)
    fit = cu.ContrastiveFit((H,), S * A, S, 2, np.random.default_rng(0), 0.05)
    fit.steps(pos, neg, 6000)
    f = np.matmul(fit.phi, np.swapaxes(fit.psi, -1, -2))  # (H, SA, S)
    assert np.abs(f - S * P / m).max() < 2e-3
    truth = mdp.reveal().phi.reshape(S * A, -1)
    for h in range(H):
        assert np.sin(subspace_angles(fit.phi[h], truth).max()) < 1e-3


def test_uniform_negatives_count():
    rng = np.random.default_rng(0)
    new = np.zeros((3, 4, 5))
    new[0, 1, 2] = new[2, 3, 0] = 1.0
    neg = cu.sample_negatives(new, new, 3, rng)
    assert neg.sum(axis=-1).tolist() == (3 * new.sum(axis=-1)).tolist()


def test_plan_is_lsvi_ucb_written_out():
    """Q_h = min{r + phi^T Lambda^-1 sum phi (C V_{h+1}) + beta ||phi||_{Lambda^-1}, H} with the
    learned features, by explicit loops."""
    mdp = make(MDP)
    res_agent = []

    class Keep(cu.ContrastiveUCB):
        def __init__(self, *a, **k):
            super().__init__(*a, **k)
            res_agent.append(self)

    Keep.__signature__ = inspect.signature(cu.ContrastiveUCB)  # the runner reads episodes=
    tl.run(Keep, mdp, 30, 2, seed=0, rank=2, c=0.2)
    ag = res_agent[0]
    S, A, H, d = mdp.S, mdp.A, mdp.horizon, 2
    beta = 0.2 * d * H * math.sqrt(math.log(2 * d * 30 * H / 0.1))
    assert ag.beta == pytest.approx(beta, rel=1e-12)
    r = np.broadcast_to(np.asarray(mdp.R), (H, S, A)).reshape(H, S * A)
    for b in range(2):
        V = np.zeros(S)
        for h in range(H - 1, -1, -1):
            phi = ag.features[b, h]
            Lam = np.eye(d)
            rhs = np.zeros(d)
            for i in range(S * A):
                Lam += ag.pos[b, h, i].sum() * np.outer(phi[i], phi[i])
                rhs += phi[i] * (ag.pos[b, h, i] @ V)
            w = np.linalg.solve(Lam, rhs)
            Q = np.array(
                [
                    min(
                        r[h, i]
                        + phi[i] @ w
                        + min(beta * math.sqrt(phi[i] @ np.linalg.solve(Lam, phi[i])), H),
                        H,
                    )
                    for i in range(S * A)
                ]
            ).reshape(S, A)
            np.testing.assert_allclose(ag._Q[b, h], Q, atol=1e-9)
            V = Q.max(axis=-1)


@pytest.mark.parametrize(
    ("params", "match"),
    [
        ({}, "rank must be a positive integer"),
        ({"rank": 0}, "rank must be a positive integer"),
        ({"rank": 2, "c": -1.0}, "c must be finite"),
        ({"rank": 2, "n_negatives": 0}, "n_negatives must be a positive integer"),
        ({"rank": 2, "lr": 0.0}, "lr must be > 0"),
    ],
)
def test_input_errors(params, match):
    with pytest.raises(ValueError, match=match):
        tl.run("contrastive-ucb", MDP, 2, 1, **params)


def test_learns_on_the_lowrank_mdp():
    from theorylab.validations.reference import null_regret_per_episode

    mdp = make(MDP)
    res = tl.run("contrastive-ucb", mdp, 400, 2, seed=0, rank=2)
    null = null_regret_per_episode(mdp, res.optimal_value)  # the uniform policy's
    assert res.regret[:, -40:].mean() < 0.5 * null


def tiny_claim():
    from theorylab.validations.claims.representation import ContrastiveScale, ContrastiveUCBClaim

    return ContrastiveUCBClaim(
        name="contrastive-tiny",
        statement="tiny",
        mdp="lowrank-simplex:S=10,A=3,d=3,H=5,seed=0",
        scales={
            "quick": ContrastiveScale(
                episodes=60,
                seeds=2,
                n_grid=(1000, 10000, 100000),
                subspace_seeds=1,
                fit_iters=1500,
                regret_test=None,
            )
        },
    )


def test_claim_subspace_passes_and_the_mutation_fails_it():
    from theorylab.validations.representation_mutations import contrastive_negatives_from_positives

    claim = tiny_claim()
    checks = {c.name: c for c in claim.run("quick").checks}
    assert checks["subspace-rate"].passed and checks["subspace-small"].passed
    with contrastive_negatives_from_positives():
        bad = {c.name: c for c in claim.run("quick").checks}
    assert not bad["subspace-rate"].passed
    assert not bad["subspace-small"].passed
