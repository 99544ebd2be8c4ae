"""Active context selection (seed 001#18): the rare-context instance, the index against a brute
force written here, the runner's extras, input errors, and the mutation failing the claim's test.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import theorylab as tl
from theorylab.algorithms.preference.active_contexts import (
    active_exploration,
    block_terms,
    context_indices,
)
from theorylab.algorithms.preference.mle import MLEError
from theorylab.mdps import make
from theorylab.mdps.preference import LinearBTLOracle, PreferenceError
from theorylab.runners.preference import oracle_generators


def _oracle(bandit, B: int, seed: int = 0) -> LinearBTLOracle:
    return LinearBTLOracle(bandit.theta, oracle_generators(seed, list(range(B))))


def test_rare_context_geometry():
    b = make("rare-context:S=5,A=12")
    assert b.phi.shape == (5, 12, 4) and b.B == 1.0
    assert abs(b.theta.sum()) < 1e-12 and abs(np.linalg.norm(b.theta) - 0.8) < 1e-12
    assert np.allclose(b.phi.sum(-1), 0.0)  # every feature in 1^perp
    # the rare context alone has a component along u3 (orthogonal to the common contexts' plane)
    common = b.phi[:-1].reshape(-1, 4)
    _, sv, vt = np.linalg.svd(common)
    N = vt[2:]  # the common contexts' null space: u3 and the all-ones direction
    c = np.array([N[1].sum(), -N[0].sum()])  # the combination orthogonal to 1
    normal = c @ N / np.linalg.norm(c @ N)
    assert sv[2] < 1e-12 and np.abs(b.phi[-1] @ normal).max() > 0.4
    # the rare context's radius is R_rare, the common ones' R
    assert np.allclose(np.linalg.norm(b.phi[:-1], axis=-1), 1.0)
    assert np.allclose(np.linalg.norm(b.phi[-1], axis=-1), 0.5)


@pytest.mark.parametrize(
    "spec, key", [("rare-context:S=1", "S"), ("rare-context:A=2", "A"), ("rare-context:R=2", "R")]
)
def test_rare_context_bad_input(spec, key):
    with pytest.raises(PreferenceError, match=key):
        make(spec)


def test_index_matches_brute_force():
    """g(x) and the challenger against a loop over (seed, x, a) written here."""
    b = make("rare-context:S=4,A=10")
    rng = np.random.default_rng(3)
    theta = rng.normal(size=(3, 4))
    G = rng.normal(size=(3, 4, 4))
    M_inv = np.einsum("bij,bkj->bik", G, G) + 0.1 * np.eye(4)
    f = 0.7
    greedy, gap, zz = block_terms(b.phi, theta)
    g, chall = context_indices(gap, zz, M_inv, f)
    for k in range(3):
        for s in range(4):
            r = [float(theta[k] @ b.phi[s, a]) for a in range(10)]
            a_star = int(np.argmax(r))
            assert greedy[k, s] == a_star
            best, arg = -np.inf, -1
            for a in range(10):
                if a == a_star:
                    continue
                z = b.phi[s, a] - b.phi[s, a_star]
                u = r[a] - r[a_star] + f * math.sqrt(z @ M_inv[k] @ z)
                if u > best:
                    best, arg = u, a
            assert abs(g[k, s] - max(best, 0.0)) < 1e-12 and chall[k, s] == arg


def test_active_run_is_consistent():
    b = make("rare-context:S=6,A=16")
    res = active_exploration(b, 300, _oracle(b, 3))
    assert res.queries.tolist() == [300] * 3 and res.counts.sum(1).tolist() == [300] * 3
    assert res.data.n == 300 and np.all(res.data.a0 != res.data.a1)
    r = b.rewards
    worst = (r.max(-1)[None] - r[np.arange(b.S)[None], res.policy]).max(-1)
    assert np.allclose(res.worst_context, worst) and np.all(res.worst_context >= res.suboptimality)
    # the active rule gives the rare context far more than its 1/S share
    assert res.counts[:, -1].min() > 300 / b.S


def test_uniform_rule_draws_from_rho():
    b = make("rare-context:S=6,A=16")
    res = active_exploration(b, 600, _oracle(b, 2), contexts="uniform")
    share = res.counts / 600
    assert np.abs(share - 1 / 6).max() < 0.06


def test_runs_through_tl_run_with_extras():
    res = tl.run(
        "active-contexts", "rare-context:S=4,A=16", dataset_size=[50, 100], seeds=2, seed=1
    )
    assert res.values.shape == (2, 2)
    for key in ("worst_context", "bound", "last_context_share"):
        assert res.extra[key].shape == (2, 2)
    assert np.all(res.extra["worst_context"] >= res.values - 1e-12)


@pytest.mark.parametrize(
    "kw, msg",
    [
        ({"contexts": "random"}, "contexts"),
        ({"delta": 1.5}, "delta"),
        ({"lam": 0.0}, "lam"),
        ({"refit": 1.0}, "refit"),
        ({"C": -1.0}, "C must"),
    ],
)
def test_bad_input_is_one_line(kw, msg):
    b = make("rare-context:S=3,A=8")
    with pytest.raises(MLEError, match=msg):
        active_exploration(b, 10, _oracle(b, 1), **kw)


def test_needs_the_oracle():
    from theorylab.algorithms.registry import get_algorithm

    b = make("rare-context:S=3,A=8")
    with pytest.raises(MLEError, match="oracle"):
        get_algorithm("active-contexts").factory(b, type("D", (), {"n": 5})())


def test_euclidean_width_mutation_starves_the_rare_context():
    """Under the mutation the index ignores the data: the rare (smaller) context is never the
    argmax, so it gets no queries and its greedy action never improves."""
    from theorylab.validations.active_context_mutations import active_contexts_euclidean_width

    b = make("rare-context:S=6,A=16")
    with active_contexts_euclidean_width():
        res = active_exploration(b, 400, _oracle(b, 2))
    assert res.counts[:, -1].max() == 0
    fine = active_exploration(b, 400, _oracle(b, 2))
    assert fine.counts[:, -1].min() > 100
