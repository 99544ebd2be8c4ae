"""Offline penalties pinned to the papers' printed formulas, written out here (issue 26).

Each test recomputes an algorithm's pessimistic Q from the dataset's rows with the paper's formula
(equation and paper in the comment next to it; counts, means and the backward recursion are
written here too), and compares with what the registered fit returns: a changed factor, exponent
or log argument of a penalty changes Q. The penalty constants are set small enough that Q is not
clipped at 0 (so the penalty is visible in every entry); the registered defaults are pinned to
the papers' values separately. Both paths are pinned: the Python fit, and the offline runner's
compiled N-sweep (``loop="compiled"``, ``algorithms/offline/sweep_kernel.py``), whose value
estimates must equal the formula's on the same data (the compiled draw equals ``make_dataset``'s).
"""

from __future__ import annotations

import inspect
import math

import numpy as np
import pytest

import theorylab as tl
from theorylab.algorithms.offline.dataset import make_dataset
from theorylab.mdps import make

FINITE = "random:S=4,A=2,H=3,seed=5"
DISCOUNTED = "random:S=4,A=2,gamma=0.6,seed=5"
SEEDS = [0, 1]


def model(problem):
    mdp = make(problem)
    return mdp if problem == FINITE else mdp.with_objective(gamma=mdp.gamma, horizon=None)


def data(problem, n, **kw):
    return make_dataset(model(problem), n, seeds=SEEDS, seed=7, coverage=0.5, **kw)


def stage_stats(ds, h, V_next, rows=None):
    """Counts n (B, S, A), reward sums, sums of V_next(s') and of V_next(s')^2 over the rows of
    stage h (all rows when h is None), counted here row by row."""
    B, S, A = ds.n_seeds, ds.S, ds.A
    n, rs, vs, v2 = (np.zeros((B, S, A)) for _ in range(4))
    for b in range(B):
        idx = np.arange(ds.N) if rows is None else np.arange(*rows)
        if h is not None:
            idx = idx[ds.stages[b, idx] == h]
        s, a = ds.states[b, idx], ds.actions[b, idx]
        v = V_next[b, ds.next_states[b, idx]]
        np.add.at(n[b], (s, a), 1.0)
        np.add.at(rs[b], (s, a), ds.rewards[b, idx])
        np.add.at(vs[b], (s, a), v)
        np.add.at(v2[b], (s, a), v * v)
    return n, rs, vs, v2


def mean(total, n):
    return np.where(n > 0, total / np.maximum(n, 1), 0.0)


# --------------------------------------------------------------------------- pessimistic VI
def li2022_q(ds, penalty, delta, c_h=1.0, c_b=16.0):
    """Li, Shi, Chen, Chi, Wei 2022 ("Settling the sample complexity of model-based offline RL"),
    finite-horizon pessimistic VI, L = log(N H / delta):
    Hoeffding baseline: b_h = min{c_h H sqrt(L / n_h), H};
    Bernstein, Eq. (55): b_h = min{sqrt(c_b L Var_{P_hat_h}(V_{h+1}) / n_h) + c_b H L / n_h, H};
    b_h = H where n_h = 0;  Q_h = max{r_hat + P_hat V_{h+1} - b_h, 0},  V_h = max_a Q_h."""
    B, S, A, H = ds.n_seeds, ds.S, ds.A, ds.horizon
    L = math.log(ds.N * H / delta)
    V = np.zeros((B, H + 1, S))
    Q = np.zeros((B, H, S, A))
    for h in range(H - 1, -1, -1):
        n, rs, vs, v2 = stage_stats(ds, h, V[:, h + 1])
        n1 = np.maximum(n, 1)
        if penalty == "hoeffding":
            b = np.minimum(c_h * H * np.sqrt(L / n1), H)
        else:
            var = np.maximum(mean(v2, n) - mean(vs, n) ** 2, 0.0)
            b = np.minimum(np.sqrt(c_b * L * var / n1) + c_b * H * L / n1, H)
        b = np.where(n > 0, b, H)
        Q[:, h] = np.maximum(mean(rs, n) + mean(vs, n) - b, 0.0)
        V[:, h] = Q[:, h].max(axis=-1)
    return Q, V


