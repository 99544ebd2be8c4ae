"""Token-tree task families (see :mod:`theorylab.mdps.token_tree`).

``tokentree`` -- a verifiable arithmetic task constructed here (no paper): prompt x carries a
target sum s_x drawn uniformly (seeded) from 0..L(V-1); a response of L tokens in 0..V-1 is
correct when its tokens sum to s_x. ``reward="binary"``: r = 1{sum y = s_x} (the 0/1 verifier of
R1-style training); ``reward="graded"``: r = 1 - |sum y - s_x| / (L (V-1)). The reference policy
is uniform (``ref="uniform"``) or a seeded random table (``ref="random"``: softmax of standard
normal logits at every node).

``tokentree-risky`` -- a risky/safe split for the CVaR twin, constructed here: responses whose
first token is 0 are SAFE (reward ``safe_reward`` surely); the others are RISKY (reward 1 with
probability 1 - p_bad, else 0). Defaults (0.4, p_bad = 0.3): the risk-neutral optimum is RISKY
(mean 0.7 > 0.4); for alpha < p_bad the CVaR_alpha optimum is SAFE (CVaR 0.4 > 0 at alpha = 0.25).

``tokentree-eos`` -- the arithmetic task of ``tokentree`` with an end-of-sequence token
(:mod:`theorylab.mdps.eos_tree`): symbol 0 is EOS, the others are the digits 1..V-1; a response of
1..L tokens is correct when its digits sum to the target s_x (drawn from 1..L(V-1)); graded
reward 1 - |sum - s_x| / (L (V-1)). Its responses have every length 1..L (constructed here, to
exercise the losses' length normalisations).

``tokentree-bins`` -- a categorical policy over B bins (one prompt, one token: L = 1), the
didactic bandit of Tajwar et al. (2024; seed row 002-004#E12) as reconstructed here: the reference
policy is softmax of the logits ``-(y - mode)^2 / (2 width^2)`` (a discretised Gaussian centred
on bin ``mode``), the reward ``r(y) = exp(-(y - peak)^2 / (2 reward_width^2))`` peaks on bin
``peak``, far from the reference's mode by default; the peak bin is the correct response.
"""

from __future__ import annotations

import numpy as np

from theorylab.mdps.eos_tree import EosTokenTree, eos_tree_structure
from theorylab.mdps.registry import register
from theorylab.mdps.token_tree import TokenTreeTask


def _reference(N: int, V: int, P: int, ref: str, rng: np.random.Generator) -> np.ndarray:
    """(P, N, V) reference conditionals at N nodes: uniform, or softmax of normal logits."""
    if ref == "uniform":
        return np.full((P, N, V), 1.0 / V)
    if ref == "random":
        logits = rng.standard_normal((P, N, V))
        e = np.exp(logits - logits.max(axis=-1, keepdims=True))
        return e / e.sum(axis=-1, keepdims=True)
    raise ValueError(f"ref must be 'uniform' or 'random', got {ref!r}")


def _sum_rewards(sums: np.ndarray, targets: np.ndarray, reward: str, span: int):
    """(correct (P, Y), reward (P, Y)) of responses whose digits sum to ``sums`` (Y,) for the
    prompts' ``targets`` (P,): binary 1{sum = target} or graded 1 - |sum - target| / span."""
    correct = sums[None, :] == targets[:, None]
    if reward == "binary":
        return correct, correct.astype(np.float64)
    if reward == "graded":
        return correct, 1.0 - np.abs(sums[None, :] - targets[:, None]) / span
    raise ValueError(f"reward must be 'binary' or 'graded', got {reward!r}")


