"""Arrays in the layouts other libraries use -> the arrays a :class:`TabularMDP` holds.

:func:`normalize_arrays` is what ``TabularMDP.from_arrays`` calls; it returns transitions in
theorylab's layout, mean rewards in [0, 1] and the :class:`~theorylab.mdps.reward_map.RewardMap`
back to the user's units. It builds no model (the constructor validates), so this module does not
import :mod:`theorylab.mdps.tabular`.

Layouts of ``P``:

* ``layout="SAS"`` (theorylab's own): dense ``(S, A, S)`` / ``(H, S, A, S)``, or a scipy sparse
  ``(S*A, S)`` matrix with row ``s*A + a`` (``(H*S*A, S)`` stage-dependent), kept sparse.
* ``layout="ASS"`` (pymdptoolbox's, MDPtoolbox for MATLAB/R): dense ``(A, S, S)`` with
  ``P[a, s, s']``, or a list/tuple of ``A`` matrices ``(S, S)``, each dense or scipy sparse (as
  ``mdptoolbox.example.forest(is_sparse=True)`` returns them). A list of sparse matrices becomes
  a CSR ``(S*A, S)`` (row ``s*A + a``: rows reordered, never densified).

Shapes of ``R`` (either layout): ``(S, A)`` mean rewards; ``(S,)`` a reward per state, paid
whatever the action (pymdptoolbox's vector form); per transition, ``(A, S, S)`` or a list of
``A`` matrices ``(S, S)`` with layout ASS, ``(S, A, S)`` with layout SAS, collapsed to the mean
``r(s, a) = sum_s' P(s'|s, a) r(s, a, s')`` (values and optimal policies are exact; a realised
reward no longer depends on where the step landed); ``(H, S, A)`` stage-dependent (layout SAS).

``reward_range``: ``None`` (rewards must already lie in [0, 1]; the constructor's error names the
entry), ``"auto"`` (:func:`~theorylab.mdps.reward_map.reward_map_of` of the mean rewards' range:
rewards in [0, 1] stay untouched) or ``(lo, hi)``, the range the user declares (``offset = lo``,
``scale = hi - lo``; a mean reward outside it is an error).
"""

from __future__ import annotations

from typing import Literal

import numpy as np
import scipy.sparse as sp

from theorylab.errors import InvalidMDPError
from theorylab.mdps.reward_map import (
    IDENTITY,
    RewardMap,
    declared_reward_map,
    reward_map_of,
)

Layout = Literal["SAS", "ASS"]
LAYOUTS = ("SAS", "ASS")


def _is_matrix_list(x) -> bool:
    return isinstance(x, (list, tuple)) and len(x) > 0


