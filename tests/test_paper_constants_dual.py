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
