r"""Checks of the inputs every dual-RL solver shares, with errors that name the offending value.

* ``alpha`` (the regulariser weight of ``max_d E_d[r] - alpha D_f(d || d^O)``) must be a finite
  positive number: at ``alpha = 0`` the problem is the plain occupancy LP
  (:func:`theorylab.algorithms.planning.lp.discounted_lp`), which has its own solver.
* the reference distribution ``d^O (S, A)`` must be a probability distribution;
* the flow polytope must meet ``{d : d << d^O}``. Every dual-V objective ranges over d = d^O w, so
  when every such d violates the flow constraint the primal is infeasible and the dual-V objective
  is unbounded below (Sikchi et al. 2024 assume d^O covers what the flow needs). A feasible
  d << d^O exists exactly when the initial states lie in the largest set G of states that have a
  data-supported action whose successors all stay in G (then the policy that plays such an action
  everywhere in G has its occupancy inside the support; conversely every state a feasible d visits
  is in G). :func:`check_flow_support` computes G by removal and, when it fails, names the
  (s, a) pairs without mass that the flow must use.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from theorylab.errors import TheorylabError


class DualInputError(TheorylabError, ValueError):
    """An input of a dual-RL solver is invalid (alpha, d^O, q, a cost, a dataset)."""


class UncoveredFlowError(DualInputError):
    """No occupancy measure ``d << d^O`` satisfies the flow constraint: the primal is infeasible
    and the dual-V objective is unbounded below. The message names the (s, a) pairs."""


def check_alpha(alpha, name: str = "alpha") -> float:
    """``alpha`` as a float; raises :class:`DualInputError` unless finite and > 0."""
    try:
        a = float(alpha)
    except (TypeError, ValueError):
        raise DualInputError(f"{name} must be a positive number, got {alpha!r}") from None
    if not np.isfinite(a) or a <= 0:
        raise DualInputError(
            f"{name} must be a finite number > 0, got {alpha!r} (alpha = 0 is the unregularised "
            "occupancy LP: use theorylab.algorithms.planning.lp.discounted_lp)"
        )
    return a


def check_distribution(d, shape: tuple[int, ...], name: str) -> np.ndarray:
    """A probability array of the given shape (float64 copy); names the first bad entry."""
    d = np.array(d, dtype=np.float64)
    if d.shape != shape:
        raise DualInputError(f"{name} must have shape {shape}, got {d.shape}")
    bad = ~np.isfinite(d) | (d < 0)
    if bad.any():
        idx = tuple(int(i) for i in np.argwhere(bad)[0])
        raise DualInputError(f"{name} at {idx} is {d[idx]!r}; expected a finite value >= 0")
    if abs(d.sum() - 1.0) > 1e-9:
        raise DualInputError(f"{name} sums to {d.sum():.12g}, expected 1 (tolerance 1e-9)")
    return d


def supported_states(P_flat, d_ref: np.ndarray, gamma: float) -> np.ndarray:
    """The largest state set G in which every state has an action with ``d^O(s, a) > 0`` whose
    successors all lie in G (module docstring). P_flat ``(S*A, S)``, d_ref ``(S, A)``; returns a
    boolean ``(S,)``. With ``gamma = 0`` successors do not matter."""
    S, A = d_ref.shape
    on = d_ref.ravel() > 0  # (S*A,)
    good = on.reshape(S, A).any(axis=1)
    if gamma == 0.0:
        return good
    P = sp.csr_array(P_flat)
    while True:
        leaks = (P @ (~good).astype(np.float64)) > 0  # (S*A,) some successor outside G
        alive = (on & ~leaks).reshape(S, A).any(axis=1)
        new = good & alive
        if np.array_equal(new, good):
            return good
        good = new


def check_flow_support(mdp, d_ref: np.ndarray, gamma: float, mu: np.ndarray) -> None:
    """Raise :class:`UncoveredFlowError` naming (s, a) pairs when no ``d << d^O`` is feasible.

    d_ref ``(S, A)``, mu ``(S,)``. The named pairs are those of the zero-mass states that the flow
    reaches from the initial states through data-supported actions (or an initial state itself).
    """
    S, A = mdp.S, mdp.A
    good = supported_states(mdp.P_flat(0), d_ref, gamma)
    start = mu > 0
    if not np.any(start & ~good):
        return
    empty = ~(d_ref > 0).any(axis=1)  # states with d^O(s, .) = 0
    # states reachable from the initial states through supported actions
    reach = start.copy()
    P = sp.csr_array(mdp.P_flat(0))
    on = (d_ref.ravel() > 0).astype(np.float64)
    while gamma > 0:
        from_pairs = np.repeat(reach, A).astype(np.float64) * on  # (S*A,)
        nxt = (P.T @ from_pairs) > 0
        new = reach | nxt
        if np.array_equal(new, reach):
            break
        reach = new
    culprits = np.flatnonzero(empty & reach)
    if culprits.size == 0:  # defensive: name the initial states that fail
        culprits = np.flatnonzero(start & ~good)
    shown = culprits[:4]
    pairs = ", ".join(f"(s={s}, a=0..{A - 1})" for s in shown)
    more = f" and {culprits.size - shown.size} more states" if culprits.size > shown.size else ""
    bad_start = int(np.flatnonzero(start & ~good)[0])
    raise UncoveredFlowError(
        f"d^O has zero mass at {pairs}{more}, which the flow must visit: from the initial state "
        f"s={bad_start} (mu(s) = {mu[bad_start]:.3g}) every policy that plays only actions with "
        "d^O(s, a) > 0 reaches them, so no occupancy d << d^O satisfies the flow constraint and "
        "the dual-V objective is unbounded below; give d^O mass on an action of those states "
        f"(S = {S}, A = {A})"
    )
