"""LaSeR (Yang et al. 2025, "LaSeR: Reinforcement Learning with Last-Token Self-Rewarding", arXiv
2510.14943, ICLR 2026): the registered loss, its exact expectation on a token tree and the exact
twin of its closed-form identity. Seed row 002-004#F5 (``seed-catalogue-002-004.md#F5``).

What was read [V] (the abstract, the arXiv HTML's front matter, the OpenReview appendix heading
"C General form of self-rewarding MSE loss", which names the verification reward "Eq. (7)" and
the MSE loss "Eq. (12)"): after a solution y to a problem x the policy's next-token distribution
pi(. | x, y) at the solution's last token is read at one pre-specified token z; the
*last-token self-rewarding score* is

    r_s(x, y) = beta_v (log pi(z | x, y) - c_ref),

c_ref a pre-calculated constant (the reference's log pi_ref(z | x, y), nearly constant over
(x, y)), beta_v the KL coefficient of the self-verification objective; LaSeR adds to the RLVR
loss an MSE loss (r_s(x, y) - r_v(x, y))^2 against the verifier's reward r_v in {0, 1}, at the
cost of one extra token's log-probability.

What was reconstructed [A]: the self-verification objective, per (x, y), as the KL-regularised
bandit over the next token z' after y: max_q E_{z' ~ q} rhat(z') - beta_v KL(q || pi_ref(. | x,
y)) with rhat(z) = r_v(x, y) for the pre-specified token and 0 for every other token (the binary
0/1 instantiation). Its maximiser is q*(z') = pi_ref(z') exp(rhat(z') / beta_v) / Z(x, y), Z =
1 + pi_ref(z | x, y) (exp(r_v / beta_v) - 1), so exactly

    beta_v (log q*(z | x, y) - log pi_ref(z | x, y)) = r_v(x, y) - beta_v log Z(x, y),

and the paper's identity r_s = r_v holds up to beta_v log Z <= beta_v pi_ref(z) (e^{1/beta_v} - 1),
which vanishes as the reference's probability of the pre-specified token does (the paper picks a
rarely generated token). The MSE loss's minimiser gives r_s = r_v exactly for every sampled
(x, y). The RLVR part is RLOO with the KL in the reward (:func:`~theorylab.algorithms.deep.
policy_gradient_losses.rloo`; the paper trains with GRPO-family losses [A]); the self-rewarding
scores' use as auxiliary advantages and for test-time reweighting is not reproduced.

The registered loss ``laser`` takes, besides the RLOO tensors, ``z_logp`` (B, T): log pi(z | x,
y_{<=t}) after every response position t; it reads the last real position (the token after the
response's last token, EOS included). ``c_ref`` None: the reference's own log pi_ref(z | x, y)
(``ref_z_logp``) per example; a number: the paper's pre-calculated constant. ``token`` is the
pre-specified token the trainers read ``z_logp`` at.

The twin (:class:`LaserTable`): the response policy is a :class:`~theorylab.algorithms.deep.
twins.LogitTable`; after every response y a *verification node* with its own softmax over W
tokens (P, Y, W), token ``z`` the pre-specified one. On ``tokentree-eos`` the position after a
response's EOS is that node and a padding position is the root, so reading the last column of a
padded batch instead of the last real position is wrong exactly for the short responses (the
registered mutation ``laser-last-column``).
"""

from __future__ import annotations

import numpy as np
import torch

from theorylab.algorithms.deep.masking import (
    InvalidBatchError,
    check_nonnegative,
    check_positive,
    check_tokens,
    check_vector,
    reduce_examples,
)
from theorylab.algorithms.deep.policy_gradient_losses import rloo
from theorylab.algorithms.deep.registry import register_loss
from theorylab.algorithms.deep.twins import D, LogitTable