@register("tokentree")
def tokentree(
    V: int = 4,
    L: int = 3,
    prompts: int = 4,
    reward: str = "binary",
    ref: str = "uniform",
    seed: int = 0,
) -> TokenTreeTask:
    """Prompts x L-token responses over V symbols; correct iff the tokens sum to the target
    (reward binary or graded), or, with reward=random, i.i.d. U(0, 1) rewards and the best
    response correct."""
    if V < 2 or L < 1 or prompts < 1:
        raise ValueError(f"need V >= 2, L >= 1, prompts >= 1; got V={V}, L={L}, prompts={prompts}")
    if V**L * prompts > 5_000_000:
        raise ValueError(f"V^L * prompts = {V**L * prompts} responses is too many to solve exactly")
    rng = np.random.default_rng(seed)
    targets = rng.integers(0, L * (V - 1) + 1, size=prompts)
    t = np.arange(L)
    sums = ((np.arange(V**L)[:, None] // V ** (L - 1 - t)[None, :]) % V).sum(axis=1)  # (Y,)
    if reward == "random":  # i.i.d. U(0, 1) per (prompt, response): a unique best response
        r = rng.uniform(size=(prompts, V**L))
        correct = r >= r.max(axis=1, keepdims=True)
    elif reward in ("binary", "graded"):
        correct, r = _sum_rewards(sums, targets, reward, L * (V - 1))
    else:
        raise ValueError(f"reward must be 'binary', 'graded' or 'random', got {reward!r}")
    return TokenTreeTask(
        V,
        L,
        r[..., None],
        np.ones_like(r)[..., None],
        correct,
        _reference((V**L - 1) // (V - 1), V, prompts, ref, rng),
        name=f"tokentree:V={V},L={L},prompts={prompts},reward={reward},ref={ref},seed={seed}",
        info={"targets": targets},
    )


@register("tokentree-risky")
def tokentree_risky(
    V: int = 2,
    L: int = 2,
    prompts: int = 1,
    safe_reward: float = 0.4,
    p_bad: float = 0.3,
    ref: str = "uniform",
    seed: int = 0,
) -> TokenTreeTask:
    """SAFE responses (first token 0) pay safe_reward; RISKY ones pay 1 w.p. 1 - p_bad, else 0."""
    if not 0 < p_bad < 1:
        raise ValueError(f"p_bad must be in (0, 1), got {p_bad}")
    Y = V**L
    safe = np.arange(Y) < V ** (L - 1)  # first token 0
    values = np.where(safe[:, None], safe_reward, np.array([1.0, 0.0])[None, :])  # (Y, 2)
    probs = np.where(safe[:, None], np.array([1.0, 0.0]), np.array([1 - p_bad, p_bad]))
    mean = (values * probs).sum(axis=1)
    correct = mean >= mean.max() - 1e-12
    rng = np.random.default_rng(seed)
    return TokenTreeTask(
        V,
        L,
        np.broadcast_to(values, (prompts, Y, 2)).copy(),
        np.broadcast_to(probs, (prompts, Y, 2)).copy(),
        np.broadcast_to(correct, (prompts, Y)).copy(),
        _reference((V**L - 1) // (V - 1), V, prompts, ref, rng),
        name=f"tokentree-risky:V={V},L={L},prompts={prompts},safe_reward={safe_reward},"
        f"p_bad={p_bad},ref={ref},seed={seed}",
        info={"safe": safe},
    )


@register("tokentree-eos")
def tokentree_eos(
    V: int = 3,
    L: int = 3,
    prompts: int = 2,
    reward: str = "graded",
    ref: str = "random",
    seed: int = 0,
) -> EosTokenTree:
    """Responses of 1..L tokens ended by EOS (symbol 0); correct iff the digits sum to target."""
    if V < 2 or L < 1 or prompts < 1:
        raise ValueError(f"need V >= 2, L >= 1, prompts >= 1; got V={V}, L={L}, prompts={prompts}")
    prefixes, responses = eos_tree_structure(V, L)
    if len(responses) * prompts > 1_000_000:
        raise ValueError(f"{len(responses) * prompts} responses is too many to solve exactly")
    rng = np.random.default_rng(seed)
    targets = rng.integers(1, L * (V - 1) + 1, size=prompts)
    sums = np.array([sum(seq) for seq in responses])  # EOS is 0: the sum of the digits
    correct, r = _sum_rewards(sums, targets, reward, L * (V - 1))
    ref_cond = _reference(len(prefixes), V, prompts, ref, rng)
    return EosTokenTree(
        V,
        L,
        r[..., None],
        np.ones_like(r)[..., None],
        correct,
        ref_cond,
        name=f"tokentree-eos:V={V},L={L},prompts={prompts},reward={reward},ref={ref},seed={seed}",
        info={"targets": targets},
    )


@register("tokentree-bins")
def tokentree_bins(
    B: int = 20,
    mode: int = 3,
    peak: int = 15,
    width: float = 3.0,
    reward_width: float = 1.5,
) -> TokenTreeTask:
    """A categorical policy over B bins: reference peaked on ``mode``, reward peaked on ``peak``."""
    if B < 2:
        raise ValueError(f"need B >= 2 bins, got B={B}")
    for key, val in (("mode", mode), ("peak", peak)):
        if not 0 <= val < B:
            raise ValueError(f"{key} must be a bin in 0..{B - 1}, got {key}={val}")
    for key, val in (("width", width), ("reward_width", reward_width)):
        if not val > 0:
            raise ValueError(f"{key} must be > 0, got {key}={val}")
    y = np.arange(B)
    logits = -((y - mode) ** 2) / (2.0 * width**2)  # (B,)
    ref = np.exp(logits - logits.max())
    r = np.exp(-((y - peak) ** 2) / (2.0 * reward_width**2))  # (B,)
    return TokenTreeTask(
        B,
        1,
        r[None, :, None],
        np.ones((1, B, 1)),
        (y == peak)[None, :],
        (ref / ref.sum())[None, None, :],
        name=f"tokentree-bins:B={B},mode={mode},peak={peak},width={width:g},"
        f"reward_width={reward_width:g}",
        info={"mode": mode, "peak": peak},
    )
