"""Token trees with an end-of-sequence token: responses of every length 1..L, so that a loss's
length normalisation (1/|o_i| per response, a constant 1/L_max, the token mean over a batch) is
exercised -- on :class:`theorylab.mdps.token_tree.TokenTreeTask` every response has L tokens and
the three coincide.

Symbols 0..V-1; symbol 0 is EOS. A response is a sequence of non-EOS symbols ended by EOS, or
the L-token sequence of non-EOS symbols (truncated at the maximum length, as a generator with
``max_new_tokens = L`` does). The EOS token is part of the response (its log-probability is in
the sequence's, and it counts in |o|, as in TRL/verl's completion masks).

The prefix tree: the internal nodes are the EOS-free prefixes of length 0..L-1 (N =
sum_{t<L} (V-1)^t, ordered breadth first, node 0 the root); at every node the policy picks one of
the V symbols. Responses (Y = N + (V-1)^L): for every node, the node's prefix followed by EOS,
then the EOS-free sequences of length L. Arrays are padded to L: ``tokens`` (Y, L) (padding 0),
``token_nodes`` (Y, L) (padding: the root), ``token_mask`` (Y, L) with ones on the real tokens.

The reward and reference are as in :class:`TokenTreeTask`: ``reward_values`` / ``reward_probs``
(P, Y, K), ``correct`` (P, Y), ``ref_cond`` (P, N, V).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from theorylab.mdps.token_tree import SoftOptimum, TreeTask


@dataclass
class EosTokenTree(TreeTask):
    """Prompts x variable-length responses (module docstring); the fields and the exact metrics
    are :class:`~theorylab.mdps.token_tree.TreeTask`'s."""

    name: str = "tokentree-eos"

    def __post_init__(self) -> None:
        if self.V < 2 or self.L < 1:
            raise ValueError(f"need V >= 2 and L >= 1, got V={self.V}, L={self.L}")
        prefixes, responses = eos_tree_structure(self.V, self.L)
        self._prefixes = prefixes
        index = {p: i for i, p in enumerate(prefixes)}
        Y, L = len(responses), self.L
        self._tokens = np.zeros((Y, L), dtype=np.int64)
        self._nodes = np.zeros((Y, L), dtype=np.int64)
        self._mask = np.zeros((Y, L))
        for y, seq in enumerate(responses):
            for t, a in enumerate(seq):
                self._tokens[y, t] = a
                self._nodes[y, t] = index[seq[:t]]
                self._mask[y, t] = 1.0
        P = self.reward_values.shape[0]
        for name, arr, shape in (
            ("reward_values", self.reward_values, (P, Y, self.reward_values.shape[-1])),
            ("reward_probs", self.reward_probs, self.reward_values.shape),
            ("correct", self.correct, (P, Y)),
            ("ref_cond", self.ref_cond, (P, len(prefixes), self.V)),
        ):
            if arr.shape != shape:
                raise ValueError(f"{name} has shape {arr.shape}, expected {shape}")
        self._check_distributions()

    @property
    def eos_token(self) -> int:
        """Symbol 0 ends a response (and pads the token arrays)."""
        return 0

    @property
    def n_nodes(self) -> int:
        return len(self._prefixes)

    @property
    def n_responses(self) -> int:
        return int(self._tokens.shape[0])

    @property
    def token_mask(self) -> np.ndarray:
        """(Y, L) 1 on a response's tokens (EOS included), 0 on padding."""
        return self._mask

    @property
    def lengths(self) -> np.ndarray:
        """(Y,) |o| of every response (EOS included)."""
        return self._mask.sum(axis=1).astype(np.int64)

    def sequence_logprobs(self, cond_logp: np.ndarray) -> np.ndarray:
        """(P, N, V) conditional log-probabilities -> (P, Y) sequence log-probabilities."""
        cond_logp = np.asarray(cond_logp, dtype=np.float64)
        return (cond_logp[:, self._nodes, self._tokens] * self._mask).sum(axis=-1)

    def soft_optimum(self, beta: float) -> SoftOptimum:
        """pi*_beta by soft value iteration over the tree (:meth:`TreeTask.soft_q`)."""
        return self.soft_q(beta)[1]


def eos_tree_structure(V: int, L: int) -> tuple[list[tuple[int, ...]], list[tuple[int, ...]]]:
    """(the EOS-free prefixes of length 0..L-1 breadth first, every response) for V symbols with
    EOS = 0 and at most L tokens (module docstring)."""
    prefixes: list[tuple[int, ...]] = [()]
    level: list[tuple[int, ...]] = [()]
    for _ in range(L - 1):
        level = [p + (a,) for p in level for a in range(1, V)]
        prefixes += level
    full = [()]
    for _ in range(L):
        full = [p + (a,) for p in full for a in range(1, V)]
    return prefixes, [p + (0,) for p in prefixes] + full
