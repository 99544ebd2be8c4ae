r"""H2O: dynamics-aware hybrid offline-and-simulator RL, as an exact tabular fixed point.

Seed: ``seed-catalogue-002-004.md#C5`` (tier B). Paper: Niu, Sharma, Qiu, Li, Zhou, Hu, Zhan,
"When to Trust Your Simulator: Dynamics-Aware Hybrid Offline-and-Online Reinforcement
Learning", NeurIPS 2022 (arXiv:2206.13464). Read: the abstract [V for "a dynamics-aware policy
evaluation scheme, which adaptively penalizes the Q function learning on simulated state-action
pairs with large dynamics gaps, while also simultaneously allowing learning from a fixed
real-world dataset"]; the loss below is recalled [M]: a CQL-style term that pushes Q down on
simulated pairs in proportion to their dynamics gap and up on the real data, plus a Bellman
error on simulated transitions importance-weighted by the dynamics ratio P_real / P_sim (the
paper estimates both with discriminators; here they are exact or empirical).

Setting (discounted, tabular). A real MDP seen only through an offline dataset
``D_real`` (empirical ``d_r(s, a) = n(s, a) / N``, ``r_hat``, ``P_hat``), and a simulator whose
model ``P_sim`` (and rewards) is known but wrong on some pairs. Simulated pairs are drawn from
``d_s`` (here uniform over (s, a), total mass ``sim_weight`` relative to the real data's 1).

Dynamics gap (the catalogue's assumption, with TV in place of KL so it stays finite on an
empirical P_hat with zeros): ``u(s, a) = TV(P_sim(s, a), P_hat(s, a))`` where n(s, a) > 0, and
``u = 1`` (the largest gap: nothing says the simulator is right) where the real data has no
sample. Normalised over the simulated distribution: ``omega(s, a) = u(s, a) / E_{d_s}[u]``.

Per pair the H2O loss in Q(s, a) is

    beta [d_s(s, a) omega(s, a) - d_r(s, a)] Q
      + 1/2 d_r(s, a) (Q - y_r)^2 + 1/2 d_s(s, a) (Q - y_s)^2,
    y_r = r_hat + gamma P_hat V,      y_s = r + gamma sum_s' P_sim(s') w(s'|s, a) V(s'),

with the ratio ``w = min(P_hat / P_sim, w_max)`` where real data exists and w = 1 where not. Its
minimiser, for fixed targets, is the per-pair weighted mean minus the penalty:

    Q(s, a) = [d_r y_r + d_s y_s - beta (d_s omega - d_r)] / (d_r + d_s),

and iterating with ``V = max_a Q`` is a gamma-contraction (the weights of the targets sum to 1),
solved to ``tol`` by :func:`h2o`. ``dynamics_aware=False`` (u = 0, w = 1) with beta = 0 is plain
mixing of real and simulated data, the baseline H2O improves on; d_r = 0 is planning in the
simulator.

Consequences the claim checks: where the simulator agrees with the real dynamics (and the data
is population-sized), u = 0 and w = 1 exactly, so the simulated pairs there carry no penalty;
where the simulator is wrong the reweighted backup recovers P_hat and the penalty pushes Q down,
so the policy does not exploit the simulator's error; with growing real data the result
approaches the offline-only (certainty-equivalent) policy.

Penalty scale: ``beta`` defaults to ``1 / (1 - gamma)``, the range of the values [M] (the
paper's constant was not read), so a gap of 1 can outweigh any difference of values.

Gap model (``gap_model=``). ``"pair"`` is the estimate above, per (s, a): it does not
generalise -- a pair without real data gets u = 1 whatever its action, so on an instance where
the simulator is right about one action everywhere and wrong about another everywhere, the
unvisited pairs of both are penalised alike and the simulator's wrong action still wins there
(measured on the bridge instance of ``validations/claims/offline_h2o.py``: H2O's real value 0,
no better than offline-only, at every partial coverage tried). The paper's discriminators are
functions of (s, a, s') features and do generalise; ``"action"`` [M] is the simplest gap model
that does, a per-action pool of the observed gaps, ``u(s, a) = sum_s' n(s', a) TV(s', a) /
sum_s' n(s', a)`` for every s (1 for an action never seen in the real data). The ratio weights
stay per pair (1 where there is no real data).

Measured (claim ``h2o-dynamics-gap-bridge``): with the per-action gap H2O's real value beats
planning in the simulator and naive real+sim mixing on the bridge, the per-pair gap does not.

Lineage: the lead's draft of this module (per-pair gap, the fixed point, the bridge finding);
the per-action gap model, the claim and the tests are offline31b's.

Deviations: exact tabular expectations in place of sampled minibatches and discriminators; TV
in place of the paper's gap estimate; uniform d_s in place of on-policy simulator roll-outs.
"""

