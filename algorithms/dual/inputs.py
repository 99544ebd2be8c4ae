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


def check_distribution(d, shape: tuple[int, ...], name: str, *, stages: bool = False) -> np.ndarray:
    """A probability array of the given shape (float64 copy); names the first bad entry.

    stages: the leading axis indexes horizon stages and each stage must sum to 1 (a finite-horizon
    d^O ``(H, S, A)``)."""
    d = np.array(d, dtype=np.float64)
    if d.shape != shape:
        raise DualInputError(f"{name} must have shape {shape}, got {d.shape}")
    bad = ~np.isfinite(d) | (d < 0)
    if bad.any():
        idx = tuple(int(i) for i in np.argwhere(bad)[0])
        raise DualInputError(f"{name} at {idx} is {d[idx]!r}; expected a finite value >= 0")
    if stages:
        mass = d.reshape(d.shape[0], -1).sum(axis=1)
        off = np.flatnonzero(np.abs(mass - 1.0) > 1e-9)
        if off.size:
            h = int(off[0])
            raise DualInputError(
                f"{name} stage h={h} sums to {mass[h]:.12g}, expected 1 (tolerance 1e-9): a "
                "finite-horizon d^O is one distribution over (s, a) per stage"
            )
        return d
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


def check_stage_flow_support(mdp, d_ref: np.ndarray, mu: np.ndarray) -> None:
    """Finite-horizon :func:`check_flow_support`, d_ref ``(H, S, A)``, mu ``(S,)``.

    G_{H-1} = states with an action of d^O_{H-1} mass; G_h = states with a d^O_h-supported action
    whose P_h-successors all lie in G_{h+1}. A feasible d << d^O exists iff supp(mu) lies in G_0
    (the same argument as the discounted case, stage by stage). The message names the (h, s)
    with no d^O_h mass that the flow reaches from mu through supported actions.
    """
    H, S, A = d_ref.shape
    on = d_ref.reshape(H, S * A) > 0
    good = [None] * H
    good[H - 1] = on[H - 1].reshape(S, A).any(axis=1)
    for h in range(H - 2, -1, -1):
        P = sp.csr_array(mdp.P_flat(h))
        leaks = (P @ (~good[h + 1]).astype(np.float64)) > 0
        good[h] = (on[h] & ~leaks).reshape(S, A).any(axis=1)
    start = mu > 0
    if not np.any(start & ~good[0]):
        return
    reach = start.copy()
    culprits: list[tuple[int, int]] = []
    for h in range(H):
        empty = ~on[h].reshape(S, A).any(axis=1)
        culprits = [(h, int(s)) for s in np.flatnonzero(reach & empty)]
        if culprits or h == H - 1:
            break
        from_pairs = np.repeat(reach, A).astype(np.float64) * on[h]
        reach = (sp.csr_array(mdp.P_flat(h)).T @ from_pairs) > 0
    bad_start = int(np.flatnonzero(start & ~good[0])[0])
    shown = ", ".join(f"(h={h}, s={s}, a=0..{A - 1})" for h, s in culprits[:4])
    more = f" and {len(culprits) - 4} more" if len(culprits) > 4 else ""
    where = (
        f"d^O has zero mass at {shown}{more}, which the flow reaches"
        if culprits
        else ("the flow leaves the support of d^O")
    )
    raise UncoveredFlowError(
        f"{where}: from the initial state s={bad_start} (mu(s) = {mu[bad_start]:.3g}) no policy "
        "that plays only actions with d^O_h(s, a) > 0 stays inside the support for all "
        f"{H} stages, so no occupancy d << d^O satisfies the stage-wise flow constraint and the "
        f"dual-V objective is unbounded below; give d^O mass there (H = {H}, S = {S}, A = {A})"
    )
