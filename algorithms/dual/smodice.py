r"""SMODICE-style imitation, tabular and exact: the coverage-restricted method ReCOIL removes.

Reference: Ma, Shen, Jayaraman, Bastani, "Versatile Offline Imitation from Observations and
Examples via Regularized State-Occupancy Matching" (SMODICE), ICML 2022 (arXiv 2202.02433),
section 4 [M for the equation numbers: the text was not readable here]; its dual-RL reading is
Sikchi et al., ICLR 2024, section 4.1 (per a review [S]) and theory-preference-dual-llm.md 6.4
("the coverage assumption d^E << d^S of SMODICE-style methods"). The method:

1. a discriminator separates expert from supplementary pairs; its optimum is
   ``c*(s, a) = d^E / (d^E + d^S)`` and the reward is ``r = log(c / (1 - c)) = log(d^E / d^S)``;
2. the KL-regularised occupancy problem with that reward and reference d^S is solved in its
   dual-V form (:mod:`~theorylab.algorithms.dual.dual_v`, alpha = 1):

       max_{d << d^S}  E_d[log(d^E / d^S)] - KL(d || d^S)  =  -KL(d || d^E),

   so SMODICE minimises KL(d || d^E) over the occupancies that d^S can reweight. Where d^S covers
   d^E (``d^E << d^S``) and d^E is an occupancy, the optimum is d^E; where it does not, no
   reweighting of d^S can put mass on the expert's uncovered pairs: the policy
   ``pi = d* / sum_a d*`` only plays actions the supplementary data plays, and its
   sub-optimality is at least that of the best policy restricted to those actions (tested, and
   the claim ``recoil-relaxed-coverage`` measures it).

Deviations, stated: the discriminator is the exact optimum on the empirical distributions, with
its output clipped to ``[disc_clip, 1 - disc_clip]`` (a sigmoid network never outputs 0 or 1, and
``c = 0`` at every pair the expert never plays would make the reward -inf); ``disc_clip = 0``
gives the exact coverage-restricted problem, which raises UncoveredFlowError when no occupancy
lives on ``supp(d^E) & supp(d^S)``. SMODICE's headline method matches *state* occupancies (it
imitates from observations: ``c(s) = d^E(s) / (d^E(s) + d^S(s))``); ``match="state"`` gives it,
``match="state-action"`` (default) the pair discriminator, whose objective is exactly
``-KL(d || d^E)`` above (the state version adds ``-E_d KL(pi || pi^S)``: it is regularised towards
the supplementary policy and does not recover the expert exactly even under coverage). The model
is the empirical model of the supplementary data alone (SMODICE's value objective is an
expectation under d^S; the expert data only trains the discriminator).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from theorylab.algorithms.dual.dual_v import nonneg_conjugate
from theorylab.algorithms.dual.empirical_model import empirical_models
from theorylab.algorithms.dual.f_divergences import KL
from theorylab.algorithms.dual.inputs import (
    DualInputError,
    UncoveredFlowError,
    check_distribution,
    check_flow_support,
)
from theorylab.algorithms.dual.recoil import (
    check_same_source,
    occupancy_policy,
    pair_distributions,
)
from theorylab.algorithms.dual.smooth_dual_solver import minimize_smooth_dual
from theorylab.algorithms.offline.dataset import OfflineDataset
from theorylab.algorithms.offline.result import OfflineResult
from theorylab.algorithms.planning.lp import (
    OccupancyPolicy,
    _discount,
    _weights,
    discounted_lp_matrix,
    flow_residual,
)

MATCHES = ("state-action", "state")
DISC_CLIP = 1e-6


@dataclass
class SMODICESolution(OccupancyPolicy):
    """SMODICE's exact solution: occupancy ``(S, A)`` (zero off the support of d^S), V ``(S,)``
    the dual-V minimiser, ``reward (S, A)`` the discriminator's reward (NaN off d^S);
    ``primal_value = E_d[r] - KL(d || d^S)``, ``dual_value`` the dual-V objective at V,
    ``gap = dual_value - primal_value``, ``flow_residual`` at occupancy, ``kl_to_expert =
    KL(d || d^E)`` (inf when d has mass the expert never has)."""

    occupancy: np.ndarray
    V: np.ndarray
    reward: np.ndarray
    primal_value: float
    dual_value: float
    gap: float
    flow_residual: float
    kl_to_expert: float
    seconds: float
    info: dict = field(default_factory=dict)


def discriminator_reward(
    d_expert: np.ndarray, d_supp: np.ndarray, match: str = "state-action", disc_clip=DISC_CLIP
) -> np.ndarray:
    """``log(c / (1 - c))`` with the optimal discriminator ``c = d^E / (d^E + d^S)`` clipped to
    ``[disc_clip, 1 - disc_clip]``; d_expert, d_supp ``(S, A)`` -> ``(S, A)`` (-inf where
    ``c = 0`` and disc_clip = 0; NaN where neither dataset has mass: never used)."""
    if match not in MATCHES:
        raise DualInputError(f"match must be one of {MATCHES}, got {match!r}")
    if not 0.0 <= float(disc_clip) < 0.5:
        raise DualInputError(f"disc_clip must lie in [0, 1/2), got {disc_clip!r}")
    e, s = np.asarray(d_expert, float), np.asarray(d_supp, float)
    if match == "state":
        A = e.shape[1]
        e, s = np.repeat(e.sum(1, keepdims=True), A, 1), np.repeat(s.sum(1, keepdims=True), A, 1)
    with np.errstate(invalid="ignore", divide="ignore"):
        c = np.clip(e / (e + s), disc_clip, 1.0 - disc_clip)
        return np.log(c) - np.log1p(-c)


def solve_smodice(
    mdp,
    d_expert: np.ndarray,
    d_supp: np.ndarray,
    *,
    match: str = "state-action",
    disc_clip: float = DISC_CLIP,
    gamma: float | None = None,
    mu: np.ndarray | None = None,
    tol: float = 1e-12,
) -> SMODICESolution:
    """SMODICE's exact tabular solution (module docstring): dual-V with KL, alpha = 1, reference
    d^S and the discriminator's reward, by Newton. mdp: a stationary TabularMDP (its rewards are
    ignored); d_expert, d_supp ``(S, A)``. Returns a :class:`SMODICESolution`."""
    t_start = time.perf_counter()
    g, mu = _discount(mdp, gamma), _weights(mdp, mu)
    dE = check_distribution(d_expert, (mdp.S, mdp.A), "d^E")
    dS = check_distribution(d_supp, (mdp.S, mdp.A), "d^S")
    r = discriminator_reward(dE, dS, match, disc_clip)
    support = (dS > 0) & np.isfinite(r)
    ref = np.where(support, dS, 0.0)
    try:
        check_flow_support(mdp, ref / ref.sum() if ref.sum() > 0 else dS, g, mu)
        if not support.any():
            raise UncoveredFlowError("d^S has no mass where the reward is finite")
    except UncoveredFlowError as err:
        raise UncoveredFlowError(
            "SMODICE's d << d^S cannot carry a flow"
            + (" on the pairs the expert also plays (disc_clip = 0)" if disc_clip == 0 else "")
            + f": {err}"
        ) from None
    on = np.flatnonzero(support.ravel())
    M = discounted_lp_matrix(mdp, g)[on].tocsr()
    r_on, w = r.ravel()[on], dS.ravel()[on]
    res = minimize_smooth_dual(
        M,
        (1.0 - g) * mu,
        r_on,
        w,
        1.0,
        nonneg_conjugate(KL),
        np.full(mdp.S, float(r_on.max()) / (1.0 - g)),
        tol=tol,
        continuation=False,
    )
    V = res.x
    d = np.zeros(mdp.S * mdp.A)
    d[on] = w * KL.ratio(r_on - M @ V)
    d = d.reshape(mdp.S, mdp.A)
    r_d = np.where(support, r, 0.0)
    primal = float(np.sum(d * r_d) - KL.divergence(d, dS))
    delta = r_on - M @ V  # r + gamma P V - V on the support
    dual = float((1.0 - g) * mu @ V + np.sum(w * KL.conjugate_nonneg(delta)))
    return SMODICESolution(
        occupancy=d,
        V=V,
        reward=np.where(support, r, np.nan),
        primal_value=primal,
        dual_value=dual,
        gap=dual - primal,
        flow_residual=float(np.max(np.abs(flow_residual(mdp, d, gamma=g, mu=mu)))),
        kl_to_expert=KL.divergence(d, dE),
        seconds=time.perf_counter() - t_start,
        info={"iterations": res.iterations, "match": match, "disc_clip": disc_clip},
    )


def smodice(
    expert: OfflineDataset,
    dataset: OfflineDataset,
    *,
    match: str = "state-action",
    disc_clip: float = DISC_CLIP,
) -> OfflineResult:
    """Tabular SMODICE from expert data plus supplementary data (module docstring); one exact
    solve per seed on the supplementary data's empirical model. Returns an OfflineResult with
    ``policy (B, S, A)`` and ``value_estimate`` NaN."""
    t0 = time.perf_counter()
    check_same_source(expert, dataset, "smodice")
    models = empirical_models(dataset, "smodice")
    dE, dS = pair_distributions(expert), pair_distributions(dataset)
    B, S, A = dataset.n_seeds, dataset.S, dataset.A
    policy, V, kls = np.empty((B, S, A)), np.empty((B, S)), []
    for b, (mdp, d_hat) in enumerate(models):
        sol = solve_smodice(mdp, dE[b], dS[b], match=match, disc_clip=disc_clip)
        policy[b] = occupancy_policy(sol.occupancy, d_hat)
        V[b] = sol.V
        kls.append(sol.kl_to_expert)
    return OfflineResult(
        algorithm="smodice",
        policy=policy,
        value_estimate=np.full(B, np.nan),
        V=V,
        Q=None,
        pessimistic=False,
        params={"match": match, "disc_clip": disc_clip},
        info={"seconds": time.perf_counter() - t0, "kl_to_expert": np.array(kls)},
    )
