"""Chains: the TabulaRL chain and the AJKS combination lock (theory.md section 9.2).

``chain`` follows Osband's ``iosband/TabulaRL``, ``src/environment.py``:
``make_deterministicChain(nState, epLen)`` is ``chain:S=nState,H=epLen`` and
``make_stochasticChain(L)`` is ``chain:S=L,H=L,fail=1/L``.

* S states in a line, A = 2 actions: 0 = left, 1 = right; start state 0.
* left:  s -> max(0, s - 1) with probability 1.
* right: s -> min(S - 1, s + 1) with probability 1 - fail, s -> max(0, s - 1) with probability
  ``fail`` (the two masses add up when they land on the same state, as in TabulaRL's ``+=``).
* mean rewards: r(S - 1, right) = 1, all others 0.
* Deviation: TabulaRL draws rewards N(mean, 1) (it gives (0, left) mean 0 with sd 1); rewards here
  follow ``reward_model`` (the mean itself, or a Bernoulli draw with that mean), so they stay in
  [0, 1]. Means, values and optimal policies are TabulaRL's.

With ``fail = 0`` and ``H >= S - 1`` the optimal value from state 0 is ``H - (S - 1)``: S - 1 steps
right to reach the end, then reward 1 at each of the remaining steps.

``combination-lock`` follows the combination lock of Agarwal, Jiang, Kakade and Sun, *RL: Theory
and Algorithms* (AJKS), Fig. 0.1: a chain where, at each stage, one action moves on along the path
and every other action leads off it to an absorbing zero-reward state; the only reward is at the
end. Indexing (this module's, chosen so that exactly H correct actions are needed, the property
the figure illustrates):

* S = H + 1 states: path states 0 .. H-1 (state h is where the agent stands at stage h while still
  on the path) and the absorbing "off" state H; start state 0; A actions (default 4).
* the good action at path state h (``code[h]``; AJKS use a_1 = action 0 everywhere, the default)
  moves h -> h + 1 for h < H - 1; every other action moves to state H.
* the only reward: r(H - 1, code[H - 1]) = 1; that action also moves to the off state, which is
  absorbing with zero reward, so the goal pays once.
* Optimal value 1; the uniform random policy opens the lock with probability A^-H, so its value is
  exactly A^-H.
* ``code_seed >= 0`` draws the combination ``code[h]`` uniformly from {0..A-1} with
  ``numpy.random.default_rng(code_seed)`` (a "lock" whose combination the learner must discover);
  ``code_seed = -1`` (default) is AJKS's action 0 everywhere.

Both families take ``gamma`` (0 means none: finite horizon only), ``reward_model``
("deterministic" or "bernoulli") and ``sparse`` (CSR transitions). This module also holds the
small parameter checks the other families in this folder share (:func:`require_int`,
:func:`require_probability`, :func:`family_mdp`).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from theorylab.errors import InvalidMDPError
from theorylab.mdps.registry import register
from theorylab.mdps.sizes import check_dense_size
from theorylab.mdps.tabular import TabularMDP

LEFT, RIGHT = 0, 1


# ---------------------------------------------------------------- shared by the families here
def require_int(family: str, name: str, value, minimum: int) -> int:
    """``value`` as an int, or :class:`InvalidMDPError` naming the parameter and the value."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise InvalidMDPError(
            f"{family}: parameter {name} must be an integer >= {minimum}, got {name}={value!r}"
        )
    return int(value)


def require_probability(family: str, name: str, value) -> float:
    """``value`` as a float in [0, 1], or :class:`InvalidMDPError` naming the parameter."""
    try:
        p = float(value)
    except (TypeError, ValueError):
        raise InvalidMDPError(
            f"{family}: parameter {name} must be a probability in [0, 1], got {name}={value!r}"
        ) from None
    if not (0.0 <= p <= 1.0):  # also rejects NaN
        raise InvalidMDPError(
            f"{family}: parameter {name} must be a probability in [0, 1], got {name}={value!r}"
        )
    return p


def require_discount(family: str, gamma) -> float:
    """``gamma`` as a float in (0, 1) (a discount that must discount), or
    :class:`InvalidMDPError` naming it."""
    try:
        g = float(gamma)
    except (TypeError, ValueError):
        g = float("nan")
    if not 0.0 < g < 1.0:  # also rejects NaN
        raise InvalidMDPError(f"{family}: gamma must lie in (0, 1), got gamma={gamma!r}")
    return g


def options_suffix(gamma: float, reward_model: str, sparse: bool) -> str:
    """The non-default common options, in canonical spec form (``",gamma=0.9,sparse=true"``)."""
    out = ""
    if gamma != 0.0:
        out += f",gamma={float(gamma)!r}"
    if reward_model != "deterministic":
        out += f",reward_model={reward_model}"
    if sparse:
        out += ",sparse=true"
    return out


