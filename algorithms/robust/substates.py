r"""Distributional DP with worst-case and best-case substates; safe and risky tie-breaking.

Seed row ``seed-catalogue-000.md#73``: M. Achab, G. Neu, "Robustness and risk management via
distributional dynamic programming" (arXiv:2112.15430).

What was read [V] (the abstract, through the catalogue row): a class of distributional
operators with a robust-MDP interpretation; a DP for policy evaluation on an augmented state
space where every state is split into a worst-case and a best-case substate, whose values are
maximised by safe and risky policies; a DP that tells safe from risky optimal actions, to break
ties among optimal policies.

Reconstructed [A] (the operators are not read; this is one construction with the stated
properties, exact and checkable): each state's return law is kept as two substates, a worst one
of mass alpha and a best one of mass 1 - alpha. For a policy pi on a discounted MDP, the one-step
law at s is the mixture, over a ~ pi(s), s' ~ P(s, a) and the next substate, of
r(s, a) + gamma V^-(s') (weight alpha) and r(s, a) + gamma V^+(s') (weight 1 - alpha); the
operator splits it at its alpha-quantile:

    V^-(s) = CVaR_alpha (lower-tail mean of mass alpha),   V^+(s) = upper-tail mean (1 - alpha),

so alpha V^- + (1 - alpha) V^+ is the mixture's mean and the mean recursion is the ordinary
Bellman equation: alpha V^- + (1 - alpha) V^+ = V^pi exactly, hence V^- <= V^pi <= V^+. The robust
reading: V^-(s) = min over reweightings q <= w / alpha of the next (state, substate) law w
(the CVaR uncertainty set, an adversary who may scale any probability by up to 1 / alpha), V^+
the optimistic max. On a deterministic MDP every law is a point mass and V^- = V^pi = V^+.
The map (V^-, V^+) -> (V^-, V^+) is a gamma-contraction (CVaR is monotone and
translation-equivariant), iterated here until its sup-norm step is below tol (1 - gamma) / gamma.

Tie-breaking [A]: with Q* the optimal (mean) Q-function and the tied set
T(s) = {a : Q*(s, a) >= max_b Q*(s, b) - tie_tol}, the *safe* policy takes, at every sweep,
argmax_{a in T(s)} Q^-(s, a) (the worst substate's value of a, with the current substates), the
*risky* one argmax Q^+; both are optimal for the mean. Registered as ``substate-dp`` (kind
``policy-optimization``: one substate-DP sweep per iteration; objective: the mean value of the
greedy safe/risky policy, regularised: its worst- (safe) or best-substate (risky) value).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from theorylab.algorithms.planning.evaluation import evaluate_discounted
from theorylab.algorithms.planning.robust import iterate_to_fixed_point
from theorylab.algorithms.planning.value_iteration import value_iteration
from theorylab.algorithms.policy_optimization.path import PolicyPath
from theorylab.algorithms.registry import register

PAPERS = ("000#73",)


def split_at_alpha(atoms: np.ndarray, weights: np.ndarray, alpha: float):
    """Lower-tail mean of mass alpha and upper-tail mean of mass 1 - alpha of the discrete laws
    (atoms (N, M), weights (N, M) rows summing to 1): ((N,), (N,))."""
    order = np.argsort(atoms, axis=1, kind="stable")
    x = np.take_along_axis(atoms, order, axis=1)
    w = np.take_along_axis(weights, order, axis=1)
    before = np.cumsum(w, axis=1) - w
    low = np.clip(alpha - before, 0.0, w)  # the lowest atoms first, up to mass alpha
    lower = (low * x).sum(axis=1) / alpha
    mean = (w * x).sum(axis=1)
    upper = (mean - alpha * lower) / (1.0 - alpha) if alpha < 1 else mean
    return lower, upper


def _action_laws(mdp, Vm: np.ndarray, Vp: np.ndarray, alpha: float, gamma: float):
    """Atoms and weights (S, A, 2S) of the one-step law of every (s, a)."""
    P = mdp.dense_P()  # (S, A, S)
    r = mdp.reward(0)[:, :, None]
    atoms = np.concatenate([r + gamma * Vm[None, None, :], r + gamma * Vp[None, None, :]], axis=2)
    weights = np.concatenate([alpha * P, (1.0 - alpha) * P], axis=2)
    return atoms, weights


def substate_backup(mdp, Vm, Vp, alpha: float, pi: np.ndarray, gamma: float):
    """One sweep for a policy pi (S, A): (V^- (S,), V^+ (S,), Q^- (S, A), Q^+ (S, A))."""
    S, A = mdp.S, mdp.A
    atoms, weights = _action_laws(mdp, Vm, Vp, alpha, gamma)
    Qm, Qp = split_at_alpha(atoms.reshape(S * A, -1), weights.reshape(S * A, -1), alpha)
    mix = (pi[:, :, None] * weights).reshape(S, -1)  # the state's law: a mixture over actions
    Vm_new, Vp_new = split_at_alpha(atoms.reshape(S, -1), mix, alpha)
    return Vm_new, Vp_new, Qm.reshape(S, A), Qp.reshape(S, A)


@dataclass(frozen=True)
class SubstateSolution:
    """V^-, V^+ (S,); Q^-, Q^+ (S, A); the policy (S, A); iterations (sweeps)."""

    Vm: np.ndarray
    Vp: np.ndarray
    Qm: np.ndarray
    Qp: np.ndarray
    policy: np.ndarray
    iterations: int


def _check_alpha(alpha) -> float:
    ok = isinstance(alpha, (int, float)) and not isinstance(alpha, bool) and 0 < alpha < 1
    if not ok:
        raise ValueError(f"alpha (the worst substate's mass) must lie in (0, 1), got {alpha!r}")
    return float(alpha)


def evaluate_substates(mdp, policy, alpha: float, tol: float = 1e-12) -> SubstateSolution:
    """The substate values of a fixed stationary policy ((S,) int or (S, A))."""
    alpha = _check_alpha(alpha)
    pol = np.asarray(policy)
    if np.issubdtype(pol.dtype, np.integer):
        pol = np.eye(mdp.A)[pol]
    return _iterate(mdp, alpha, lambda Qm, Qp: pol, tol)


def _iterate(mdp, alpha: float, choose, tol: float, sweeps: int | None = None, record=None):
    """Iterate the substate backup on (V^-, V^+) (2, S), the policy re-chosen from the current
    (Q^-, Q^+) before every sweep; exactly ``sweeps`` sweeps when given."""
    g = mdp.gamma
    Q = {"m": np.zeros((mdp.S, mdp.A)), "p": np.zeros((mdp.S, mdp.A))}

    def backup(V):
        Vm, Vp, Q["m"], Q["p"] = substate_backup(mdp, V[0], V[1], alpha, choose(Q["m"], Q["p"]), g)
        if record is not None:
            record(choose(Q["m"], Q["p"]), Vm, Vp)
        return np.stack([Vm, Vp])

    V0 = np.zeros((2, mdp.S))
    if sweeps is None:
        V, it = iterate_to_fixed_point(backup, V0, g, tol)
    else:
        V, it = iterate_to_fixed_point(backup, V0, g, -1.0, int(sweeps))
    return SubstateSolution(V[0], V[1], Q["m"], Q["p"], choose(Q["m"], Q["p"]), it)


def tied_optimal_actions(mdp, tie_tol: float = 1e-9) -> np.ndarray:
    """(S, A) bool: the actions within tie_tol of max_a Q*(s, a) (Q* by value iteration)."""
    Q = value_iteration(mdp, tol=1e-13).Q
    return Q >= Q.max(axis=1, keepdims=True) - tie_tol


def tie_break_key(Qm: np.ndarray, Qp: np.ndarray, mode: str) -> np.ndarray:
    """The value the tie among optimal actions is broken by: Q^- (safe) or Q^+ (risky)."""
    return Qm if mode == "safe" else Qp


def tie_breaking_policy(mdp, alpha: float, mode: str, tie_tol: float = 1e-9, tol: float = 1e-12,
                        sweeps: int | None = None, record=None) -> SubstateSolution:  # fmt: skip
    """The safe (mode "safe") or risky ("risky") optimal policy (module docstring)."""
    alpha = _check_alpha(alpha)
    if mode not in ("safe", "risky"):
        raise ValueError(f"mode must be safe or risky, got {mode!r}")
    tied = tied_optimal_actions(mdp, tie_tol)

    def choose(Qm, Qp):
        key = np.where(tied, tie_break_key(Qm, Qp, mode), -np.inf)
        return np.eye(mdp.A)[key.argmax(axis=1)]

    return _iterate(mdp, alpha, choose, tol, sweeps, record)


@register("substate-dp", kind="policy-optimization", problem="tabular-discounted", papers=PAPERS)
def substate_dp(problem, iterations, alpha: float = 0.25, mode: str = "safe"):
    """Distributional DP with worst/best substates and safe/risky tie-breaking (Achab & Neu)."""
    alpha = _check_alpha(alpha)
    if mode not in ("safe", "risky"):
        raise ValueError(f"substate-dp: mode must be safe or risky, got {mode!r}")
    pols, tails = [], []

    def record(pi, Vm, Vp):
        pols.append(pi)
        tails.append(float((Vm if mode == "safe" else Vp) @ problem.mu0))

    tie_breaking_policy(problem, alpha, mode, sweeps=int(iterations), record=record)
    means = np.array([float(evaluate_discounted(problem, p) @ problem.mu0) for p in pols])
    V_star = float(value_iteration(problem, tol=1e-13).V @ problem.mu0)
    return PolicyPath(
        objective=means,
        regularised=np.array(tails),
        entropy=np.zeros(means.size),
        target_gap=np.full(means.size, np.nan),
        target_value=V_star,
        policies=np.stack(pols),
        config={"alpha": alpha, "mode": mode, "gamma": float(problem.gamma)},
    )
