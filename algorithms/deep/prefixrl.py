"""PrefixRL (Setlur et al. 2026, "Reuse your FLOPs: Scaling RL on Hard Problems by Conditioning
on Very Off-Policy Prefixes", arXiv 2601.18795): on-policy RL started from prefixes of a
successful off-policy trace, exact on a token tree with EOS. Seed row 002-004#G4
(``seed-catalogue-002-004.md#G4``).

What was read. [V] only the abstract (the arXiv listing and the catalogue row): "we condition
on the prefix of successful off-policy traces and run on-policy RL to complete them"; the prefix
length modulates the difficulty; "the PrefixRL objective is not only consistent with the
standard RL objective but also more sample efficient". The paper's text, theorems and code were
not read.

What was reconstructed [A]. A prompt's problem is a tree whose correct responses are rare; the
off-policy trace y* is one correct response (here the longest, so that every prefix length
0..|y*|-1 exists); the problem with prefix length l starts the policy at the node h_l after the
first l tokens of y*. Its success probability under per-node conditionals pi is

    s_l(pi) = sum_{y correct, y through h_l} prod_{t >= l} pi(y_t | y_<t),

the prefix's own tokens forced, not sampled (``prefix_success``). The PrefixRL objective is
J_w(pi) = sum_l w_l s_l(pi) for a distribution w over prefix lengths (w_0 the unprefixed
problem). [M] Two exact statements: (i) consistency: the root-optimal greedy policy (argmax of
Q*, Q* by enumeration) attains s_l = 1 for every l, so it maximises J_w for every w, and a
maximiser of J_w with w_0 > 0 is root-optimal (s_0 = 1); (ii) signal: with groups of G
rollouts and a group-centred 0/1 advantage (GRPO, RLOO), the gradient is non-zero exactly when
a group mixes successes and failures, so the expected number of rollouts until the first
non-zero gradient from prefix l is G / (1 - s_l^G - (1 - s_l)^G) (``rollouts_to_signal``),
falling with l.

Deviations: exact gradients of J_w on a per-node logit table (``train``), not sampled PPO on an
LLM; no "back-generalisation" through shared parameters (a per-node table shares none).

Arrays: ``cond`` (P, N, V) per-node conditionals of the tree; ``trace`` (P,) a correct response
per prompt; ``weights`` (Lt,) over prefix lengths 0..Lt-1, Lt = min over prompts of |y*|.
"""

from __future__ import annotations

import numpy as np


def longest_correct(task) -> np.ndarray:
    """(P,) the longest correct response of each prompt (the off-policy trace y*)."""
    lengths = task.token_mask.sum(axis=1)  # (Y,)
    score = np.where(task.correct, lengths[None, :], -1)  # (P, Y)
    if (score.max(axis=1) < 0).any():
        raise ValueError("every prompt needs a correct response to take a trace from")
    return score.argmax(axis=1)


def _through(task, trace: np.ndarray, ell: int) -> np.ndarray:
    """(P, Y) bool: response y is correct and passes through the node after ell tokens of y*."""
    lengths = task.token_mask.sum(axis=1).astype(np.int64)  # (Y,)
    if not 0 <= ell < int(lengths[trace].min()):
        n = int(lengths[trace].min())
        raise ValueError(f"prefix length must be in [0, {n - 1}] (the shortest trace has {n} "
                         f"tokens), got {ell!r}")  # fmt: skip
    node = task.token_nodes[trace, ell]  # (P,)
    same = (task.token_nodes[None, :, ell] == node[:, None]) & (lengths[None, :] > ell)
    return same & task.correct


def prefix_success(task, cond: np.ndarray, trace: np.ndarray, ell: int) -> np.ndarray:
    """(P,) s_l: the probability that on-policy completion from the node after the first ell
    tokens of y* ends on a correct response (the prefix forced)."""
    picked = cond[:, task.token_nodes, task.tokens]  # (P, Y, L)
    after = (np.arange(task.token_mask.shape[1]) >= ell)[None, :] & (task.token_mask > 0)
    tail = np.where(after[None], picked, 1.0).prod(axis=-1)  # (P, Y)
    return (tail * _through(task, trace, ell)).sum(axis=1)


