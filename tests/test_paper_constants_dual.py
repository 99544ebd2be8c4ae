"""REPS' temperature pinned to Peters, Muelling, Altun 2010, written out here (issue 26).

REPS' inverse temperature 1 / eta is not a constant but the multiplier of the KL bound epsilon;
what is pinned is the paper's solution form and dual (section 2), evaluated in this file at the
returned (eta, V): mu*(s, a) = q(s, a) exp(delta_V(s, a) / eta) / Z with
delta_V = r + P V - V, g(eta, V) = eta epsilon + eta log sum q exp(delta_V / eta), and the
binding constraint KL(mu* || q) = epsilon (d g / d eta = 0). A temperature written as eta
where 1 / eta belongs, or a KL bound dropped from the dual, fails it.
"""

from __future__ import annotations

import numpy as np
import pytest

from theorylab.mdps import TabularMDP


def instance(seed, S=4, A=2):
    rng = np.random.default_rng(seed)
    P = rng.dirichlet(np.ones(S), size=(S, A))  # (S, A, S)
    mdp = TabularMDP(P, rng.uniform(size=(S, A)), gamma=0.9)
    pi = rng.dirichlet(np.ones(A), size=S)  # (S, A)
    P_pi = np.einsum("sa,sat->st", pi, P)
    lhs = np.vstack([(P_pi - np.eye(S)).T, np.ones(S)])
    d = np.linalg.lstsq(lhs, np.r_[np.zeros(S), 1.0], rcond=None)[0]
    return mdp, P, d[:, None] * pi  # q: the stationary state-action law of pi


@pytest.mark.parametrize(("seed", "epsilon"), [(0, 0.05), (3, 0.2)])
def test_reps_solution_and_dual_are_peters2010(seed, epsilon):
    from theorylab.algorithms.dual.reps import reps

    mdp, P, q = instance(seed)
    sol = reps(mdp, q, epsilon)
    assert sol.binding
    r = np.asarray(mdp.R)
    delta = r + np.einsum("sat,t->sa", P, sol.V) - sol.V[:, None]  # delta_V(s, a)
    w = q * np.exp(delta / sol.eta)
    mu = w / w.sum()  # mu* = q exp(delta_V / eta) / Z
    np.testing.assert_allclose(sol.mu, mu, rtol=1e-6, atol=1e-9)
    g = sol.eta * epsilon + sol.eta * np.log(w.sum())  # g(eta, V)
    assert sol.dual_value == pytest.approx(g, rel=1e-8)
    kl = float(np.sum(mu * np.log(mu / q)))
    assert kl == pytest.approx(epsilon, rel=1e-6)  # d g / d eta = epsilon - KL = 0
    assert sol.primal_value == pytest.approx(g, rel=1e-6)  # strong duality


def dvl_loss(x, loss, lam, max_clip=7.0):
    # Sikchi et al. 2024 (Dual RL), f-DVL's value losses as in the authors' code (DVL
    # offline/critic.py; theory-preference-dual-llm.md 6.3 [V]), x = Q - V, max_clip = 7 [M]:
    # chi-square lam max(x + x^2/4, 0) - (1 - lam) x; total variation lam max(x, 0) - (1 - lam) x;
    # reverse KL (XQL's Gumbel loss) z = min(x / lam, max_clip), m = max(max z, -1),
    # e^(z - m) - z e^(-m) - e^(-m)
    if loss == "chi-square":
        return lam * np.maximum(x + x * x / 4, 0) - (1 - lam) * x
    if loss == "total-variation":
        return lam * np.maximum(x, 0) - (1 - lam) * x
    z = np.minimum(x / lam, max_clip)
    m = max(z.max(), -1.0)
    return np.exp(z - m) - z * np.exp(-m) - np.exp(-m)


@pytest.mark.parametrize("loss", ["chi-square", "total-variation", "reverse-kl"])
@pytest.mark.parametrize("lam", [0.6, 0.9])
def test_f_dvl_value_losses_and_v_step(loss, lam):
    from theorylab.algorithms.dual.f_dvl import value_loss, value_step

    x = np.linspace(-6, 9, 31)
    np.testing.assert_allclose(value_loss(x, loss, lam), dvl_loss(x, loss, lam), rtol=1e-12)
    rng = np.random.default_rng(1)
    Q = rng.uniform(0, 3, size=(4, 3))
    w = rng.uniform(0.1, 1, size=(4, 3))
    V = value_step(Q, w, loss, lam)
    if loss == "reverse-kl":  # the minimiser in closed form: lam log(sum w e^(Q/lam) / sum w)
        expected = lam * np.log((w * np.exp(Q / lam)).sum(axis=1) / w.sum(axis=1))
        np.testing.assert_allclose(V, expected, rtol=1e-10)
    else:  # V(s) minimises sum_a w loss(Q - v): no better v nearby
        for s in range(4):
            f = lambda v, s=s: float((w[s] * dvl_loss(Q[s] - v, loss, lam)).sum())  # noqa: E731
            assert f(V[s]) <= min(f(V[s] - 1e-4), f(V[s] + 1e-4)) + 1e-12
