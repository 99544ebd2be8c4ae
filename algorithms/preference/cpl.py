r"""Contrastive Preference Learning (CPL), exactly on a tabular discounted MDP: a policy fitted to
segment preferences by a contrastive (logistic) loss on its own log-probabilities, with no reward
model and no Bellman backup.

Seed reference: ``seed-catalogue-002-004.md#E10``. Paper: Hejna, Rafailov, Sikchi, Finn, Niekum,
Knox, Sadigh, "Contrastive Preference Learning: Learning from Human Feedback without RL", ICLR 2024,
arXiv:2310.13639. Card: docs/algorithms/cpl.md.

What was read [V]: the catalogue row and the abstract -- preferences "follow the regret under the
user's optimal policy"; "using the principle of maximum entropy, we derive Contrastive Preference
Learning (CPL), an algorithm for learning optimal policies from preferences without learning
reward functions"; CPL "is fully off-policy, uses only a simple contrastive objective, and can be
applied to arbitrary MDPs". The formulas below are the standard maximum-entropy identities the
catalogue names [std], written out here [A]; the paper's bias regulariser and its conservative
variant are not reproduced.

Setting: discounted MDP (P, gamma), temperature alpha, the uniform reference. The soft optimum
pi* = softmax(Q*/alpha) of :func:`soft_value_iteration` has the optimal advantage

    A*(s, a) = Q*(s, a) - V*(s) = alpha log pi*(a|s) + alpha log A        (V* = alpha log mean exp)

The user prefers segment sigma over sigma' with probability s(sum_sigma A* - sum_sigma' A*) (the
regret model). Segments of one length L are enumerated with :func:`~.ipl.segments` (uniform starts,
the uniform behaviour policy: off-policy data), so the constant alpha L log A cancels. CPL
minimises the population contrastive loss

    L(pi) = sum_{sigma, sigma'} w w' [ -p* log s(alpha sum_sigma log pi - alpha sum_sigma' log pi) ]

over softmax policies (logits theta (S, A); L-BFGS with the exact gradient). Its minimum, the
preferences' entropy, is attained where alpha log pi = A* + c on the segments' support, i.e. at
pi = pi* (the normalisation fixes c): consistency, with no reward and no RL step. With
``preferences="reward"`` (the user compares summed rewards instead: the model mismatch the
catalogue names as the control) no policy matches them (alpha log pi = r + c across states would
need every state's log-partition equal), and the minimiser is a biased policy, not pi*.

Registered algorithm ``cpl`` (kind ``policy-optimization``, a discounted tabular problem): the
L-BFGS iterates, each scored by the runner's exact metrics against pi*_alpha (``target_gap`` =
KL(pi_k || pi*_alpha)).
"""

from __future__ import annotations

import numpy as np
from scipy.optimize import minimize
from scipy.special import log_softmax, softmax

from theorylab.algorithms.planning.soft_value_iteration import soft_value_iteration
from theorylab.algorithms.policy_optimization.path import soft_scored_path
from theorylab.algorithms.preference.ipl import preference_loss, segments
from theorylab.algorithms.registry import register
from theorylab.errors import TheorylabError

PREFERENCES = ("regret", "reward")


class CPLError(TheorylabError, ValueError):
    """Bad input to CPL: the problem, the temperature, the segment length, the preference model."""


def segment_scores(mdp, alpha: float, preferences: str) -> np.ndarray:
    """(S, A) the per-step score whose segment sums drive the user's preferences: the optimal
    advantage A* = alpha log pi* (regret model; the constant alpha log A dropped) or the reward."""
    if preferences == "reward":
        return np.asarray(mdp.reward(0), dtype=np.float64)
    return alpha * np.log(soft_value_iteration(mdp, alpha).policy)


def _check(mdp, alpha, L, preferences) -> None:
    if getattr(mdp, "gamma", None) is None or not 0 <= mdp.gamma < 1:
        raise CPLError(f"cpl needs a discounted MDP (gamma in [0, 1)), got {mdp!r}")
    if not (isinstance(alpha, (int, float)) and not isinstance(alpha, bool) and alpha > 0):
        raise CPLError(f"cpl: alpha (the temperature) must be > 0, got {alpha!r}")
    if isinstance(L, bool) or int(L) != L or not 1 <= L <= 3:
        raise CPLError(f"cpl: segment_length must be 1, 2 or 3 (enumerated), got {L!r}")
    if preferences not in PREFERENCES:
        raise CPLError(f"cpl: preferences must be regret or reward, got {preferences!r}")


def fit_cpl(mdp, alpha: float, L: int = 2, preferences: str = "regret", max_iter: int = 2000):
    """CPL's population fit: ``(pi (S, A), iterates list of (S, A) policies, loss at pi, the
    loss's minimum (the preferences' entropy))``."""
    _check(mdp, alpha, L, preferences)
    S, A = mdp.S, mdp.A
    M, w = segments(mdp, int(L))  # (N, S A) occurrence counts, (N,) weights
    score = M @ segment_scores(mdp, alpha, preferences).reshape(-1)  # (N,) the user's scores
    floor = preference_loss(score, score, w)[0]

    def fun(x):
        logp = log_softmax(x.reshape(S, A), axis=1)
        val, g = preference_loss(alpha * (M @ logp.reshape(-1)), score, w)
        g_logp = alpha * (M.T @ g).reshape(S, A)  # dL / d log pi
        pi = np.exp(logp)
        return val, (g_logp - pi * g_logp.sum(1, keepdims=True)).reshape(-1)

    iterates = [np.full((S, A), 1.0 / A)]
    res = minimize(
        fun,
        np.zeros(S * A),
        jac=True,
        method="L-BFGS-B",
        callback=lambda x: iterates.append(softmax(x.reshape(S, A), axis=1)),
        options={"gtol": 1e-12, "ftol": 1e-15, "maxiter": int(max_iter)},
    )
    return softmax(res.x.reshape(S, A), axis=1), iterates, float(res.fun), floor


@register("cpl", kind="policy-optimization", problem="tabular-discounted", papers=("002-004#E10",))
def cpl(problem, iterations, alpha: float = 0.5, segment_length: int = 2,
        preferences: str = "regret"):  # fmt: skip
    """CPL (Hejna et al. 2024) on population segment preferences: the L-BFGS iterates of the
    policy fit against the soft optimum pi*_alpha."""
    pi, its, _, _ = fit_cpl(problem, alpha, segment_length, preferences, max_iter=int(iterations))
    its = (its + [pi] * (int(iterations) + 1))[: int(iterations) + 1]  # converged: hold the fit
    star = soft_value_iteration(problem, alpha)
    return soft_scored_path(problem, np.stack(its), star, alpha,
                            {"alpha": float(alpha), "L": segment_length,
                             "preferences": preferences})  # fmt: skip