from __future__ import annotations

import time

import numpy as np

from theorylab.algorithms.offline.dataset import InvalidDatasetError, OfflineDataset
from theorylab.algorithms.offline.empirical import all_samples, require_data
from theorylab.algorithms.offline.result import OfflineResult, greedy, value_at_start

GAP_MODELS = ("action", "pair")


def empirical_model(dataset: OfflineDataset) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(n (B, S, A), r_hat (B, S, A), P_hat (B, S, A, S))`` from a discounted dataset (P_hat
    rows are 0 where n = 0)."""
    blk = all_samples(dataset)
    B, S, A = dataset.n_seeds, dataset.S, dataset.A
    n = blk.counts()
    r_hat = blk.means(blk.reward, n)
    w = np.ones(blk.size) if blk.weight is None else blk.weight
    P = np.zeros(B * S * A * S)
    np.add.at(P, blk.sa * S + blk.nxt % S, w)
    P = P.reshape(B, S, A, S) / np.maximum(n, 1e-300)[..., None]
    return n, r_hat, P


def dynamics_gap(n: np.ndarray, P_hat: np.ndarray, P_sim: np.ndarray) -> np.ndarray:
    """``u (B, S, A)``: TV(P_sim, P_hat) where there is real data, 1 where there is none."""
    tv = 0.5 * np.abs(P_sim[None] - P_hat).sum(axis=-1)
    return np.where(n > 0, tv, 1.0)


def action_gap(n: np.ndarray, P_hat: np.ndarray, P_sim: np.ndarray) -> np.ndarray:
    """``u (B, S, A)``: per action, the count-weighted mean of TV(P_sim, P_hat) over the states
    with real data, the same for every s (1 for an action without real data)."""
    B, S, A = n.shape
    tv = 0.5 * np.abs(P_sim[None] - P_hat).sum(axis=-1)  # (B, S, A), 0-rows where n = 0 ignored
    na = n.sum(axis=1)  # (B, A)
    ua = np.where(na > 0, (n * tv).sum(axis=1) / np.maximum(na, 1e-300), 1.0)  # (B, A)
    return np.broadcast_to(ua[:, None, :], (B, S, A)).copy()


def ratio_weights(n: np.ndarray, P_hat: np.ndarray, P_sim: np.ndarray, w_max: float):
    """``w (B, S, A, S)``: min(P_hat / P_sim, w_max) where there is real data, else 1."""
    safe = np.where(P_sim > 0, P_sim, 1.0)[None]
    ratio = np.where(P_sim[None] > 0, P_hat / safe, 0.0)
    return np.where(n[..., None] > 0, np.minimum(ratio, w_max), 1.0)


def h2o(
    dataset: OfflineDataset,
    *,
    simulator,
    beta: float | None = None,
    sim_weight: float = 1.0,
    w_max: float = 10.0,
    dynamics_aware: bool = True,
    gap_model: str = "action",
    tol: float = 1e-10,
    max_iter: int = 100_000,
) -> OfflineResult:
    """H2O's tabular fixed point (module docstring). ``simulator``: a TabularMDP with the real
    MDP's S, A and gamma (or a spec string for ``theorylab.mdps.make``)."""
    from theorylab.mdps import make

    sim = make(simulator) if isinstance(simulator, str) else simulator
    if dataset.gamma is None or dataset.horizon is not None:
        raise InvalidDatasetError("h2o is a discounted algorithm; this dataset is episodic")
    require_data(dataset, "h2o")
    if getattr(sim, "S", None) != dataset.S or getattr(sim, "A", None) != dataset.A:
        raise ValueError(
            f"h2o: simulator must have the data's S = {dataset.S}, A = {dataset.A}, got "
            f"S = {getattr(sim, 'S', None)}, A = {getattr(sim, 'A', None)}"
        )
    if beta is None:
        beta = 1.0 / (1.0 - float(dataset.gamma))  # [M] the value scale 1 / (1 - gamma)
    for name, v, lo in (
        ("beta", beta, 0.0),
        ("sim_weight", sim_weight, 0.0),
        ("w_max", w_max, 1.0),
    ):
        if not (np.isfinite(v) and v >= lo):
            raise ValueError(f"h2o: {name} must be finite and >= {lo}, got {v!r}")
    if gap_model not in GAP_MODELS:
        raise ValueError(f"h2o: gap_model must be one of {GAP_MODELS}, got {gap_model!r}")
    t0 = time.perf_counter()
    B, S, A, g = dataset.n_seeds, dataset.S, dataset.A, float(dataset.gamma)
    P_sim = np.asarray(sim.dense_P(), dtype=float).reshape(S, A, S)  # (S, A, S)
    r_sim = np.asarray(sim.reward(0), dtype=float)  # (S, A)
    n, r_hat, P_hat = empirical_model(dataset)
    d_r = n / n.sum(axis=(1, 2), keepdims=True)  # (B, S, A)
    d_s = np.full((B, S, A), sim_weight / (S * A))
    if not dynamics_aware:
        u = np.zeros((B, S, A))
    elif gap_model == "pair":
        u = dynamics_gap(n, P_hat, P_sim)  # (B, S, A)
    else:
        u = action_gap(n, P_hat, P_sim)  # (B, S, A)
    mean_u = (d_s * u).sum(axis=(1, 2), keepdims=True) / sim_weight if sim_weight > 0 else 1.0
    omega = np.where(mean_u > 0, u / np.where(mean_u > 0, mean_u, 1.0), 0.0)  # (B, S, A)
    w = ratio_weights(n, P_hat, P_sim, w_max) if dynamics_aware else 1.0
    P_w = P_sim[None] * w  # (B, S, A, S): the simulator's transitions, reweighted
    r_real = np.where(n > 0, r_hat, r_sim[None])
    total = d_r + d_s  # 0 only for a pair with neither real nor simulated mass: Q = 0 there
    safe = np.where(total > 0, total, 1.0)
    penalty = beta * (d_s * omega - d_r) / safe  # (B, S, A)
    a_r, a_s = d_r / safe, d_s / safe
    V = np.zeros((B, S))
    for it in range(max_iter):
        y_r = r_real + g * np.einsum("bsat,bt->bsa", P_hat, V)
        y_s = r_sim[None] + g * np.einsum("bsat,bt->bsa", P_w, V)
        Q = a_r * y_r + a_s * y_s - penalty
        V_new = Q.max(axis=-1)
        done = np.abs(V_new - V).max() <= tol
        V = V_new
        if done:
            break
    return OfflineResult(
        algorithm="h2o",
        policy=greedy(Q),
        value_estimate=value_at_start(V, dataset.mu0),
        V=V,
        Q=Q,
        pessimistic=False,
        params={
            "beta": beta,
            "sim_weight": sim_weight,
            "w_max": w_max,
            "dynamics_aware": dynamics_aware,
            "gap_model": gap_model,
            "tol": tol,
        },  # fmt: skip
        info={
            "seconds": time.perf_counter() - t0,
            "iterations": it + 1,
            "sim_penalty": beta * d_s * omega / safe,  # (B, S, A) the simulator term
            "gap": u,
        },  # fmt: skip
    )


__all__ = ["action_gap", "dynamics_gap", "empirical_model", "h2o", "ratio_weights"]