def test_pessimistic_vi_registered_defaults_are_the_papers():
    from theorylab.algorithms.offline.pessimistic_vi import pessimistic_vi

    params = inspect.signature(pessimistic_vi).parameters
    assert params["c_b"].default == 16  # Li et al. 2022, Remark 4: c_b >= 16, example value 16
    assert params["c_h"].default == 1  # the Hoeffding baseline's width H sqrt(L / n) [M]


@pytest.mark.parametrize(
    ("penalty", "consts"),
    [("hoeffding", {"c_h": 0.05}), ("bernstein", {"c_b": 0.02}), ("bernstein", {})],
)
def test_pessimistic_vi_penalty_is_li2022(penalty, consts):
    from theorylab.algorithms.offline.registrations import (
        fit_pessimistic_vi_bernstein,
        fit_pessimistic_vi_hoeffding,
    )

    fit = fit_pessimistic_vi_hoeffding if penalty == "hoeffding" else fit_pessimistic_vi_bernstein
    ds = data(FINITE, 600)
    res = fit(ds, delta=0.1, **consts)
    Q, V = li2022_q(ds, penalty, 0.1, **consts)
    if consts:  # the penalty is visible: Q is not clipped at 0 everywhere
        assert np.mean(Q > 0) > 0.5
    np.testing.assert_allclose(res.Q, Q, rtol=1e-10, atol=1e-12)


# --------------------------------------------------------------------------- PEVI
def pevi_q(ds, phi, xi, c_beta, lam=1.0):
    """Jin, Yang, Wang 2021 ("Is pessimism provably efficient for offline RL?"), Algorithm 2:
    Lambda_h = sum phi phi^T + lambda I, w_h = Lambda_h^{-1} sum phi (r + V_{h+1}(s')),
    Gamma_h = beta (phi^T Lambda_h^{-1} phi)^{1/2}, beta = c_beta d H sqrt(zeta),
    zeta = log(2 d H K / xi) (Theorem 4.4),
    Q_h = min{phi^T w_h - Gamma_h, H - h + 1}^+ (1-based)."""
    B, S, A, H = ds.n_seeds, ds.S, ds.A, ds.horizon
    d = phi.shape[-1]
    K = ds.N / H if ds.n_episodes is None else ds.n_episodes
    beta = c_beta * d * H * math.sqrt(math.log(2 * d * H * K / xi))
    V = np.zeros((B, H + 1, S))
    Q = np.zeros((B, H, S, A))
    for h in range(H - 1, -1, -1):
        n, rs, vs, _ = stage_stats(ds, h, V[:, h + 1])
        for b in range(B):
            Lam = lam * np.eye(d) + np.einsum("sa,sai,saj->ij", n[b], phi, phi)
            w = np.linalg.solve(Lam, np.einsum("sai,sa->i", phi, rs[b] + vs[b]))
            width = np.sqrt(np.einsum("sai,ij,saj->sa", phi, np.linalg.inv(Lam), phi))
            Q[b, h] = np.clip(phi @ w - beta * width, 0.0, H - h)  # 0-based: cap H - h
            V[b, h] = Q[b, h].max(axis=-1)
    return Q, V


@pytest.mark.parametrize("features", ["one-hot", "random"])
def test_pevi_penalty_is_jin2021(features):
    from theorylab.algorithms.offline.registrations import fit_pevi, fit_pevi_tabular

    ds = data(FINITE, 600)
    S, A = ds.S, ds.A
    if features == "one-hot":
        phi = np.eye(S * A).reshape(S, A, S * A)
        res = fit_pevi_tabular(ds, xi=0.1, c_beta=0.01)
        res_linear = fit_pevi(ds, xi=0.1, c_beta=0.01)  # phi=None: explicit one-hot features
        Q, _ = pevi_q(ds, phi, 0.1, 0.01)
        np.testing.assert_allclose(res_linear.Q, Q, rtol=1e-9, atol=1e-12)
    else:
        phi = np.random.default_rng(3).uniform(size=(S, A, 3))
        res = fit_pevi(ds, phi=phi, xi=0.1, c_beta=0.01)
        Q, _ = pevi_q(ds, phi, 0.1, 0.01)
    assert np.mean(Q > 0) > 0.5
    np.testing.assert_allclose(res.Q, Q, rtol=1e-9, atol=1e-12)


