"""Hypothesis strategies for random *valid* tabular MDPs and policies (shared by every test file).

Import them as ``from strategies import mdps, policies, ...`` (tests/conftest.py puts tests/ on
sys.path).

What the generated models contain, on purpose:

* small sizes (default S in 1..4, A in 1..3, H in 1..4) so exact oracles (brute force over all
  deterministic policies, dense reference recursions) stay cheap;
* transition rows of three kinds: deterministic (one-hot, all other entries exactly 0), integer
  weights 0..4 normalised (exact zeros and many exact ties), and float weights in [0, 1] with zeros;
* rewards at the edges 0 and 1 as well as integer eighths and arbitrary floats in [0, 1];
* initial distributions that are a point mass, have zeros, or have full support;
* the same model in every storage form: dense ``(S, A, S)``, stage-dependent ``(H, S, A, S)``,
  sparse CSR ``(S*A, S)`` / ``(H*S*A, S)``, optionally with explicitly stored zeros in the CSR
  structure (valid input that samplers and solvers must tolerate).

Every probability row is built by exact normalisation of non-negative weights, so it sums to 1
within a few ulp (far inside TabularMDP's 1e-9 check).
"""

from __future__ import annotations

from typing import Literal

import numpy as np
import scipy.sparse as sp
from hypothesis import strategies as st

from theorylab.mdps import TabularMDP

Form = Literal["dense", "sparse", "sparse_explicit_zeros"]
FORMS: tuple[Form, ...] = ("dense", "sparse", "sparse_explicit_zeros")

#: discounts used by discounted strategies (0 = one-step, 0.99 = long effective horizon)
GAMMAS = (0.0, 0.5, 0.9, 0.99)


# ------------------------------------------------------------------------------- building blocks
@st.composite
def probability_vectors(draw, n: int, *, min_support: int = 1) -> np.ndarray:
    """A probability vector ``(n,)``: one-hot, normalised integer weights, or float weights.

    All kinds contain exact zeros (when ``n > 1``). ``min_support``: least number of positive
    entries (use ``n`` for a full-support distribution).
    """
    kind = draw(st.sampled_from(["deterministic", "integer", "float"]))
    if kind == "deterministic" and min_support <= 1:
        p = np.zeros(n)
        p[draw(st.integers(0, n - 1))] = 1.0
        return p
    lo_int, lo_float = (1, 0.05) if min_support >= n else (0, 0.0)
    if kind == "integer":
        w = np.array(draw(st.lists(st.integers(lo_int, 4), min_size=n, max_size=n)), float)
    else:
        w = np.array(
            draw(
                st.lists(
                    st.floats(lo_float, 1.0, allow_nan=False, allow_subnormal=False),
                    min_size=n,
                    max_size=n,
                )
            )
        )
        w[w < 1e-3] = 0.0  # no denormal-ish probabilities: zeros are exact zeros
    if np.count_nonzero(w) < min_support:
        w[:min_support] = np.maximum(w[:min_support], 1.0)
    if w.sum() == 0:
        w[draw(st.integers(0, n - 1))] = 1.0
    return w / w.sum()


def reward_values() -> st.SearchStrategy[float]:
    """A mean reward in [0, 1]: the edges 0 and 1 often, integer eighths, arbitrary floats."""
    return st.one_of(
        st.sampled_from([0.0, 1.0]),
        st.integers(0, 8).map(lambda k: k / 8),
        st.floats(0.0, 1.0, allow_nan=False, allow_subnormal=False),
    )


@st.composite
def reward_arrays(draw, shape: tuple[int, ...]) -> np.ndarray:
    """Mean rewards of the given shape, entries from :func:`reward_values`."""
    n = int(np.prod(shape))
    return np.array(draw(st.lists(reward_values(), min_size=n, max_size=n))).reshape(shape)


@st.composite
def transition_arrays(draw, S: int, A: int, n_stages: int = 1) -> np.ndarray:
    """Dense transitions ``(S, A, S)`` (n_stages = 1) or ``(n_stages, S, A, S)``."""
    rows = [draw(probability_vectors(S)) for _ in range(n_stages * S * A)]
    P = np.array(rows).reshape(n_stages, S, A, S)
    return P[0] if n_stages == 1 else P


# ------------------------------------------------------------------------------- storage forms
def csr_with_explicit_zeros(P_flat: np.ndarray) -> sp.csr_array:
    """CSR of a dense ``(n, S)`` matrix that *stores* every entry of each row, zeros included.

    scipy keeps explicit zeros when built from (data, indices, indptr); TabularMDP accepts them
    (they are non-negative), so every consumer of a sparse model must cope with them.
    """
    n, S = P_flat.shape
    return sp.csr_array(
        (P_flat.ravel(), np.tile(np.arange(S), n), np.arange(0, n * S + 1, S)), shape=(n, S)
    )


