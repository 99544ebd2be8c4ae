"""Registered preference-based algorithms (kinds ``preference`` and ``preference-offline``).

* ``p2r-ucbvi`` (online, a comparison oracle): :mod:`theorylab.algorithms.preference.p2r`.
* ``dueling-rl`` and ``regime`` (online, duels of two policies, trajectory comparisons):
  :mod:`theorylab.algorithms.preference.dueling`, :mod:`theorylab.algorithms.preference.regime`.
* ``pessimistic-mle`` / ``greedy-mle`` (offline, pairwise comparisons on a ``ComparisonBandit``):
  Zhu-Jordan-Jiao's Algorithm 1 and its greedy contrast,
  :mod:`theorylab.algorithms.preference.pessimistic`. ``greedy-mle`` also takes Plackett-Luce
  rankings (``feedback="plackett-luce"``): greedy on the K-wise MLE or on the pairwise split.
* ``inpo`` / ``hedge-selfplay`` (kind ``preference-game``): the OMD self-play of
  :mod:`theorylab.algorithms.preference.nash` on a preference game, KL-regularised (INPO's
  update, last iterate) and unregularised (Hedge, average iterate), with exact or sampled win
  rates; the exact duality gap at every iteration.

Each registration names the feedback models it takes (``feedback=``, the first is the default;
``theorylab.runners.preference`` checks them) and, where it refuses one, why (``feedback_note``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from theorylab.algorithms.preference import (
    active_contexts,  # noqa: F401  (registers active-contexts)
    dno,  # noqa: F401  (registers dno)
    dueling,  # noqa: F401  (registers dueling-rl)
    gshf,  # noqa: F401  (registers gshf-offline, gshf-iterative)
    hypo,  # noqa: F401  (registers hypo)
    maxmin,  # noqa: F401  (registers maxmin-rlhf)
    nash,
    p2r,  # noqa: F401  (registers p2r-ucbvi)
    pr_lsvi,  # noqa: F401  (registers pr-lsvi)
    regime,  # noqa: F401  (registers regime)
    rlhs,  # noqa: F401  (registers rlhs)
    rpo,  # noqa: F401  (registers rpo-offline)
    vpo,  # noqa: F401  (registers vpo-offline)
    vpo_online,  # noqa: F401  (registers vpo-online; 002-004#E7 online half)
    xpo,  # noqa: F401  (registers xpo-bandit)
)
from theorylab.algorithms.preference.mle import fit_btl, fit_pairwise_split, fit_plackett_luce
from theorylab.algorithms.preference.nash import GameRun
from theorylab.algorithms.preference.pessimistic import fit_pessimistic_mle, greedy_policy
from theorylab.algorithms.registry import register
from theorylab.mdps.preference import PairwiseDataset, RankingDataset

RANKING_ESTIMATORS = ("plackett-luce", "pairwise-split")


@register(
    "pessimistic-mle",
    kind="preference-offline",
    problem="pref-bandit",
    bounds=("zjj-thm3.2",),
    feedback=("btl",),
    feedback_note="its confidence radius is Lemma 3.1's for pairwise data; the K-wise radius "
    "(Zhu-Jordan-Jiao Thm 4.1) carries a K-dependence not recovered here ([M])",
    papers=("000#48",),
)
def pessimistic_mle(
    bandit, data, delta: float = 0.1, lam: float = 1e-3, C: float = 1.0, solver: str = "newton"
):
    """Pessimistic MLE (Zhu-Jordan-Jiao 2023, Alg. 1): max-min over the MLE's confidence set."""
    return fit_pessimistic_mle(bandit, data, delta=delta, lam=lam, C=C, solver=solver)


@register(
    "pessimistic-mle-mdp",
    kind="preference-offline",
    problem="mdp",
    bounds=(),
    feedback=("btl",),
    feedback_note="Section 5 compares pairs of whole trajectories",
    papers=("000#48",),
)
def pessimistic_mle_mdp(
    bandit,
    data,
    delta: float = 0.1,
    lam: float = 1e-3,
    C: float = 1.0,
    B: float | None = None,
    solver: str = "newton",
):
    """Pessimistic MLE over occupancy measures (Zhu-Jordan-Jiao 2023, Section 5): trajectory
    comparisons on a finite-horizon MDP with known transitions (``bandit`` is the MDP)."""
    from theorylab.algorithms.preference.pessimistic_mdp import fit_pessimistic_mle_mdp
    from theorylab.mdps.linear import one_hot_features

    mdp = bandit
    phi = getattr(mdp, "features", None)
    phi = one_hot_features(mdp.S, mdp.A) if phi is None else phi
    return fit_pessimistic_mle_mdp(mdp, data, phi, delta=delta, lam=lam, C=C, B=B, solver=solver)


@dataclass
class GreedyMLEResult:
    """theta_hat ``(B, d)``, policy ``(B, S)``, suboptimality and queries ``(B,)``."""

    theta_hat: np.ndarray
    policy: np.ndarray
    suboptimality: np.ndarray
    queries: np.ndarray


