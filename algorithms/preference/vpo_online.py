r"""VPO online: the optimistic (sign = +1) value-regularised reward MLE with online comparisons,
each round's non-convex objective minimised globally.

Seed reference: ``seed-catalogue-002-004.md#E7`` (the online half; the offline half is
:mod:`theorylab.algorithms.preference.vpo`). Paper: Cen, Mei, Goshvadi, Dai, Yang, Yang,
Schuurmans, Chi, Dai, "Value-Incentivized Preference Optimization: A Unified Approach to Online and
Offline RLHF", ICLR 2025, arXiv:2405.19320. Card: docs/algorithms/vpo.md.

What was read [V]: the abstract and introduction (the value regulariser's sign "indicate[s] whether
the optimism or pessimism is chosen"; online VPO collects comparisons of the current policy with a
calibration policy). Reconstructed [A] (the paper's Algorithm 1 as we read it from the abstract
and the catalogue row; its schedule for alpha was not read): round t fits, per context s, over
the reward box [-R, R]^A,

    r_t = argmin_r  sum_{i,j} wins_t[i, j] (-log sigma(r_i - r_j))
                    - alpha rho(s) ( beta log sum_a ref(a|s) e^{r_a / beta} - <ref(.|s), r> ),

i.e. the negative log-likelihood minus alpha times max_pi J(r, pi), J(r, pi) = E_pi r - E_ref r -
beta KL(pi || ref) (pi_cal = ref), and plays the Gibbs policy ref e^{r_t / beta} / Z. The
comparisons are XPO's loop (:func:`xpo.online_rounds`: y ~ pi_t against y~ ~ pi_ref). In policy
form the value term is alpha beta E_ref[log pi / ref]: XPO's bonus with the exact reference
expectation in place of its sample mean.

Why the global minimiser (measured): along a response the data never compared the objective is
concave (-alpha beta log Z is concave in r), with its stationary point at r_a = beta log Z, the
reward at which the Gibbs policy gives a the reference's mass. A local solver warm-started at
r_a ~ 0 < beta log Z slides to r_a = -R: on ``gshf-coverage:S=1,eps=0.00001,gap=4,eta=0.25``
(claim ``vpo-online-explores``) that stalls at sub-optimality 1.08 like online DPO (a previous
reconstruction, which read this as the optimistic term vanishing). The minimiser over the box
lifts such a response to r_a = +R when beta log Z(r_a = R) - ref(a) R beats the alternative:
optimism in the face of uncertainty. :func:`vpo_online_rewards` therefore runs the projected
Newton solver of :func:`vpo.regularised_rewards` from the warm start and from the warm start with
each response set to +R, and keeps the smallest objective (A + 1 starts; the claim checks the
result against 200 random starts). XPO's sample-mean calibration m(a) = 0 on an undrawn response
makes its objective decrease monotonically in r_a there, so a local solver suffices for XPO.

Registered ``vpo-online`` (kind ``preference-offline``, like ``xpo-bandit``: a budget of
``data.n`` comparisons asked online through the runner's oracle). alpha = 0 is online DPO (the
control of claim ``vpo-online-explores``).
"""

from __future__ import annotations

import numpy as np

from theorylab.algorithms.preference.vpo import (
    RegularisedFit,
    VPOError,
    check_bound,
    check_problem,
    check_weight,
    regularised_objective,
    regularised_rewards,
    wins_matrix,
)
from theorylab.algorithms.preference.xpo import online_rounds
from theorylab.algorithms.registry import register
from theorylab.mdps.preference import PairwiseDataset

#: the value term's sign: +1 optimism (online)
SIGN = 1


def round_starts(r0: np.ndarray, R: float) -> list[np.ndarray]:
    """The starts of one round's solve: the warm start and, per response, the warm start with
    that response's reward at +R (``(A,)`` each)."""
    starts = [np.clip(np.asarray(r0, dtype=np.float64), -R, R)]
    for a in range(starts[0].size):
        x = starts[0].copy()
        x[a] = R
        starts.append(x)
    return starts


def round_solution(ref, wins, beta: float, alpha: float, R: float, r0) -> np.ndarray:
    """One context's round: the smallest objective over :func:`round_starts`' local solutions
    (one start where alpha = 0: the objective is then convex); ``(A,)``."""
    args = (ref, ref, wins, beta, alpha)
    starts = round_starts(r0, R) if alpha > 0 else round_starts(r0, R)[:1]
    best, f_best = starts[0], np.inf
    for x0 in starts:
        x = regularised_rewards(*args, R, SIGN, x0)
        f = regularised_objective(x, *args, SIGN)[0]
        if f < f_best - 1e-12:
            best, f_best = x, f
    return best


def vpo_online_rewards(bandit, data_b: PairwiseDataset, alpha: float, R: float, r0) -> np.ndarray:
    """One refit on the comparisons so far of one seed (module docstring); ``(S, A)``."""
    out = np.empty((bandit.S, bandit.A))
    for s in range(bandit.S):
        w = wins_matrix(data_b, 0, s, bandit.A)
        out[s] = round_solution(bandit.ref[s], w, bandit.eta, alpha * bandit.rho[s], R, r0[s])
    return out


@register(
    "vpo-online",
    kind="preference-offline",
    problem="pref-bandit",
    bounds=(),
    feedback=("btl",),
    feedback_note="the rounds ask pairwise (BTL) comparisons of a policy draw and a reference draw",
    papers=("002-004#E7",),
)
def vpo_online(
    bandit, data, oracle=None, alpha: float = 0.01, R: float = 5.0, batch: int = 40
) -> RegularisedFit:
    """Online VPO (Cen et al. 2025) with a budget of ``data.n`` comparisons per seed, refitted
    every ``batch``; alpha = 0 is online DPO."""
    bandit = check_problem(bandit, data, "vpo-online")
    alpha = check_weight("vpo-online", "alpha", alpha)
    R = check_bound("vpo-online", R)
    if isinstance(batch, bool) or not isinstance(batch, int) or batch < 1:
        raise VPOError(f"vpo-online: batch must be a positive integer, got {batch!r}")
    if oracle is None:
        raise VPOError("vpo-online asks comparisons online: it needs the runner's oracle")
    return online_rounds(
        bandit, data, oracle, batch, lambda d, r0: vpo_online_rewards(bandit, d, alpha, R, r0)
    )