def in_form(mdp: TabularMDP, form: Form) -> TabularMDP:
    """The same MDP with its transitions stored as ``form`` (dense, CSR, CSR with stored zeros)."""
    if form == "dense":
        return mdp.to_dense()
    if form == "sparse":
        return mdp.to_sparse()
    if form == "sparse_explicit_zeros":
        dense = mdp.to_dense()
        flat = np.concatenate([dense.P_flat(h) for h in range(dense.n_stages)], axis=0)
        return dense._replace(P=csr_with_explicit_zeros(flat))
    raise ValueError(f"unknown form {form!r}; choose from {FORMS}")


def all_forms(mdp: TabularMDP) -> dict[str, TabularMDP]:
    """``{form: the same MDP stored that way}`` for every form in :data:`FORMS`."""
    return {f: in_form(mdp, f) for f in FORMS}


# ------------------------------------------------------------------------------- MDPs
@st.composite
def mdps(
    draw,
    *,
    S: tuple[int, int] = (1, 4),
    A: tuple[int, int] = (1, 3),
    H: tuple[int, int] = (1, 4),
    objective: Literal["finite", "discounted", "both"] = "finite",
    gamma: float | st.SearchStrategy[float] | None = None,
    stage_dependent: bool | None = False,
    reward_stage_dependent: bool | None = None,
    form: Form | None = "dense",
    mu0_full_support: bool | None = None,
    reward_model: Literal["deterministic", "bernoulli"] = "deterministic",
) -> TabularMDP:
    """A random valid :class:`TabularMDP`.

    S, A, H: inclusive ranges of the sizes. objective: ``"finite"`` (horizon H), ``"discounted"``
    (gamma only), ``"both"``. gamma: a value or strategy (default: one of :data:`GAMMAS`).
    stage_dependent / reward_stage_dependent: True, False or None (= either; the reward default
    follows ``stage_dependent``); both are forced False for a purely discounted MDP.
    form: storage of P (one of :data:`FORMS`, or None = any). mu0_full_support: True, False, None.
    """
    nS = draw(st.integers(*S))
    nA = draw(st.integers(*A))
    finite = objective in ("finite", "both")
    nH = draw(st.integers(*H)) if finite else None
    g = None
    if objective in ("discounted", "both"):
        g = draw(gamma) if isinstance(gamma, st.SearchStrategy) else gamma
        if g is None:
            g = draw(st.sampled_from(GAMMAS))
    sd = draw(st.booleans()) if stage_dependent is None else stage_dependent
    sd = bool(sd and finite)
    rsd = reward_stage_dependent
    if rsd is None:
        rsd = draw(st.booleans()) if sd else False
    rsd = bool(rsd and finite)
    P = draw(transition_arrays(nS, nA, nH if sd else 1))
    R = draw(reward_arrays((nH, nS, nA) if rsd else (nS, nA)))
    full = draw(st.booleans()) if mu0_full_support is None else mu0_full_support
    mu0 = draw(probability_vectors(nS, min_support=nS if full else 1))
    mdp = TabularMDP(P, R, mu0, horizon=nH, gamma=g, reward_model=reward_model, name="hypothesis")
    f = draw(st.sampled_from(FORMS)) if form is None else form
    return in_form(mdp, f)


def finite_horizon_mdps(**kwargs) -> st.SearchStrategy[TabularMDP]:
    """:func:`mdps` with a finite horizon (``objective="finite"``)."""
    return mdps(objective="finite", **kwargs)


def discounted_mdps(**kwargs) -> st.SearchStrategy[TabularMDP]:
    """:func:`mdps` with a discount only (stationary P and R, no horizon)."""
    return mdps(objective="discounted", **kwargs)


# ------------------------------------------------------------------------------- policies
@st.composite
def deterministic_policies(
    draw, S: int, A: int, H: int | None = None, batch: int | None = None
) -> np.ndarray:
    """Deterministic policy ints: ``([B,] H, S)``, or stationary ``([B,] S)`` when H is None."""
    shape = ((batch,) if batch else ()) + ((H,) if H is not None else ()) + (S,)
    n = int(np.prod(shape))
    actions = draw(st.lists(st.integers(0, A - 1), min_size=n, max_size=n))
    return np.array(actions, np.int64).reshape(shape)


@st.composite
def stochastic_policies(
    draw, S: int, A: int, H: int | None = None, batch: int | None = None
) -> np.ndarray:
    """Stochastic policies ``([B,] H, S, A)`` (stationary ``([B,] S, A)`` when H is None); rows
    mix deterministic, integer-weight and float-weight distributions (with zeros)."""
    lead = ((batch,) if batch else ()) + ((H,) if H is not None else ()) + (S,)
    n = int(np.prod(lead))
    rows = [draw(probability_vectors(A)) for _ in range(n)]
    return np.array(rows).reshape(*lead, A)


def policies(
    S: int, A: int, H: int | None = None, batch: int | None = None
) -> st.SearchStrategy[np.ndarray]:
    """Either a deterministic or a stochastic policy of the given sizes."""
    return st.one_of(deterministic_policies(S, A, H, batch), stochastic_policies(S, A, H, batch))