@register(
    "greedy-mle",
    kind="preference-offline",
    problem="pref-bandit",
    bounds=(),
    feedback=("btl", "plackett-luce"),
    papers=("000#48",),  # the paper's greedy MLE, the contrast its pessimism improves on
)
def greedy_mle(bandit, data, solver: str = "newton", ranking_estimator: str = "plackett-luce"):
    """Greedy on the constrained BTL MLE (the contrast that fails on ZJJ Theorem 3.9), or, on
    K-wise rankings, on the Plackett-Luce MLE_K or the pairwise-split MLE_2."""
    if isinstance(data, RankingDataset):
        if ranking_estimator not in RANKING_ESTIMATORS:
            raise ValueError(
                f"greedy-mle: ranking_estimator must be one of {RANKING_ESTIMATORS}, got "
                f"{ranking_estimator!r}"
            )
        fit = fit_plackett_luce if ranking_estimator == "plackett-luce" else fit_pairwise_split
        theta = fit(bandit, data, solver=solver)
    elif isinstance(data, PairwiseDataset):
        theta = fit_btl(bandit, data, solver=solver)
    else:
        raise TypeError(f"greedy-mle fits comparison data, got {type(data).__name__}")
    pol = greedy_policy(bandit, theta)
    sub = np.array([bandit.suboptimality(p) for p in pol])
    q = data.queries if data.queries is not None else np.full(len(pol), data.n)
    return GreedyMLEResult(theta, pol, sub, q)


# ------------------------------------------------------------------ self-play on preference games
def _self_play(
    game, oracle, iterations: int, tau: float, eta: float, m: int, output: str, loss: bool = False
):
    """OMD self-play (``nash.omd_dynamics`` with exact win rates when m = 0, else
    ``nash.sampled_omd`` with m comparisons per response and iteration), batched over seeds;
    ``loss=True``: each step minimises INPO's loss instead (``nash.inpo_dynamics`` /
    ``nash.sampled_inpo``, N m sampled pairs per iteration)."""
    if isinstance(m, bool) or int(m) != m or m < 0:
        raise ValueError(f"m (comparisons per response and iteration) must be >= 0, got {m!r}")
    B, N, T = oracle.n_seeds, game.N, iterations
    if m == 0:  # exact win rates: deterministic, the same on every seed, no queries
        dyn = (nash.inpo_dynamics if loss else nash.omd_dynamics)(game.P, game.pi_ref, tau, eta, T)
        it, last, avg = (
            np.broadcast_to(a, (B, *a.shape)) for a in (dyn.iterates, dyn.gap, dyn.average_gap)
        )
        averages = np.broadcast_to(dyn.average, (B, *dyn.average.shape))
        queries = np.zeros((B, T + 1), np.int64)
    else:
        dyn = (nash.sampled_inpo if loss else nash.sampled_omd)(
            oracle, game.pi_ref, tau, eta, T, int(m)
        )
        it, last, avg, averages = dyn.iterates, dyn.gap, dyn.average_gap, dyn.average
        queries = np.broadcast_to(N * int(m) * np.arange(T + 1), (B, T + 1)).copy()
        if not np.array_equal(queries[:, -1], oracle.queries):
            raise RuntimeError("self-play: the oracle's query count disagrees with N m T")
    if tau > 0:
        target = nash.regularised_equilibrium(game.P, game.pi_ref, tau)
    else:
        target = nash.von_neumann_winner(game.P)[0]
    out = it if output == "last" else averages
    distance = np.abs(out - target).max(axis=-1)
    gap = np.array(last if output == "last" else avg, dtype=float)
    extra = {
        "last_gap": np.array(last, dtype=float),
        "average_gap": np.array(avg, dtype=float),
        "distance": distance,
    }
    config = {"tau": tau, "eta": eta, "m": int(m), "output": output}
    return GameRun(gap, queries, extra, config)


@register(
    "inpo",
    kind="preference-game",
    problem="pref-game",
    bounds=(),
    feedback=("matrix",),
    papers=("002-004#E2",),
)
def inpo(game, oracle, iterations: int, tau: float = 0.2, eta: float = 0.5, m: int = 0):
    """INPO (Zhang et al. 2025): each iterate the exact minimiser of INPO's loss L_t (population
    expectations when m = 0; N m pairs y, y' ~ pi_t, one comparison each, otherwise); last
    iterate -> the regularised Nash equilibrium. Exact OMD (``nash.omd_dynamics``) is the
    reference it is checked against (claim ``nash-dynamics-converge``)."""
    if not tau > 0:
        raise ValueError(f"inpo: tau must be > 0 (tau = 0 is hedge-selfplay), got {tau!r}")
    return _self_play(game, oracle, iterations, float(tau), float(eta), m, "last", loss=True)


@register(
    "hedge-selfplay",
    kind="preference-game",
    problem="pref-game",
    bounds=(),
    feedback=("matrix",),
    papers=("000#24", "001#53", "002-004#E2"),  # Wang-Liu-Jin's von Neumann winner; INPO, tau=0
)
def hedge_selfplay(game, oracle, iterations: int, eta: float = 0.05, m: int = 0):
    """Hedge (unregularised OMD) self-play: its average iterate -> a von Neumann winner (the
    no-regret argument); m comparisons per response and iteration (0: exact win rates)."""
    return _self_play(game, oracle, iterations, 0.0, float(eta), m, "average")


# ----------------------------------------------------------------------------- 000#66 (dich29)
from theorylab.algorithms.preference import (  # noqa: E402
    copg,  # noqa: F401  (registers copg; 000#56)
    cpl,  # noqa: F401  (registers cpl; 002-004#E10)
    dichotomy,  # noqa: F401  (registers rlhf-sparse, dpo-loglinear; 000#66)
    drpo,  # noqa: F401  (registers dr-po; 002-004#E4, issue 29 drpo29)
    ipl,  # noqa: F401  (registers ipl; 000#21)
    oprl,  # noqa: F401  (registers oprl; 001#56)
    parl,  # noqa: F401  (registers parl; 000#70, issue 29 drpo29)
)