def last_position(values: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """(B,) values[b, t_b] at each row's last real position t_b (responses left-aligned)."""
    T = mask.shape[1]
    idx = (torch.arange(T, device=mask.device) * (mask > 0)).amax(dim=1)  # (B,)
    return values.gather(1, idx[:, None]).squeeze(1)


def self_reward(z_last: torch.Tensor, ref_last: torch.Tensor | float, beta_v: float):
    """r_s = beta_v (log pi(z | x, y) - c_ref) (module docstring)."""
    return beta_v * (z_last - ref_last)


@register_loss(
    "laser",
    summary="LaSeR: RLOO + MSE of the last-token self-reward beta_v (log pi(z|x,y) - c_ref) "
    "against the verifier reward (Yang et al. 2025).",
)
def laser(
    logp: torch.Tensor,
    old_logp: torch.Tensor | None,
    ref_logp: torch.Tensor | None,
    mask: torch.Tensor,
    rewards: torch.Tensor,
    group: torch.Tensor,
    z_logp: torch.Tensor,
    ref_z_logp: torch.Tensor | None = None,
    weights: torch.Tensor | None = None,
    *,
    beta: float = 0.05,
    beta_v: float = 1.0,
    alpha: float = 1.0,
    c_ref: float | None = None,
    token: int = 0,
) -> torch.Tensor:
    """rloo(beta) + alpha mean_i (beta_v (log pi(z | x, y_i) - c_ref) - r_i)^2, the log-probability
    of the pre-specified token read at each response's last real position of ``z_logp`` (module
    docstring). On-policy: ``old_logp`` is accepted and unused."""
    check_positive("beta_v", beta_v)
    check_nonnegative("alpha", alpha)
    if int(token) != token or token < 0:
        raise InvalidBatchError(f"laser: token must be a token id >= 0, got {token!r}")
    if z_logp is None:
        raise InvalidBatchError(
            "laser needs z_logp (B, T): log pi(z | x, y_<=t) of the pre-specified token"
        )
    m = check_tokens(mask, logp=logp, z_logp=z_logp, ref_z_logp=ref_z_logp)
    check_vector("rewards", rewards, logp.shape[0])
    if c_ref is None and ref_z_logp is None:
        raise InvalidBatchError("laser with c_ref=None needs ref_z_logp (the reference's z_logp)")
    ref_last = float(c_ref) if c_ref is not None else last_position(ref_z_logp.detach(), m)
    score = self_reward(last_position(z_logp, m), ref_last, beta_v)  # (B,)
    mse = reduce_examples((score - rewards.detach().to(score.dtype)) ** 2, weights)
    return rloo(logp, ref_logp, mask, rewards, group, weights, beta=beta) + alpha * mse


def response_and_token_logprobs(model, ids: torch.Tensor, V: int, token: int):
    """One forward pass of a causal LM on ids (n, L + 1) = [prompt, y_1..y_L]: the per-token
    log-probabilities (n, L) of y under the symbol-restricted policy and z_logp (n, L), the
    log-probability of symbol ``token`` after each y_t (position L: after the response)."""
    from theorylab.algorithms.deep.logprobs import token_logprobs

    if not 0 <= token < V:
        raise InvalidBatchError(f"laser: token must be a symbol 0..{V - 1}, got {token}")
    logits = model(ids)[..., :V]  # (n, L + 1, V): position t predicts token t + 1
    logp = token_logprobs(logits[:, :-1], ids[:, 1:])
    z_logp = torch.log_softmax(logits[:, 1:].float(), dim=-1)[..., token]
    return logp, z_logp


# --------------------------------------------------------------------------- the exact twin
def verification_reference(task, W: int, p_z: float, z: int, seed: int) -> np.ndarray:
    """(P, Y, W) a reference next-token distribution after every response: pi_ref(z) = p_z u,
    u ~ U(0.5, 1.5) per (x, y) (so a constant c_ref is only an approximation), the rest of the
    mass Dirichlet(1) over the other W - 1 tokens."""
    if not 0 < p_z < 2 / 3:
        raise ValueError(f"p_z must be in (0, 2/3) (pi_ref(z) = p_z u, u <= 1.5), got {p_z}")
    rng = np.random.default_rng(seed)
    P, Y = task.n_prompts, task.n_responses
    pz = p_z * rng.uniform(0.5, 1.5, size=(P, Y))
    rest = rng.dirichlet(np.ones(W - 1), size=(P, Y)) * (1.0 - pz)[..., None]
    return np.insert(rest, z, pz, axis=-1)


def verification_optimum(ref_ver: np.ndarray, r_v: np.ndarray, beta_v: float, z: int):
    """The closed form (module docstring): (q* (P, Y, W), log Z (P, Y))."""
    rhat = np.zeros_like(ref_ver)
    rhat[..., z] = r_v
    w = ref_ver * np.exp(rhat / beta_v)
    Z = w.sum(-1)
    return w / Z[..., None], np.log(Z)


def verification_by_optimiser(ref_ver: np.ndarray, r_v: np.ndarray, beta_v: float, z: int):
    """The same maximiser by L-BFGS on softmax logits (no closed form used): (P, Y, W) q."""
    from scipy.optimize import minimize

    shape = ref_ver.shape
    rhat = np.zeros(shape)
    rhat[..., z] = r_v
    log_ref = np.log(ref_ver)

    def negative(phi_flat):
        phi = phi_flat.reshape(shape)
        logq = phi - phi.max(-1, keepdims=True)
        logq = logq - np.log(np.exp(logq).sum(-1, keepdims=True))
        q = np.exp(logq)
        value = q * (rhat - beta_v * (logq - log_ref))  # (P, Y, W)
        g_q = rhat - beta_v * (logq - log_ref) - beta_v  # d value / d q
        grad = q * (g_q - (q * g_q).sum(-1, keepdims=True))
        return -value.sum(), -grad.reshape(-1)

    res = minimize(negative, np.zeros(ref_ver.size), jac=True, method="L-BFGS-B",
                   options={"maxiter": 2000, "gtol": 1e-13, "ftol": 1e-15})  # fmt: skip
    phi = res.x.reshape(shape)
    q = np.exp(phi - phi.max(-1, keepdims=True))
    return q / q.sum(-1, keepdims=True)


class LaserTable(LogitTable):
    """A logit table over the response tree plus a verification softmax (P, Y, W) after every
    response (module docstring); ``z`` the pre-specified token."""

    def __init__(self, task, W: int, z: int, theta=None, phi=None) -> None:
        super().__init__(task, theta)
        P, Y = task.n_prompts, task.n_responses
        init = np.zeros((P, Y, W)) if phi is None else phi
        self.phi = torch.tensor(init, dtype=D, requires_grad=True)
        self.z = z
        lengths = task.token_mask.sum(axis=1).astype(np.int64)
        L = task.token_mask.shape[1]
        # node after y_{<=t} for t < |y| - 1; -1 at the last position; the root on padding
        after = np.zeros((Y, L), dtype=np.int64)
        for y in range(Y):
            after[y, : lengths[y] - 1] = task.token_nodes[y, 1 : lengths[y]]
            after[y, lengths[y] - 1] = -1
        self.after = torch.as_tensor(after)

    def parameters(self) -> list[torch.Tensor]:
        return [self.theta, self.phi]

    def ver_logp(self) -> torch.Tensor:
        """(P, Y, W) log q(. | x, y)."""
        return torch.log_softmax(self.phi, dim=-1)

    def z_logp(self, cond, ver, prompts: torch.Tensor, responses: torch.Tensor):
        """(B, L) log pi(z | x, y_{<=t}): the response policy's at internal nodes, the
        verification node's at the last position, the root's on padding."""
        nodes = self.after[responses]  # (B, L)
        inner = cond[prompts[:, None], nodes.clamp(min=0), self.z]
        end = ver[prompts, responses, self.z][:, None].expand_as(inner)
        return torch.where(nodes < 0, end, inner)

    def scores(self, beta_v: float, c_ref) -> np.ndarray:
        """(P, Y) r_s(x, y) = beta_v (log q(z | x, y) - c_ref), c_ref a number or (P, Y)."""
        with torch.no_grad():
            return beta_v * (self.ver_logp()[..., self.z].numpy() - c_ref)


def laser_expectation(task, table: LaserTable, G: int, loss, ref_ver: np.ndarray):
    """E over G i.i.d. on-policy responses per prompt of the registered ``loss`` (a laser spec),
    every ordered G-tuple enumerated (:func:`~theorylab.algorithms.deep.pacs.group_expectation`),
    the z log-probabilities of the table and of the reference ``ref_ver`` (P, Y, W) supplied."""
    from theorylab.algorithms.deep.pacs import group_expectation

    cond, ver = table.cond_logp(), table.ver_logp()
    ref_cond = torch.as_tensor(np.log(task.ref_cond))
    ref_v = torch.as_tensor(np.log(ref_ver))

    def extra(xs, ys):
        return {
            "z_logp": table.z_logp(cond, ver, xs, ys),
            "ref_z_logp": table.z_logp(ref_cond, ref_v, xs, ys),
        }

    return group_expectation(task, table, G, loss, extra=extra)


def independent_gradient(task, theta, phi, ref_ver, *, beta, beta_v, alpha, z, c_ref):
    """(grad theta (P, N, V), grad phi (P, Y, W)) of the laser loss's exact expectation, numpy:
    -grad J_beta / P with J_beta = E_pi[r - beta log pi/ref] by the score function, and the MSE's
    alpha pi(y|x) 2 beta_v (r_s - r) (e_z - q(.|x, y)) / P (pi detached: the responses are
    sampled; c_ref a number or (P, Y))."""
    from theorylab.algorithms.deep.regression_twins import log_softmax, score_matrix

    P = task.n_prompts
    cond = log_softmax(theta)
    seq = task.sequence_logprobs(cond)  # (P, Y)
    pi = np.exp(seq)
    shaped = task.mean_reward - beta * (seq - task.ref_logprobs)
    g_theta = -np.einsum("py,pynv->pnv", pi * shaped, score_matrix(task, cond)) / P
    logq = log_softmax(phi)  # (P, Y, W)
    resid = beta_v * (logq[..., z] - c_ref) - task.mean_reward  # (P, Y)
    onehot = np.zeros(phi.shape[-1])
    onehot[z] = 1.0
    g_phi = alpha * (pi * 2.0 * beta_v * resid)[..., None] * (onehot - np.exp(logq)) / P
    return g_theta, g_phi


@torch.no_grad()
def transformer_self_rewards(model, task, *, token: int, beta_v: float, c_ref: float):
    """(P, Y) r_s(x, y) = beta_v (log pi(z | x, y) - c_ref) of a causal LM on every prompt and
    response of a fixed-length token tree (ids ``[V + x, y_1..y_L]``, the trainer's layout)."""
    P, Y, V = task.n_prompts, task.n_responses, task.V
    dev = next(model.parameters()).device
    tokens = torch.as_tensor(task.tokens, device=dev).repeat(P, 1)  # (P Y, L)
    prompts = torch.arange(P, device=dev).repeat_interleave(Y)
    ids = torch.cat([(V + prompts)[:, None], tokens], dim=1)
    _, z_logp = response_and_token_logprobs(model, ids, V, token)
    return (beta_v * (z_logp[:, -1].double() - c_ref)).reshape(P, Y).cpu().numpy()