def family_mdp(
    family: str,
    P: np.ndarray,
    R: np.ndarray,
    *,
    H: int,
    gamma: float,
    reward_model: str,
    sparse: bool,
    name: str,
    mu0: np.ndarray | None = None,
    state_names: list[str] | None = None,
) -> TabularMDP:
    """Validate the common options and build the (dense or CSR) :class:`TabularMDP`.

    P: ``(S, A, S)``; R: ``(S, A)``; mu0: ``(S,)`` (state 0 when None).
    ``gamma = 0`` means no discount (finite horizon only), as in ``riverswim``.
    """
    try:
        g = float(gamma)
    except (TypeError, ValueError):
        g = float("nan")
    if not (0.0 <= g < 1.0):
        raise InvalidMDPError(
            f"{family}: parameter gamma must lie in [0, 1) (0 = no discount), got gamma={gamma!r}"
        )
    if reward_model not in ("deterministic", "bernoulli"):
        raise InvalidMDPError(
            f"{family}: parameter reward_model must be 'deterministic' or 'bernoulli', "
            f"got reward_model={reward_model!r}"
        )
    S, A = R.shape
    P_arg = sp.csr_array(P.reshape(S * A, S)) if sparse else P
    return TabularMDP(
        P_arg,
        R,
        mu0,
        horizon=H,
        gamma=g if g > 0 else None,
        reward_model=reward_model,
        name=name + options_suffix(g, reward_model, sparse),
        state_names=state_names,
    )


# ---------------------------------------------------------------- chain (TabulaRL)
@register("chain")
def chain(
    S: int = 10,
    H: int = 10,
    fail: float = 0.0,
    gamma: float = 0.0,
    reward_model: str = "deterministic",
    sparse: bool = False,
) -> TabularMDP:
    """TabulaRL chain: walk right S - 1 times for reward 1 at the far end; right fails w.p. fail.

    ``chain:S=L,H=L,fail=1/L`` is ``make_stochasticChain(L)``; ``fail=0`` is
    ``make_deterministicChain``.
    """
    S = require_int("chain", "S", S, 2)
    H = require_int("chain", "H", H, 1)
    fail = require_probability("chain", "fail", fail)
    check_dense_size("chain", f"S={S}", S, 2)
    P = np.zeros((S, 2, S))  # (S, A, S)
    R = np.zeros((S, 2))  # (S, A)
    for s in range(S):
        P[s, LEFT, max(0, s - 1)] = 1.0
        P[s, RIGHT, min(S - 1, s + 1)] += 1.0 - fail
        P[s, RIGHT, max(0, s - 1)] += fail
    R[S - 1, RIGHT] = 1.0
    return family_mdp(
        "chain",
        P,
        R,
        H=H,
        gamma=gamma,
        reward_model=reward_model,
        sparse=sparse,
        name=f"chain:S={S},H={H},fail={fail!r}",
    )


# ---------------------------------------------------------------- combination lock (AJKS)
def combination_code(H: int, A: int, code_seed: int) -> np.ndarray:
    """The good action at each path state, ``(H,)`` int: zeros when ``code_seed = -1``."""
    if code_seed == -1:
        return np.zeros(H, dtype=np.int64)
    return np.random.default_rng(code_seed).integers(0, A, size=H)


@register("combination-lock")
def combination_lock(
    H: int = 10,
    A: int = 4,
    code_seed: int = -1,
    gamma: float = 0.0,
    reward_model: str = "deterministic",
    sparse: bool = False,
) -> TabularMDP:
    """AJKS combination lock: H right moves in a row open it; any mistake is absorbing.

    The uniform random policy's value is exactly A^-H; the optimal value is 1.
    """
    H = require_int("combination-lock", "H", H, 1)
    A = require_int("combination-lock", "A", A, 2)
    if (
        isinstance(code_seed, bool)
        or not isinstance(code_seed, (int, np.integer))
        or (code_seed < -1)
    ):
        raise InvalidMDPError(
            "combination-lock: parameter code_seed must be -1 (action 0 everywhere) or a seed "
            f">= 0, got code_seed={code_seed!r}"
        )
    code = combination_code(H, A, int(code_seed))
    S = H + 1
    check_dense_size("combination-lock", f"H={H},A={A}", S, A)
    off = H
    P = np.zeros((S, A, S))  # (S, A, S)
    R = np.zeros((S, A))  # (S, A)
    P[:, :, off] = 1.0  # every wrong action (and everything at the off state) leads off the path
    for h in range(H - 1):
        P[h, code[h], off] = 0.0
        P[h, code[h], h + 1] = 1.0
    R[H - 1, code[H - 1]] = 1.0  # the goal's good action pays 1 and then leaves for the off state
    names = [f"path{h}" for h in range(H)] + ["off"]
    return family_mdp(
        "combination-lock",
        P,
        R,
        H=H,
        gamma=gamma,
        reward_model=reward_model,
        sparse=sparse,
        name=f"combination-lock:H={H},A={A},code_seed={int(code_seed)}",
        state_names=names,
    )
