"""Token-tree tasks: verifiable-reward language tasks small enough to solve exactly.

A task has P prompts x and responses y = (y_1..y_L) of L tokens over a vocabulary of V symbols
(Y = V^L responses, indexed lexicographically: index(y) = sum_t y_t V^(L-1-t)). A policy is
autoregressive: a table ``cond[x, node, a] = pi(a | x, prefix)`` over the N = (V^L - 1)/(V - 1)
internal nodes of the prefix tree (node of a length-t prefix with index i: (V^t - 1)/(V - 1) + i).
The reward of (x, y) is a finite distribution ``reward_values[x, y, k]`` with probabilities
``reward_probs[x, y, k]`` (one atom for deterministic rewards); ``correct[x, y]`` marks the
responses a verifier accepts.

Exact answers (every quantity a sum over the tree, no sampling):

* the KL-regularised optimum pi*_beta(y|x) = ref(y|x) exp(r(x,y)/beta) / Z(x) (Rafailov et al.
  2023, eq. (4); Liu et al. 2024, Lemma 4.1), by enumeration of the Y responses
  (:meth:`TokenTreeTask.optimum_by_enumeration`) and by soft-Bellman dynamic programming over the
  tree (:meth:`TokenTreeTask.soft_optimum`): W(leaf) = r/beta, W(h) = log sum_a ref(a|h) e^{W(ha)},
  pi*(a|h) = ref(a|h) e^{W(ha) - W(h)}, log Z = W(root); the two agree to 1e-12 (tests);
* KL(pi || pi') per prompt, the expected reward, the accuracy P(correct), pass@k
  = 1 - (1 - P(correct))^k, the KL-regularised value E r - beta KL(pi || ref), and the static
  CVaR_alpha of the reward, for any policy given as a conditional table or as its (P, Y) table of
  sequence log-probabilities.

Every quantity is per prompt (P,); prompts are weighted uniformly where a scalar is needed.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from scipy.special import logsumexp

from theorylab.errors import InvalidPolicyError


@dataclass(frozen=True)
class SoftOptimum:
    """The KL-regularised optimum at temperature beta.

    cond_logp: (P, N, V) log pi*(a | x, node); seq_logp: (P, Y) log pi*(y|x); log_z: (P,).
    The optimal value max_pi E r - beta KL(pi||ref) is beta * log_z (per prompt)."""

    beta: float
    cond_logp: np.ndarray
    seq_logp: np.ndarray
    log_z: np.ndarray


@dataclass
class TreeTask:
    """What every token-tree task shares: P prompts, a prefix tree over V symbols of depth <= L,
    the responses' reward distributions and the reference, and the exact metrics of a policy
    given as its (P, Y) table of sequence log-probabilities. A subclass fixes the tree:
    :class:`TokenTreeTask` (every response L tokens) or
    :class:`~theorylab.mdps.eos_tree.EosTokenTree` (1..L tokens ended by EOS); it provides
    ``n_responses``, ``n_nodes``, ``tokens``, ``token_nodes``, ``token_mask`` and
    ``sequence_logprobs``.

    reward_values, reward_probs: (P, Y, K); correct: (P, Y) bool; ref_cond: (P, N, V).
    """

    V: int
    L: int
    reward_values: np.ndarray
    reward_probs: np.ndarray
    correct: np.ndarray
    ref_cond: np.ndarray
    name: str = "tokentree"
    info: dict = field(default_factory=dict)

    @property
    def n_prompts(self) -> int:
        return int(self.reward_values.shape[0])

    @property
    def eos_token(self) -> int | None:
        """The symbol that ends a response (None: every response has L tokens)."""
        return None

    @property
    def tokens(self) -> np.ndarray:
        """(Y, L) the tokens of every response (padded with 0 after a shorter one's end)."""
        return self._tokens

    @property
    def token_nodes(self) -> np.ndarray:
        """(Y, L) the node (prefix) at which each token of each response is chosen (padding:
        the root)."""
        return self._nodes

    def _check_distributions(self) -> None:
        _check_simplex("reward_probs", self.reward_probs)
        _check_simplex("ref_cond", self.ref_cond)
        if (self.ref_cond <= 0).any():
            raise ValueError("ref_cond must be > 0 everywhere (pi* is defined relative to it)")

    @property
    def mean_reward(self) -> np.ndarray:
        """(P, Y) r(x, y) = E[reward | x, y]."""
        return (self.reward_values * self.reward_probs).sum(axis=-1)

    @property
    def ref_logprobs(self) -> np.ndarray:
        """(P, Y) log ref(y|x)."""
        return self.sequence_logprobs(np.log(self.ref_cond))

    def optimum_by_enumeration(self, beta: float) -> np.ndarray:
        """(P, Y) log pi*_beta(y|x) = log ref + r/beta - log Z, by enumerating the responses."""
        _check_beta(beta)
        logits = self.ref_logprobs + self.mean_reward / beta
        return logits - logsumexp(logits, axis=1, keepdims=True)

    def check_sequence_table(self, seq_logp: np.ndarray) -> np.ndarray:
        seq = np.asarray(seq_logp, dtype=np.float64)
        if seq.shape != (self.n_prompts, self.n_responses):
            raise InvalidPolicyError(
                f"sequence table has shape {seq.shape}, expected ({self.n_prompts}, "
                f"{self.n_responses}) (prompts, responses)"
            )
        total = logsumexp(seq, axis=1)
        bad = np.abs(total) > 1e-9
        if bad.any():
            x = int(np.argmax(bad))
            raise InvalidPolicyError(
                f"sequence probabilities of prompt {x} sum to {np.exp(total[x]):.12g}, expected 1"
            )
        return seq

    # ------------------------------------------------------------------ the tree, generically
    def children(self) -> tuple[np.ndarray, np.ndarray]:
        """(child_node, child_response), both (N, V) int: the node reached by symbol a at node h,
        or -1 when (h, a) ends a response; then child_response[h, a] is that response, else -1.
        Read off ``token_nodes`` / ``tokens`` / ``token_mask``, so it holds for any subclass."""
        N, V = self.n_nodes, self.V
        child_node = np.full((N, V), -1, dtype=np.int64)
        child_resp = np.full((N, V), -1, dtype=np.int64)
        lengths = self.token_mask.sum(axis=1).astype(np.int64)
        for y in range(self.n_responses):
            for t in range(lengths[y]):
                h, a = self.token_nodes[y, t], self.tokens[y, t]
                if t == lengths[y] - 1:
                    child_resp[h, a] = y
                else:
                    child_node[h, a] = self.token_nodes[y, t + 1]
        return child_node, child_resp

    def backup(self, cond_logp: np.ndarray, leaf: np.ndarray, soft: float | None) -> np.ndarray:
        """(P, N, V) the value of (h, a) backed up from the leaves' values ``leaf`` (P, Y) under
        the policy ``cond_logp`` (P, N, V): the expectation Q^pi(h, a) = E_pi[leaf | h, a]
        (``soft=None``), or the soft value beta log E_pi[exp(leaf / beta) | h, a]
        (``soft=beta``). Nodes are visited children first (a child has a larger index)."""
        child_node, child_resp = self.children()
        P, N, V = self.n_prompts, self.n_nodes, self.V
        q = np.zeros((P, N, V))
        for h in range(N - 1, -1, -1):
            for a in range(V):
                c, y = child_node[h, a], child_resp[h, a]
                if y >= 0:
                    q[:, h, a] = leaf[:, y]
                elif soft is None:
                    q[:, h, a] = (np.exp(cond_logp[:, c]) * q[:, c]).sum(axis=-1)
                else:
                    q[:, h, a] = soft * logsumexp(cond_logp[:, c] + q[:, c] / soft, axis=-1)
        return q

    def continuations(self, cond_logp: np.ndarray) -> np.ndarray:
        """(P, N, V, Y) the probability that the response ends as y after symbol a at node h when
        the policy ``cond_logp`` (P, N, V) completes it: pi(y) / pi(prefix h a) over the responses
        through (h, a), by enumeration (0 where y does not pass through (h, a))."""
        seq = np.exp(self.sequence_logprobs(cond_logp))  # (P, Y)
        out = np.zeros((self.n_prompts, self.n_nodes, self.V, self.n_responses))
        lengths = self.token_mask.sum(axis=1).astype(np.int64)
        for y in range(self.n_responses):
            for t in range(lengths[y]):
                out[:, self.token_nodes[y, t], self.tokens[y, t], y] = seq[:, y]
        total = out.sum(axis=-1, keepdims=True)
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(total > 0, out / total, 0.0)

    def soft_q(self, beta: float) -> tuple[np.ndarray, SoftOptimum]:
        """(Q* (P, N, V), pi*_beta) by soft value iteration over the tree, children first:
        Q*(h, a) = beta log E_ref[exp(r / beta) | h, a], V*(h) = beta log sum_a ref(a|h)
        exp(Q*(h, a)/beta), pi*(a|h) = ref(a|h) exp((Q*(h, a) - V*(h))/beta)."""
        _check_beta(beta)
        log_ref = np.log(self.ref_cond)
        q = self.backup(log_ref, self.mean_reward, soft=beta)
        v = beta * logsumexp(log_ref + q / beta, axis=-1)  # (P, N)
        cond = log_ref + (q - v[..., None]) / beta
        return q, SoftOptimum(beta, cond, self.sequence_logprobs(cond), v[:, 0] / beta)

    # ------------------------------------------------------------------ exact metrics
    def kl(self, seq_logp: np.ndarray, other_logp: np.ndarray) -> np.ndarray:
        """KL(pi || pi') per prompt (P,) from two (P, Y) sequence log-probability tables."""
        a, b = self.check_sequence_table(seq_logp), self.check_sequence_table(other_logp)
        p = np.exp(a)
        with np.errstate(invalid="ignore"):
            terms = np.where(p > 0, p * (a - b), 0.0)
        return terms.sum(axis=1)

    def tv(self, seq_logp: np.ndarray, other_logp: np.ndarray) -> np.ndarray:
        """Total variation distance per prompt (P,)."""
        a, b = self.check_sequence_table(seq_logp), self.check_sequence_table(other_logp)
        return 0.5 * np.abs(np.exp(a) - np.exp(b)).sum(axis=1)

    def expected_reward(self, seq_logp: np.ndarray) -> np.ndarray:
        """E_{y ~ pi(.|x)} r(x, y) per prompt (P,)."""
        return (np.exp(self.check_sequence_table(seq_logp)) * self.mean_reward).sum(axis=1)

    def accuracy(self, seq_logp: np.ndarray) -> np.ndarray:
        """P_{y ~ pi(.|x)}(y correct) per prompt (P,)."""
        return (np.exp(self.check_sequence_table(seq_logp)) * self.correct).sum(axis=1)

    def pass_at_k(self, seq_logp: np.ndarray, k: int) -> np.ndarray:
        """P(at least one of k i.i.d. responses is correct) = 1 - (1 - acc)^k per prompt (P,)."""
        if k < 1:
            raise ValueError(f"k must be >= 1, got {k}")
        return 1.0 - (1.0 - self.accuracy(seq_logp)) ** k

    def regularised_value(self, seq_logp: np.ndarray, beta: float) -> np.ndarray:
        """E_pi r - beta KL(pi || ref) per prompt (P,)."""
        return self.expected_reward(seq_logp) - beta * self.kl(seq_logp, self.ref_logprobs)

    def cvar(self, seq_logp: np.ndarray, alpha: float) -> np.ndarray:
        """Static CVaR_alpha of the reward under pi (P,): the mean of its lower alpha tail."""
        if not 0 < alpha <= 1:
            raise ValueError(f"alpha must be in (0, 1], got {alpha}")
        pi = np.exp(self.check_sequence_table(seq_logp))
        out = np.empty(self.n_prompts)
        for x in range(self.n_prompts):
            mass = (pi[x, :, None] * self.reward_probs[x]).reshape(-1)
            vals = self.reward_values[x].reshape(-1)
            order = np.argsort(vals, kind="stable")
            cum = np.cumsum(mass[order])
            take = np.clip(alpha - np.concatenate([[0.0], cum[:-1]]), 0.0, mass[order])
            out[x] = float((take * vals[order]).sum() / alpha)
        return out

    def cvar_optimum(self, alpha: float) -> tuple[np.ndarray, np.ndarray]:
        """(value (P,), optimal (P, Y) bool): max over pi of CVaR_alpha, and the responses whose
        point masses attain it.

        CVaR_alpha(pi) = sup_b b - E_pi (b - R)^+ / alpha is a supremum of functions linear in pi,
        hence convex in pi: its maximum over the simplex is attained at a vertex (a point mass).
        A mixture of optimal responses is optimal when they share one reward distribution (as the
        safe responses of ``tokentree-risky`` do); in general a mixture can be worse. Brute force
        over mixtures checks this in tests/test_token_tree.py."""
        Y = self.n_responses
        eye = np.full((Y, Y), -np.inf)
        np.fill_diagonal(eye, 0.0)
        per = np.stack(
            [self.cvar(np.broadcast_to(eye[y], (self.n_prompts, Y)), alpha) for y in range(Y)],
            axis=1,
        )  # (P, Y) CVaR of each point mass
        best = per.max(axis=1)
        return best, per >= best[:, None] - 1e-12


@dataclass
class TokenTreeTask(TreeTask):
    """Prompts x responses of L tokens over V symbols with exact rewards and a reference policy.

    reward_values, reward_probs: (P, Y, K); correct: (P, Y) bool; ref_cond: (P, N, V).
    """

    name: str = "tokentree"

    def __post_init__(self) -> None:
        if self.V < 2 or self.L < 1:
            raise ValueError(f"need V >= 2 and L >= 1, got V={self.V}, L={self.L}")
        P, Y, N = self.reward_values.shape[0], self.V**self.L, self.n_nodes
        for name, arr, shape in (
            ("reward_probs", self.reward_probs, self.reward_values.shape),
            ("correct", self.correct, (P, Y)),
            ("ref_cond", self.ref_cond, (P, N, self.V)),
        ):
            if arr.shape != shape:
                raise ValueError(f"{name} has shape {arr.shape}, expected {shape}")
        if self.reward_values.shape[1] != Y:
            raise ValueError(
                f"reward_values has {self.reward_values.shape[1]} responses, expected {Y}"
            )
        self._check_distributions()
        t = np.arange(self.L)
        idx = np.arange(Y)
        self._tokens = (idx[:, None] // self.V ** (self.L - 1 - t)[None, :]) % self.V  # (Y, L)
        prefix = idx[:, None] // self.V ** (self.L - t)[None, :]  # (Y, L) prefix index at depth t
        self._nodes = self.level_offset(t)[None, :] + prefix  # (Y, L)

    # ------------------------------------------------------------------ shapes
    @property
    def n_responses(self) -> int:
        return self.V**self.L

    @property
    def n_nodes(self) -> int:
        return (self.V**self.L - 1) // (self.V - 1)

    def level_offset(self, t):
        """Node index of the first length-t prefix: (V^t - 1)/(V - 1)."""
        return (self.V ** np.asarray(t) - 1) // (self.V - 1)

    @property
    def token_mask(self) -> np.ndarray:
        """(Y, L) ones: every response has L tokens (``tokentree-eos`` has variable lengths)."""
        return np.ones(self._tokens.shape)

    # ------------------------------------------------------------------ policies
    def sequence_logprobs(self, cond_logp: np.ndarray) -> np.ndarray:
        """(P, N, V) conditional log-probabilities -> (P, Y) sequence log-probabilities."""
        cond_logp = np.asarray(cond_logp, dtype=np.float64)
        shape = (self.n_prompts, self.n_nodes, self.V)
        if cond_logp.shape != shape:
            raise InvalidPolicyError(
                f"conditional table has shape {cond_logp.shape}, expected {shape}"
            )
        return cond_logp[:, self._nodes, self._tokens].sum(axis=-1)

    def conditional_from_sequence(self, seq_logp: np.ndarray) -> np.ndarray:
        """(P, Y) sequence log-probabilities -> (P, N, V) conditional log-probabilities (the
        prefix marginals' ratios; a zero-probability prefix gets the uniform conditional)."""
        seq = self.check_sequence_table(seq_logp)
        P, V = self.n_prompts, self.V
        out = np.empty((P, self.n_nodes, V))
        level = seq  # (P, V^(t+1)) log-marginals of the length t+1 prefixes
        for t in range(self.L - 1, -1, -1):
            children = level.reshape(P, V**t, V)
            parent = logsumexp(children, axis=-1)
            with np.errstate(invalid="ignore"):
                cond = children - parent[..., None]
            cond = np.where(np.isfinite(parent)[..., None], cond, -np.log(V))
            out[:, self.level_offset(t) : self.level_offset(t + 1)] = cond
            level = parent
        return out

    # ------------------------------------------------------------------ the KL optimum
    def soft_optimum(self, beta: float) -> SoftOptimum:
        """pi*_beta by soft-Bellman dynamic programming over the token tree (module docstring)."""
        _check_beta(beta)
        P, V = self.n_prompts, self.V
        log_ref = np.log(self.ref_cond)
        cond = np.empty((P, self.n_nodes, V))
        W = self.mean_reward / beta  # (P, V^L) values of the leaves
        for t in range(self.L - 1, -1, -1):
            lo, hi = self.level_offset(t), self.level_offset(t + 1)
            q = log_ref[:, lo:hi, :] + W.reshape(P, V**t, V)  # (P, V^t, V)
            W = logsumexp(q, axis=-1)  # (P, V^t)
            cond[:, lo:hi, :] = q - W[..., None]
        return SoftOptimum(beta, cond, self.sequence_logprobs(cond), W[:, 0])


def _check_simplex(name: str, arr: np.ndarray) -> None:
    if (arr < 0).any():
        raise ValueError(f"{name} has a negative entry at {np.argwhere(arr < 0)[0].tolist()}")
    s = arr.sum(axis=-1)
    bad = np.abs(s - 1) > 1e-9
    if bad.any():
        where = np.argwhere(bad)[0].tolist()
        raise ValueError(f"{name} row {where} sums to {s[tuple(where)]:.12g}, expected 1")


def _check_beta(beta: float) -> None:
    if not beta > 0:
        raise ValueError(f"beta must be > 0, got {beta!r}")