def rollouts_to_signal(s, group: int) -> np.ndarray:
    """Expected rollouts until the first group of ``group`` with a non-zero group-centred
    gradient (a mix of successes and failures): group / (1 - s^G - (1 - s)^G); inf if none."""
    if group < 2:
        raise ValueError(f"group (rollouts per group) must be >= 2, got {group!r}")
    s = np.asarray(s, dtype=float)
    mixed = 1.0 - s**group - (1.0 - s) ** group
    with np.errstate(divide="ignore"):
        return np.where(mixed > 0, group / np.where(mixed > 0, mixed, 1.0), np.inf)


def sampled_rollouts_to_signal(task, cond, trace, ell, group, runs, rng) -> np.ndarray:
    """(P, runs) Monte Carlo of rollouts_to_signal: groups of completions sampled token by token
    down the tree from the node after ell tokens of y*, until one group mixes outcomes."""
    out = np.zeros((task.n_prompts, runs))
    lengths = task.token_mask.sum(axis=1).astype(np.int64)
    for x in range(task.n_prompts):
        # the response y is determined by its tokens: index them by their token tuples
        by_tokens = {tuple(task.tokens[y, : lengths[y]]): y for y in range(task.n_responses)}
        prefix = tuple(task.tokens[trace[x], :ell])
        start = task.token_nodes[trace[x], ell]
        children = {}  # node -> {token: child node}
        for y in range(task.n_responses):
            for t in range(lengths[y] - 1):
                children.setdefault(task.token_nodes[y, t], {})[task.tokens[y, t]] = (
                    task.token_nodes[y, t + 1]
                )
        for r in range(runs):
            n = 0
            while True:
                wins = 0
                for _ in range(group):
                    node, toks = start, list(prefix)
                    while True:
                        a = int(rng.choice(task.V, p=cond[x, node]))
                        toks.append(a)
                        if tuple(toks) in by_tokens and a not in children.get(node, {}):
                            break
                        node = children[node][a]
                    wins += int(task.correct[x, by_tokens[tuple(toks)]])
                n += group
                if 0 < wins < group:
                    break
            out[x, r] = n
    return out


def train(task, trace, weights, steps: int, lr: float) -> list[np.ndarray]:
    """[(P, N, V)] per-node conditionals after 0..steps exact gradient-ascent steps on
    J_w = sum_l w_l s_l (torch autograd; logits from the reference, per-prompt step lr)."""
    import torch

    weights = np.asarray(weights, dtype=float)
    if weights.ndim != 1 or (weights < 0).any() or not weights.sum() > 0:
        raise ValueError(f"weights must be a non-negative (Lt,) vector, not all 0, got {weights}")
    theta = torch.tensor(np.log(task.ref_cond), requires_grad=True)  # (P, N, V)
    nodes = torch.as_tensor(task.token_nodes)
    toks = torch.as_tensor(task.tokens)
    masks = []
    for ell in range(len(weights)):
        after = (np.arange(task.token_mask.shape[1]) >= ell)[None, :] & (task.token_mask > 0)
        masks.append((torch.as_tensor(after), torch.as_tensor(_through(task, trace, ell))))
    out = [task.ref_cond.copy()]
    for _ in range(steps):
        logp = torch.log_softmax(theta, dim=-1)[:, nodes, toks]  # (P, Y, L)
        j = 0.0
        for w, (after, through) in zip(weights, masks, strict=True):
            if w > 0:
                tail = torch.where(after[None], logp, torch.zeros_like(logp)).sum(-1).exp()
                j = j + w * (tail * through).sum()
        (g,) = torch.autograd.grad(j, theta)
        with torch.no_grad():
            theta += lr * g
        out.append(torch.softmax(theta, dim=-1).detach().numpy())
    return out
