r"""XPO: online DPO with the exploration bonus of Xie et al. on a finite-response KL bandit.

Seed reference: ``seed-catalogue-001.md#52``. Paper: Xie, Foster, Krishnamurthy, Rosset,
Awadallah, Rakhlin, "Exploratory Preference Optimization: Harnessing Implicit Q*-Approximation for
Sample-Efficient RLHF", ICLR 2025, arXiv:2405.21046. Card: docs/algorithms/xpo-bandit.md.

What was read [V]: the abstract (XPO is "a one-line change to (online) DPO" that "augments the DPO
objective with a novel and principled exploration bonus, empowering the algorithm to explore
outside the support of the initial model", provably sample-efficient "irrespective of whether the
initial model has good coverage") and the loss already in the registry (``xpo`` in
``algorithms/deep/preference_losses.py``: L_DPO + alpha E_{y~pi_samp}[log pi(y)], TRL's XPO
trainer sampling pi_ref). Reconstructed [A] (Algorithm 1 as we read it from that loss): in round t
draw y ~ pi_t and y~ ~ pi_ref, ask the BTL oracle to compare them, and set

    pi_{t+1} = argmin_pi  L_DPO(pi; D_t) + alpha (1/t) sum_{i<=t} log pi(y~_i),

(both terms means over the t comparisons so far, i.e. the paper's sums divided by t) over the
bounded class r = beta log(pi / ref) + const in [-R, R]^A (the paper's bounded policy class [A]).
Minimising log pi(y~) pushes probability off what the reference already plays: optimism. In reward
form (r the implicit reward, m the empirical distribution of the y~_i) the bonus is
-(alpha / beta)(beta log Z(r) - <m, r>) -- VPO's online (sign = +1) value term with pi_cal = m --
so the round's problem is :func:`vpo.regularised_rewards` with ``sign=+1`` (not convex: projected
Newton on the shifted Hessian, warm-started from the last iterate). Deviations: alpha is a
constant of the run (the paper sets it from the horizon; its constants were not read), and the
policy is refitted every ``batch`` comparisons.

Registered ``xpo-bandit`` (kind ``preference-offline``, like ``gshf-iterative``: a budget of
``data.n`` comparisons asked online through the runner's oracle; the data themselves are not
used). alpha = 0 is online DPO (the control of claim ``xpo-explores``).
"""

from __future__ import annotations

import numpy as np
from scipy.special import softmax

from theorylab.algorithms.preference.vpo import (
    RegularisedFit,
    VPOError,
    check_bound,
    check_problem,
    check_weight,
    regularised_rewards,
    wins_matrix,
)
from theorylab.algorithms.registry import register
from theorylab.mdps.preference import PairwiseDataset


def xpo_rewards(bandit, data_b: PairwiseDataset, alpha: float, R: float, r0) -> np.ndarray:
    """One refit on the comparisons of one seed (``data_b`` with a0 = the reference draws y~):
    per context the implicit reward minimising the DPO loss plus the bonus alpha (1/t)
    sum_i log pi(y~_i); ``(S, A)``."""
    S, A, t = bandit.S, bandit.A, data_b.n
    m = np.zeros((S, A))
    np.add.at(m, (data_b.states[0], data_b.a0[0]), 1.0 / t)  # (S, A) reference-draw shares
    out = np.empty((S, A))
    for s in range(S):
        w = wins_matrix(data_b, 0, s, A)
        M = m[s].sum()
        cal = m[s] / M if M > 0 else bandit.ref[s]
        weight = alpha * M / bandit.eta  # alpha <m, log pi> = -(alpha M / beta)(beta lz - <cal, r>)
        out[s] = regularised_rewards(bandit.ref[s], cal, w, bandit.eta, weight, R, +1, r0[s])
    return out


@register(
    "xpo-bandit",
    kind="preference-offline",
    problem="pref-bandit",
    bounds=(),
    feedback=("btl",),
    feedback_note="the rounds ask pairwise (BTL) comparisons of a policy draw and a reference draw",
    papers=("001#52",),
)
def xpo_bandit(
    bandit, data, oracle=None, alpha: float = 0.1, R: float = 5.0, batch: int = 20
) -> RegularisedFit:
    """XPO (Xie et al. 2025) with a budget of ``data.n`` comparisons per seed, refitted every
    ``batch``; alpha = 0 is online DPO."""
    bandit = check_problem(bandit, data, "xpo-bandit")
    alpha = check_weight("xpo-bandit", "alpha", alpha)
    R = check_bound("xpo-bandit", R)
    if isinstance(batch, bool) or not isinstance(batch, int) or batch < 1:
        raise VPOError(f"xpo-bandit: batch must be a positive integer, got {batch!r}")
    if oracle is None:
        raise VPOError("xpo-bandit asks comparisons online: it needs the runner's oracle")
    return online_rounds(
        bandit, data, oracle, batch, lambda d, r0: xpo_rewards(bandit, d, alpha, R, r0)
    )


def online_rounds(bandit, data, oracle, batch: int, refit) -> RegularisedFit:
    """The online loop shared by XPO and online VPO: per seed, ``data.n`` comparisons of a draw y
    of the current Gibbs policy against a reference draw y~ (asked from ``oracle``), the rewards
    refitted every ``batch`` comparisons by ``refit(data_b, r0) -> (S, A)`` on all comparisons so
    far (a0 = y~, a1 = y), warm-started at the last fit ``r0``."""
    S, A, B, n = bandit.S, bandit.A, data.n_seeds, data.n
    oracle.queries[:] = 0
    rngs = oracle.rngs
    rew = np.zeros((B, S, A))
    st, a0, a1, y = (np.empty((B, 0), np.int64) for _ in range(4))
    while st.shape[1] < n:
        k = min(batch, n - st.shape[1])
        pi = softmax(np.log(bandit.ref) + rew / bandit.eta, axis=-1)  # (B, S, A)
        s_new = np.stack([rng.choice(S, size=k, p=bandit.rho) for rng in rngs])  # (B, k)
        ys = np.empty((B, k), np.int64)
        yt = np.empty((B, k), np.int64)
        for b, rng in enumerate(rngs):
            cp, cr = pi[b, s_new[b]].cumsum(-1), bandit.ref[s_new[b]].cumsum(-1)  # (k, A)
            ys[b] = np.minimum((rng.random((k, 1)) > cp).sum(-1), A - 1)
            yt[b] = np.minimum((rng.random((k, 1)) > cr).sum(-1), A - 1)
        lab = oracle.compare(bandit.phi[s_new, ys], bandit.phi[s_new, yt])  # 1: y preferred
        st, a0, a1, y = (
            np.concatenate(p, axis=1) for p in ((st, s_new), (a0, yt), (a1, ys), (y, lab))
        )
        for b in range(B):
            d = PairwiseDataset(st[b][None], a0[b][None], a1[b][None], y[b][None])
            rew[b] = refit(d, rew[b])
    pol = softmax(np.log(bandit.ref) + rew / bandit.eta, axis=-1)
    sub = np.array([bandit.suboptimality(p) for p in pol])
    return RegularisedFit(pol, rew, sub, oracle.queries.copy())