def _ass_transitions(P):
    """pymdptoolbox's ``(A, S, S)`` (dense, or a list of A ``(S, S)`` matrices) -> dense
    ``(S, A, S)`` or CSR ``(S*A, S)``; returns (P, S, A)."""
    if _is_matrix_list(P) and any(sp.issparse(m) for m in P):
        mats = [sp.csr_array(m, dtype=np.float64) for m in P]
        A = len(mats)
        S = mats[0].shape[0]
        for a, m in enumerate(mats):
            if m.shape != (S, S):
                raise InvalidMDPError(
                    f"P[{a}] has shape {m.shape}, expected (S, S) = ({S}, {S}) as P[0] "
                    "(layout='ASS': one (S, S) matrix per action)"
                )
        stacked = sp.vstack(mats, format="csr")  # row a*S + s
        # row s*A + a of the result is row a*S + s of the stack
        perm = (np.arange(A)[None, :] * S + np.arange(S)[:, None]).ravel()  # (S*A,)
        return sp.csr_array(stacked[perm]), S, A
    try:
        P = np.asarray(P if not _is_matrix_list(P) else np.stack(P), dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise InvalidMDPError(f"P (layout='ASS') is not a numeric array: {exc}") from None
    if P.ndim != 3 or P.shape[1] != P.shape[2]:
        raise InvalidMDPError(
            f"P with layout='ASS' must have shape (A, S, S) (pymdptoolbox's layout), got {P.shape}"
        )
    return np.ascontiguousarray(P.transpose(1, 0, 2)), P.shape[1], P.shape[0]


def _sas_shape(P, R) -> tuple[int, int]:
    """(S, A) of transitions in theorylab's layout (a sparse P's A: from R when R is ``(S, A)``
    or ``(H, S, A)``, else ``rows / S``, the stationary ``(S*A, S)``)."""
    if sp.issparse(P):
        S, rows = P.shape[1], P.shape[0]
        r_shape = np.shape(R) if not _is_matrix_list(R) else ()
        if len(r_shape) in (2, 3) and r_shape[-2] == S and r_shape[-1] > 0:
            return S, int(r_shape[-1])
        if S < 1 or rows % S:
            raise InvalidMDPError(
                f"sparse P must have shape (S*A, S) with row s*A + a, got {P.shape}"
            )
        return S, rows // S
    if P.ndim == 3:
        return P.shape[0], P.shape[1]
    if P.ndim == 4:
        return P.shape[1], P.shape[2]
    raise InvalidMDPError(
        f"P with layout='SAS' must have shape (S, A, S), (H, S, A, S) or be a sparse "
        f"(S*A, S) matrix, got shape {P.shape}"
    )


def _expected_over_next(P_sas, R_sas: np.ndarray, S: int, A: int) -> np.ndarray:
    """``r(s, a) = sum_s' P(s'|s, a) r(s, a, s')`` for stationary P (dense ``(S, A, S)`` or
    CSR ``(S*A, S)``) and R ``(S, A, S)``; returns ``(S, A)``."""
    if sp.issparse(P_sas):
        flat = R_sas.reshape(S * A, S)
        return np.asarray(P_sas.multiply(flat).sum(axis=1)).reshape(S, A)
    return np.einsum("sat,sat->sa", P_sas, R_sas)


def _mean_rewards(R, P_sas, layout: str, S: int, A: int, horizon) -> np.ndarray:
    """Mean rewards ``(S, A)`` or ``(H, S, A)`` from any accepted shape of R."""
    if layout == "ASS" and _is_matrix_list(R) and len(R) == A and np.ndim(R[0]) == 2:
        R = np.stack([m.toarray() if sp.issparse(m) else np.asarray(m) for m in R])
    if sp.issparse(R):
        R = R.toarray()
    try:
        R = np.asarray(R, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise InvalidMDPError(f"R is not a numeric array: {exc}") from None
    if not np.all(np.isfinite(R)):
        idx = tuple(int(i) for i in np.argwhere(~np.isfinite(R))[0])
        raise InvalidMDPError(f"R is not finite at index {idx}: {R[idx]}")
    if R.shape == (S, A):
        return R
    if R.shape == (S,):
        return np.repeat(R[:, None], A, axis=1)
    stationary = P_sas.shape[0] == S * A if sp.issparse(P_sas) else P_sas.ndim == 3
    if layout == "ASS" and R.shape == (A, S, S) and stationary:
        return _expected_over_next(P_sas, np.ascontiguousarray(R.transpose(1, 0, 2)), S, A)
    if layout == "SAS":
        stage = horizon is not None and R.shape == (horizon, S, A)
        transition = R.shape == (S, A, S) and stationary
        if stage and transition:
            raise InvalidMDPError(
                f"R of shape {R.shape} is ambiguous (H = S = A): pass mean rewards (S, A)"
            )
        if stage:
            return R
        if transition:
            return _expected_over_next(P_sas, R, S, A)
    shapes = (
        f"(S, A) = ({S}, {A}), (S,) = ({S},) or (A, S, S) = ({A}, {S}, {S})"
        if layout == "ASS"
        else f"(S, A) = ({S}, {A}), (S,) = ({S},), (S, A, S) or (H, S, A)"
    )
    raise InvalidMDPError(f"R must have shape {shapes} (layout={layout!r}), got {R.shape}")


def _reward_map(R: np.ndarray, reward_range) -> RewardMap:
    if reward_range is None:
        bad = (R < 0) | (R > 1)
        if bad.any():
            idx = tuple(int(i) for i in np.argwhere(bad)[0])
            names = ("h", "s", "a")[-R.ndim :]
            where = ", ".join(f"{n}={i}" for n, i in zip(names, idx, strict=True))
            raise InvalidMDPError(
                f"R at ({where}) is {R[idx]:.6g}, mean rewards must lie in [0, 1]: pass "
                "reward_range='auto' (or (lo, hi)) to map them there exactly"
            )
        return IDENTITY
    if isinstance(reward_range, str):
        if reward_range != "auto":
            raise InvalidMDPError(
                f"reward_range must be None, 'auto' or a pair (lo, hi), got {reward_range!r}"
            )
        return reward_map_of(R.min(), R.max())
    rmap = declared_reward_map(reward_range)
    lo, hi = rmap.offset, rmap.offset + rmap.scale
    bad = (R < lo) | (R > hi)
    if bad.any():
        idx = tuple(int(i) for i in np.argwhere(bad)[0])
        raise InvalidMDPError(
            f"mean reward R{list(idx)} = {R[idx]:.6g} lies outside reward_range "
            f"({lo:.6g}, {hi:.6g})"
        )
    return rmap


def normalize_arrays(P, R, *, layout: str = "SAS", reward_range=None, horizon=None):
    """``(P, R_unit, reward_map)``: transitions in theorylab's layout (dense ``(S, A, S)`` /
    ``(H, S, A, S)`` or CSR ``(S*A, S)``), mean rewards in [0, 1] (``(S, A)`` or ``(H, S, A)``)
    and the map back to the user's units. See the module docstring for the accepted shapes."""
    if layout not in LAYOUTS:
        raise InvalidMDPError(
            f"layout must be 'SAS' (P[s, a, s'], theorylab's) or 'ASS' (P[a, s, s'], "
            f"pymdptoolbox's), got {layout!r}"
        )
    if layout == "ASS":
        P_sas, S, A = _ass_transitions(P)
    else:
        if sp.issparse(P):
            P_sas = sp.csr_array(P, dtype=np.float64)
        else:
            try:
                P_sas = np.asarray(P, dtype=np.float64)
            except (TypeError, ValueError) as exc:
                raise InvalidMDPError(f"P is not a numeric array: {exc}") from None
        S, A = _sas_shape(P_sas, R)
    R_mean = _mean_rewards(R, P_sas, layout, S, A, horizon)
    rmap = _reward_map(R_mean, reward_range)
    R_unit = R_mean if rmap.identity else rmap.to_unit(R_mean)
    if not rmap.identity:
        # Rounding of (r - offset) / scale can leave the extremes a hair outside [0, 1]; only
        # values the map sends there by round-off (1e-12 relative) are moved onto the bound.
        R_unit = np.where((R_unit < 0) & (R_unit > -1e-12), 0.0, R_unit)
        R_unit = np.where((R_unit > 1) & (R_unit < 1 + 1e-12), 1.0, R_unit)
    return P_sas, R_unit, rmap
