"""Average-reward planning on a known tabular model: gain, bias, span, diameter, mixing time.

References: Puterman, *Markov Decision Processes* (1994), chapters 8 and 9 (the gain/bias
equations 8.2.11-8.2.12, relative value iteration 8.5.5, the aperiodicity transformation
8.5.4, the average-reward LP 8.8 and 9.3) [M]; Jaksch, Ortner & Auer 2010, Definition 1 (the
diameter) [S]; Levin, Peres & Wilmer, *Markov Chains and Mixing Times*, section 4.5 (t_mix with
the threshold 1/4) [M]. [M] from memory, [S] as restated by the issue and later papers.

A model is ``(P, R)``: ``P (S, A, S)`` stage-independent transitions and ``R (S, A)`` mean
rewards (a :class:`~theorylab.mdps.tabular.TabularMDP`'s horizon and discount are ignored: the
objective here is the long-run average ``lim (1/T) E sum_t r(s_t, a_t)``).

* **A policy's gain and bias** (:func:`policy_gain_bias`): for a unichain chain ``P_pi`` with
  stationary distribution ``d`` (``d P_pi = d``), ``g = d r_pi`` and the bias
  ``h = Z (r_pi - g 1)`` with the fundamental matrix ``Z = (I - P_pi + 1 d)^-1`` (Puterman
  A.14); it solves ``g + h = r_pi + P_pi h`` with ``d h = 0``. A multichain policy (more than one
  closed class) is refused: its gain is not one number.
* **The optimal gain and bias, answer 1** (:func:`optimal_gain_bias_lp`): the LP
  ``min g  s.t.  g + h(s) >= r(s, a) + sum_s' P(s'|s, a) h(s')`` gives g* (weakly communicating
  models). With g* fixed, ``min sum_s h(s)`` over the same constraints and ``h(s_ref) = 0``
  (``s_ref`` recurrent under an optimal policy: it carries the first LP's occupancy) gives h*
  on a unichain model: every feasible h is ``>= h* + c`` with equality on the optimal recurrent
  class (proof in the test module's docstring). The LP's h is then polished: an optimal policy
  greedy in h is evaluated exactly (:func:`policy_gain_bias`), so h* is exact to round-off.
* **Answer 2** (:func:`optimal_gain_bias_rvi`): relative value iteration on the
  aperiodicity-transformed model ``P_tau = (1 - tau) I + tau P`` (same gain, bias ``h/tau``;
  Puterman 8.5.4), ``u <- T u - (T u)(s_ref)``, until ``sp(T u - u) < tol``; no LP, no linear
  solve. The two answers agree to 1e-8 on unichain and communicating models (tests).
* **Span** ``sp(h) = max h - min h``; biases are returned normalised to ``min h = 0``.
* **Diameter** (:func:`diameter`): ``D = max_{s != s'} min_pi E[T(s -> s') | pi]`` by
  shortest-path value iteration, all targets at once: ``V(s) = 0`` at the target,
  ``V(s) = 1 + min_a sum_s' P V`` elsewhere, from 0 upwards (monotone). A pair with no path
  (non-communicating model) is refused, naming it.
* **Mixing time** (:func:`mixing_time`): ``t_mix(pi) = min{t : max_s ||P_pi^t(s, .) - d||_TV <=
  1/4}`` by powers of ``P_pi``; a model's ``t_mix = max_pi t_mix(pi)`` over its deterministic
  policies, by enumeration (small models only: ``A^S <= 4096``). Periodic or multichain policies
  never mix and are refused.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from scipy.optimize import linprog
from scipy.sparse.csgraph import connected_components

from theorylab.errors import InvalidMDPError, InvalidPolicyError

LP_TOLERANCE = 1e-10  # HiGHS primal/dual feasibility tolerance for the average-reward LPs
RVI_TOLERANCE = 1e-13  # sp(T u - u) at which relative value iteration stops
MIX_THRESHOLD = 0.25  # the TV threshold of t_mix (Levin-Peres-Wilmer's 1/4)
MAX_ENUMERATED_POLICIES = 4096


@dataclass(frozen=True)
class GainBias:
    """Gain g, bias h ``(S,)`` (normalised to min h = 0 for optimal biases, to ``d h = 0`` for
    :func:`policy_gain_bias`), and a policy ``(S,)`` of actions attaining them (optimal
    answers) or the policy evaluated; ``iterations`` of the method (0 for exact solves)."""

    gain: float
    bias: np.ndarray
    policy: np.ndarray
    iterations: int = 0

    @property
    def span(self) -> float:
        return span(self.bias)


def span(h: np.ndarray) -> float:
    """``sp(h) = max_s h(s) - min_s h(s)``."""
    h = np.asarray(h, dtype=np.float64)
    return float(h.max() - h.min())


def model_arrays(mdp) -> tuple[np.ndarray, np.ndarray]:
    """``(P (S, A, S), R (S, A))`` of a stage-independent tabular model (or a ``(P, R)`` pair);
    a stage-dependent model is refused (it has no average reward)."""
    if isinstance(mdp, tuple):
        P, R = (np.asarray(x, dtype=np.float64) for x in mdp)
    else:
        if getattr(mdp, "stage_dependent", False) or getattr(mdp, "reward_stage_dependent", False):
            raise InvalidMDPError(
                f"average reward needs stage-independent transitions and rewards; "
                f"{getattr(mdp, 'name', 'the model')} is stage-dependent"
            )
        P, R = np.asarray(mdp.dense_P(), dtype=np.float64), np.asarray(mdp.reward(0), float)
    if P.ndim != 3 or P.shape[0] != P.shape[2] or R.shape != P.shape[:2]:
        raise InvalidMDPError(
            f"average reward needs P (S, A, S) and R (S, A); got P {P.shape}, R {R.shape}"
        )
    return P, R


def _policy_matrix(P: np.ndarray, R: np.ndarray, policy) -> tuple[np.ndarray, np.ndarray]:
    """``(P_pi (S, S), r_pi (S,))`` of a deterministic ``(S,)`` or stochastic ``(S, A)`` policy."""
    S, A = R.shape
    pi = np.asarray(policy)
    if pi.shape == (S,):
        if not np.issubdtype(pi.dtype, np.integer) or pi.min() < 0 or pi.max() >= A:
            raise InvalidPolicyError(
                f"policy: a deterministic policy is (S,) = ({S},) actions in 0..{A - 1}, got {pi!r}"
            )
        idx = np.arange(S)
        return P[idx, pi], R[idx, pi]
    if pi.shape == (S, A):
        pi = pi.astype(np.float64)
        if np.any(pi < 0) or np.any(np.abs(pi.sum(axis=1) - 1) > 1e-9):
            raise InvalidPolicyError("policy: a stochastic policy's rows must be distributions")
        return np.einsum("sa,sat->st", pi, P), (pi * R).sum(axis=1)
    raise InvalidPolicyError(f"policy: expected shape ({S},) or ({S}, {A}), got {pi.shape}")


def closed_classes(P_pi: np.ndarray) -> list[np.ndarray]:
    """The closed communicating classes (recurrent classes) of a chain ``P_pi (S, S)``."""
    adj = sp.csr_array(P_pi > 0)
    n, labels = connected_components(adj, directed=True, connection="strong")
    out = []
    for c in range(n):
        members = np.flatnonzero(labels == c)
        leaves = (P_pi[members][:, labels != c] > 0).any()
        if not leaves:
            out.append(members)
    return out


def stationary_distribution(P_pi: np.ndarray) -> np.ndarray:
    """The stationary distribution ``d (S,)`` of a unichain chain (``d P_pi = d``, sum 1)."""
    S = P_pi.shape[0]
    classes = closed_classes(P_pi)
    if len(classes) != 1:
        raise InvalidPolicyError(
            f"policy: its chain has {len(classes)} recurrent classes (multichain); the gain is "
            "not one number and the bias is not defined here"
        )
    M = np.vstack([P_pi.T - np.eye(S), np.ones((1, S))])
    b = np.zeros(S + 1)
    b[-1] = 1.0
    d = np.linalg.lstsq(M, b, rcond=None)[0]
    return np.clip(d, 0.0, None) / np.clip(d, 0.0, None).sum()


def policy_gain_bias(mdp, policy) -> GainBias:
    """Gain and bias (``d h = 0``) of a unichain policy, exactly (fundamental matrix)."""
    P, R = model_arrays(mdp)
    P_pi, r_pi = _policy_matrix(P, R, policy)
    d = stationary_distribution(P_pi)
    g = float(d @ r_pi)
    S = P_pi.shape[0]
    Z = np.linalg.inv(np.eye(S) - P_pi + np.outer(np.ones(S), d))
    return GainBias(g, Z @ (r_pi - g), np.asarray(policy))


def _lp_rows(P: np.ndarray) -> np.ndarray:
    """``(S*A, S)`` with row ``s*A + a`` = ``e_s - P(.|s, a)``."""
    S, A, _ = P.shape
    E = np.repeat(np.eye(S), A, axis=0)
    return E - P.reshape(S * A, S)


def _highs(c, A_ub, b_ub, A_eq=None, b_eq=None, bounds=None):
    res = linprog(
        c,
        A_ub=A_ub,
        b_ub=b_ub,
        A_eq=A_eq,
        b_eq=b_eq,
        bounds=bounds,
        method="highs-ds",
        options={
            "primal_feasibility_tolerance": LP_TOLERANCE,
            "dual_feasibility_tolerance": LP_TOLERANCE,
        },
    )
    if res.status != 0:
        raise InvalidMDPError(
            f"average-reward LP: HiGHS returned status {res.status} ({res.message}); the model "
            "is not weakly communicating or the LP is ill-posed"
        )
    return res


def greedy(P: np.ndarray, R: np.ndarray, h: np.ndarray) -> np.ndarray:
    """``argmax_a r(s, a) + sum_s' P(s'|s, a) h(s')``, ``(S,)`` (lowest action on ties)."""
    return np.argmax(R + P @ h, axis=1)


def optimal_gain_bias_lp(mdp) -> GainBias:
    """g* and h* (min h = 0) by the two average-reward LPs, h polished by exact evaluation of the
    greedy policy when that policy is unichain (see the module docstring)."""
    P, R = model_arrays(mdp)
    S, A = R.shape
    G = _lp_rows(P)  # (S*A, S)
    ones = np.ones((S * A, 1))
    # g + G h >= r  <=>  -(g + G h) <= -r ; variables (g, h_0..h_{S-1}), all free
    A_ub = -np.hstack([ones, G])
    res = _highs(np.r_[1.0, np.zeros(S)], A_ub, -R.ravel(), bounds=[(None, None)] * (S + 1))
    g = float(res.x[0])
    occupancy = np.abs(res.ineqlin.marginals).reshape(S, A)  # (S, A): the dual's occupancy
    ref = int(np.argmax(occupancy.sum(axis=1)))
    # with g fixed: min sum h  s.t.  G h >= r - g,  h(ref) = 0
    A_eq = np.zeros((1, S))
    A_eq[0, ref] = 1.0
    slack = 10 * LP_TOLERANCE  # g from the first LP may sit below g* by its tolerance
    res2 = _highs(np.ones(S), -G, -(R.ravel() - g - slack), A_eq, [0.0], bounds=[(None, None)] * S)
    h = res2.x
    pi = greedy(P, R, h)
    P_pi, _ = _policy_matrix(P, R, pi)
    if len(closed_classes(P_pi)) == 1:
        exact = policy_gain_bias((P, R), pi)
        if abs(exact.gain - g) <= 1e-7:
            h = exact.bias
            g = exact.gain
    return GainBias(g, h - h.min(), pi, 0)


def optimal_gain_bias_rvi(
    mdp, *, tau: float = 0.5, tol: float = RVI_TOLERANCE, max_iter: int = 10_000_000
) -> GainBias:
    """g* and h* (min h = 0) by relative value iteration on the aperiodicity transform
    ``(1 - tau) I + tau P`` (bias of the transformed model divided by 1/tau)."""
    if not 0.0 < tau <= 1.0:
        raise ValueError(f"tau must be in (0, 1], got {tau!r}")
    P, R = model_arrays(mdp)
    S, A = R.shape
    Pt = tau * P + (1 - tau) * np.eye(S)[:, None, :]  # (S, A, S)
    u = np.zeros(S)
    for it in range(1, max_iter + 1):
        Tu = (R + Pt @ u).max(axis=1)
        diff = Tu - u
        u = Tu - Tu[0]
        if diff.max() - diff.min() < tol:
            g = float(0.5 * (diff.max() + diff.min()))
            h = tau * u
            return GainBias(g, h - h.min(), greedy(P, R, h), it)
    raise InvalidMDPError(
        f"relative value iteration did not reach sp(Tu - u) < {tol:g} in {max_iter} iterations "
        "(is the model weakly communicating?)"
    )


def _check_communicating(P: np.ndarray) -> None:
    S = P.shape[0]
    reach = P.max(axis=1) > 0  # (S, S): s' reachable from s in one step by some action
    closure = reach | np.eye(S, dtype=bool)
    for _ in range(int(np.ceil(np.log2(max(S, 2)))) + 1):
        closure = (closure.astype(np.int64) @ closure.astype(np.int64)) > 0
    if not closure.all():
        s, t = np.argwhere(~closure)[0]
        raise InvalidMDPError(
            f"the model is not communicating: state {t} cannot be reached from state {s} "
            "(the diameter is infinite)"
        )


def diameter(mdp, *, tol: float = 1e-12, max_iter: int = 10_000_000) -> float:
    """``D = max_{s != s'} min_pi E[steps from s to s']`` by shortest-path value iteration."""
    P, _ = model_arrays(mdp)
    _check_communicating(P)
    S = P.shape[0]
    if S == 1:
        return 0.0
    V = np.zeros((S, S))  # V[target, s]
    off = ~np.eye(S, dtype=bool)
    for _ in range(max_iter):
        new = 1.0 + np.einsum("sat,jt->jsa", P, V).min(axis=2)  # (targets, S)
        new[~off] = 0.0
        change = np.abs(new - V).max()
        V = new
        if change <= tol * max(1.0, V.max()):
            return float(V[off].max())
    raise InvalidMDPError(f"shortest-path value iteration did not converge in {max_iter} sweeps")


def policy_mixing_time(P_pi: np.ndarray, *, t_max: int = 1_000_000) -> int:
    """``t_mix = min{t >= 1 : max_s ||P_pi^t(s, .) - d||_TV <= 1/4}`` of one chain."""
    d = stationary_distribution(P_pi)
    M = P_pi.copy()
    for t in range(1, t_max + 1):
        if 0.5 * np.abs(M - d).sum(axis=1).max() <= MIX_THRESHOLD:
            return t
        M = M @ P_pi
    raise InvalidPolicyError(
        f"policy: its chain is not within TV 1/4 of stationarity after t_max={t_max} steps "
        "(periodic chains never mix)"
    )


def mixing_time(mdp, policy=None) -> int:
    """t_mix of one policy, or (``policy=None``) ``max_pi t_mix(pi)`` over every deterministic
    policy by enumeration (``A^S <= 4096``)."""
    P, R = model_arrays(mdp)
    S, A = R.shape
    if policy is not None:
        return policy_mixing_time(_policy_matrix(P, R, policy)[0])
    if A**S > MAX_ENUMERATED_POLICIES:
        raise ValueError(
            f"mixing_time enumerates A^S = {A}^{S} deterministic policies; at most "
            f"{MAX_ENUMERATED_POLICIES} (pass policy= for one policy)"
        )
    worst = 0
    for pi in itertools.product(range(A), repeat=S):
        worst = max(worst, policy_mixing_time(P[np.arange(S), np.array(pi)]))
    return worst


def lazy(mdp, stay: float):
    """The lazy version ``stay I + (1 - stay) P`` of a model: the same gains and optimal
    policies, biases and mixing times scaled by ``1 / (1 - stay)`` (the t_mix knob of the
    sample-complexity claims). Returns a :class:`~theorylab.mdps.tabular.TabularMDP` (its
    horizon, 20, is only a label: average reward ignores it)."""
    from theorylab.mdps.tabular import TabularMDP

    if not 0.0 <= float(stay) < 1.0:
        raise ValueError(f"stay must be in [0, 1), got {stay!r}")
    P, R = model_arrays(mdp)
    S = P.shape[0]
    name = getattr(mdp, "name", "model")
    lazy_P = stay * np.eye(S)[:, None, :] + (1.0 - stay) * P
    return TabularMDP(lazy_P, R, horizon=20, name=f"lazy({name},stay={stay:g})")