def test_pevi_registered_defaults():
    from theorylab.algorithms.offline.pevi import pevi, pevi_tabular

    for fn in (pevi, pevi_tabular):
        params = inspect.signature(fn).parameters
        assert params["lam"].default == 1  # Jin et al. 2021, Algorithm 2: lambda = 1
        assert params["c_beta"].default == 1  # the paper's absolute constant c, unspecified [M]


# --------------------------------------------------------------------------- VI-LCB
def vi_lcb_q(ds, delta, c_L):
    """Rashidinejad, Zhu, Ma, Jiao, Russell 2021, Algorithm 3 (VI-LCB, discounted), [V] from the
    authors' code (theory.md 3.2): T = floor(log N / (1 - gamma)) iterations on T + 1 contiguous
    folds; L = c_L log(2 (T + 1) S A / delta); b_t = V_max sqrt(L / max(m_t, 1)),
    V_max = 1 / (1 - gamma); Q_t = r_hat_t - b_t + gamma P_hat_t V_{t-1};
    V_t = max(V_{t-1}, max_a Q_t)."""
    B, S, A, g = ds.n_seeds, ds.S, ds.A, ds.gamma
    T = math.floor(math.log(ds.N) / (1 - g))
    L = c_L * math.log(2 * (T + 1) * S * A / delta)
    vmax = 1 / (1 - g)
    edges = [ds.N * t // (T + 1) for t in range(T + 2)]
    V = np.zeros((B, S))
    Q = np.zeros((B, S, A))
    for t in range(1, T + 1):
        m, rs, vs, _ = stage_stats(ds, None, V, rows=(edges[t], edges[t + 1]))
        Q = mean(rs, m) - vmax * np.sqrt(L / np.maximum(m, 1)) + g * mean(vs, m)
        V = np.maximum(V, Q.max(axis=-1))
    return Q, V, L


def test_vi_lcb_registered_default_is_the_code_constant():
    from theorylab.algorithms.offline.registrations import fit_vi_lcb

    # the authors' code (OfflineVI, theory.md 3.2): Lc = 2000
    assert inspect.signature(fit_vi_lcb).parameters["c_L"].default == 2000


@pytest.mark.parametrize("c_L", [2000.0, 0.002])
def test_vi_lcb_penalty_is_rashidinejad2021(c_L):
    from theorylab.algorithms.offline.registrations import fit_vi_lcb

    ds = data(DISCOUNTED, 800)
    res = fit_vi_lcb(ds, delta=0.1, c_L=c_L)
    Q, V, L = vi_lcb_q(ds, 0.1, c_L)
    assert res.info["L"] == pytest.approx(L, rel=1e-12)
    np.testing.assert_allclose(res.Q, Q, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(res.V, V, rtol=1e-10, atol=1e-12)
    if c_L < 1:
        assert np.any(V > 0)  # something was learned: the penalty is seen on both sides of 0


# --------------------------------------------------------------------------- compiled sweep
@pytest.mark.parametrize(
    ("algorithm", "problem", "consts", "reference"),
    [
        ("pessimistic-vi-hoeffding", FINITE, {"c_h": 0.05}, "li-h"),
        ("pessimistic-vi-bernstein", FINITE, {"c_b": 0.02}, "li-b"),
        ("pevi-tabular", FINITE, {"c_beta": 0.01}, "pevi"),
        ("vi-lcb", DISCOUNTED, {"c_L": 0.002}, "vi-lcb"),
    ],
)
def test_compiled_sweep_penalties_are_the_papers(algorithm, problem, consts, reference):
    n = 800
    mdp = model(problem)
    run = tl.run(
        algorithm, problem, seeds=SEEDS, seed=7, dataset_size=[n], loop="compiled",
        coverage=0.5, **consts,
    )  # fmt: skip
    assert run.config["loop"] == "compiled"
    kind = "trajectories" if mdp.horizon is not None else "samples"
    ds = data(problem, n, kind=kind)
    if reference == "vi-lcb":
        V0 = vi_lcb_q(ds, 0.1, consts["c_L"])[1]
    elif reference == "pevi":
        phi = np.eye(ds.S * ds.A).reshape(ds.S, ds.A, -1)
        V0 = pevi_q(ds, phi, 0.1, consts["c_beta"])[0].max(axis=-1)[:, 0]
    else:
        pen = "hoeffding" if reference == "li-h" else "bernstein"
        V0 = li2022_q(ds, pen, 0.1, **consts)[1][:, 0]
    np.testing.assert_allclose(run.value_estimate[:, 0], V0 @ mdp.mu0, rtol=1e-9, atol=1e-12)
    assert np.all(run.value_estimate[:, 0] > 0)


# --------------------------------------------------------------------------- VW-PEVI
def test_vw_pevi_weights_and_penalty_are_xiong2023():
    """Xiong et al. 2023 (LinPEVI-ADV+), as vw_pevi.py states it: lambda = 1/H^2 [S],
    beta = c_beta sqrt(d zeta), zeta = log(2 d H K / xi) ([S] order, [M] log and c_beta);
    sigma2_h = max{1, [phi^T w2]_[0, (H-h)^2] - ([phi^T w1]_[0, H-h])^2} from ridge regressions
    of y = r + V_ref_(h+1)(s') and y^2 (V_ref: PEVI with lambda = 1); the main step
    Lambda_h = sum phi phi^T / sigma2 + lambda I, w_h = Lambda_h^-1 sum phi (r + V(s')) / sigma2,
    Q_h = min{phi^T w_h - beta ||phi||_(Lambda_h^-1), H - h}^+. Checked with split=False (both
    steps on all the data) so that the rows of each step are the dataset's."""
    from theorylab.algorithms.offline.registrations import fit_vw_pevi

    ds = data(FINITE, 600)
    B, S, A, H = ds.n_seeds, ds.S, ds.A, ds.horizon
    phi = np.eye(S * A).reshape(S, A, S * A)
    d, xi, c = S * A, 0.1, 0.01
    res = fit_vw_pevi(ds, xi=xi, c_beta=c, c_beta_ref=c, split=False)
    lam = 1 / H**2
    _, V_ref = pevi_q(ds, phi, xi, c)  # the pilot values (PEVI, lambda = 1)
    sigma2 = np.zeros((B, H, S, A))
    for h in range(H):
        n, rs, vs, v2 = stage_stats(ds, h, V_ref[:, h + 1])
        # sums of y = r + V and of y^2 = r^2 + 2 r V + V^2 per pair, counted row by row
        r2, rv = np.zeros((B, S, A)), np.zeros((B, S, A))
        for b in range(B):
            idx = np.flatnonzero(ds.stages[b] == h)
            s, a, r = ds.states[b, idx], ds.actions[b, idx], ds.rewards[b, idx]
            np.add.at(r2[b], (s, a), r * r)
            np.add.at(rv[b], (s, a), r * V_ref[b, h + 1, ds.next_states[b, idx]])
        for b in range(B):
            Lam = lam * np.eye(d) + np.einsum("sa,sai,saj->ij", n[b], phi, phi)
            m1 = phi @ np.linalg.solve(Lam, np.einsum("sai,sa->i", phi, rs[b] + vs[b]))
            m2 = phi @ np.linalg.solve(Lam, np.einsum("sai,sa->i", phi, r2[b] + 2 * rv[b] + v2[b]))
            top = H - h
            sigma2[b, h] = np.maximum(np.clip(m2, 0, top**2) - np.clip(m1, 0, top) ** 2, 1.0)
    np.testing.assert_allclose(res.info["sigma2"], sigma2, rtol=1e-8, atol=1e-10)
    K = ds.N / H if ds.n_episodes is None else ds.n_episodes
    beta = c * math.sqrt(d * math.log(2 * d * H * K / xi))
    V = np.zeros((B, H + 1, S))
    Q = np.zeros((B, H, S, A))
    for h in range(H - 1, -1, -1):
        n, rs, vs, _ = stage_stats(ds, h, V[:, h + 1])
        for b in range(B):
            w8 = 1 / sigma2[b, h]
            Lam = lam * np.eye(d) + np.einsum("sa,sai,saj->ij", n[b] * w8, phi, phi)
            w = np.linalg.solve(Lam, np.einsum("sai,sa->i", phi, (rs[b] + vs[b]) * w8))
            width = np.sqrt(np.einsum("sai,ij,saj->sa", phi, np.linalg.inv(Lam), phi))
            Q[b, h] = np.clip(phi @ w - beta * width, 0.0, H - h)
            V[b, h] = Q[b, h].max(axis=-1)
    assert np.mean(Q > 0) > 0.5
    np.testing.assert_allclose(res.Q, Q, rtol=1e-8, atol=1e-10)
