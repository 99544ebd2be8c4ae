"""Exact twins of the regression losses (A*-PO, REBEL, REFUEL, TBRM) on token trees whose
responses have different lengths (``tokentree-eos``), with the answers theory predicts.

Seed rows: 000#2 A*-PO, 000#16 REBEL, 002-004#E5 REFUEL, 000#42 TBRM
(``seed-catalogue-000.md#2``, ``#16``, ``#42``; ``seed-catalogue-002-004.md#E5``).

The policy is a logit table (:class:`~theorylab.algorithms.deep.twins.LogitTable`). Each
``*_objective`` is the *registered* loss (:mod:`theorylab.algorithms.deep.regression_losses`)
called once on every example of its sampling distribution with the example's probability as
weight: the loss's exact expectation, a torch scalar with gradient. :func:`minimise` finds its
minimiser over the logit table (L-BFGS, float64). What each minimiser must be:

* A*-PO (stage 2, sampler pi_t with full support, V* exact): pi*_beta = ref exp(r/beta)/Z, where
  every residual beta log pi/ref + V* - r is zero (a zero-loss fixed point: the on-policy
  iteration, which re-samples from the current policy, stays there). The A*-PO code's
  ``beta1 = 0`` option, V* by the plain mean reward, moves the minimiser off pi*.
* REBEL (pairs from pi_t x pi_t): pi_t exp(eta r)/Z, the mirror-descent (NPG) step (Gao et al.
  2024, Sec. 3: the least-squares solution with full coverage).
* REFUEL (roll in with pi_t to a node h, branch two tokens a, a' ~ pi_t(.|h), roll both out with
  pi_t, regress the turn's log-ratio difference on the difference of the returns): the per-node
  NPG step pi_t(a|h) exp(eta Q^{pi_t}(h, a)) / Z(h), Q^{pi_t} by policy evaluation over the tree.
  The regression target's expectation is Q(h, a) - Q(h, a') (:func:`rollout_q`, by enumerating
  the rollouts, checks it against the tree recursion). REBEL's sequence-level step is not this.
  [A] REFUEL's turn-level form (the log-ratio of the turn's tokens only) is reconstructed from the
  abstract and the catalogue row.
* TBRM (responses from any full-support behaviour mu): pi*_beta, with V_theta(x) = beta log Z(x);
  without the root value the minimiser depends on mu and is not pi*.

:func:`score_matrix` and :func:`independent_gradient` give each objective's gradient in numpy
from the score function d/dtheta log pi(y|x) = sum_t (e_{a_t} - pi(.|h_t)) at the nodes h_t of y,
without torch or the loss code: the claim ``regression-loss-gradients`` compares them.
"""

from __future__ import annotations

import numpy as np
import torch

from theorylab.algorithms.deep import regression_losses as rl
from theorylab.algorithms.deep.registry import make_loss
from theorylab.algorithms.deep.twins import LogitTable

D = torch.float64
METHODS = ("astar-po", "rebel", "refuel", "tbrm")


# --------------------------------------------------------------------------- tables and samplers
def random_logits(task, seed: int, scale: float = 0.7) -> np.ndarray:
    """(P, N, V) a random full-support logit table (a sampler pi_t or a behaviour policy mu)."""
    rng = np.random.default_rng(seed)
    return scale * rng.standard_normal((task.n_prompts, task.n_nodes, task.V))


def log_softmax(theta: np.ndarray) -> np.ndarray:
    z = theta - theta.max(axis=-1, keepdims=True)
    return z - np.log(np.exp(z).sum(axis=-1, keepdims=True))


def _rows(task, pol: LogitTable, cond, x, y, mask=None):
    ref = torch.as_tensor(np.log(task.ref_cond))
    m = pol.mask[y] if mask is None else mask
    return pol.token_logp(cond, x, y), pol.token_logp(ref, x, y), m


def _all_examples(task):
    P, Y = task.n_prompts, task.n_responses
    return torch.arange(P).repeat_interleave(Y), torch.arange(Y).repeat(P)


def exact_v_star(task, beta: float) -> torch.Tensor:
    """V*(x) (P,) = beta log E_ref exp(r/beta) through A*-PO's stage-1 estimator with every response
    weighted by its reference probability (:func:`regression_losses.log_mean_exp_value`)."""
    r = torch.as_tensor(task.mean_reward)
    return rl.log_mean_exp_value(r, beta, torch.as_tensor(np.exp(task.ref_logprobs)))


# --------------------------------------------------------------------------- exact objectives
def astar_objective(task, pol: LogitTable, sampler: np.ndarray, beta: float, v_star=None):
    """E_{x, y ~ pi_t(.|x)} of the registered astar-po loss; sampler: (P, N, V) logits of pi_t."""
    v = exact_v_star(task, beta) if v_star is None else torch.as_tensor(v_star)
    x, y = _all_examples(task)
    w = torch.as_tensor(np.exp(task.sequence_logprobs(log_softmax(sampler))))[x, y]
    logp, ref, m = _rows(task, pol, pol.cond_logp(), x, y)
    r = torch.as_tensor(task.mean_reward)[x, y]
    return make_loss("astar-po", beta=beta)(logp, ref, m, r, v[x], w / task.n_prompts)


def _pair_rows(x, ya, yb):
    """Interleave pairs into rows (2k, 2k+1) = (ya[k], yb[k])."""
    return x.repeat_interleave(2), torch.stack([ya, yb], 1).reshape(-1)


def rebel_objective(task, pol: LogitTable, sampler: np.ndarray, eta: float):
    """E over x and pairs (y, y') ~ pi_t x pi_t of the registered rebel loss (old_logp = pi_t)."""
    P, Y = task.n_prompts, task.n_responses
    x, ya, yb = (torch.as_tensor(a.reshape(-1)) for a in np.meshgrid(*map(np.arange, (P, Y, Y)),
                                                                      indexing="ij"))  # fmt: skip
    seq_t = np.exp(task.sequence_logprobs(log_softmax(sampler)))
    w = torch.as_tensor(seq_t[x, ya] * seq_t[x, yb] / P)
    xs, ys = _pair_rows(x, ya, yb)
    cond = pol.cond_logp()
    old = pol.token_logp(torch.as_tensor(log_softmax(sampler)), xs, ys)
    logp = pol.token_logp(cond, xs, ys)
    r = torch.as_tensor(task.mean_reward)[xs, ys]
    return make_loss("rebel", eta=eta)(logp, old, None, pol.mask[ys], r, xs, w)


def node_paths(task) -> list[tuple[int, int, np.ndarray]]:
    """For every node h: (h, its depth t, the responses through h that continue past it)."""
    lengths = task.token_mask.sum(axis=1).astype(int)
    out = []
    for h in range(task.n_nodes):
        ys = np.nonzero((task.token_nodes == h).any(axis=1))[0]
        t = int(np.argmax(task.token_nodes[ys[0]] == h)) if h else 0
        ys = ys[lengths[ys] > t]
        out.append((h, t, ys))
    return out


def refuel_objective(task, pol: LogitTable, sampler: np.ndarray, eta: float):
    """REFUEL's exact expected loss: the registered rebel loss on every pair of rollouts (y, y')
    branching at a node h (both through h), masked to the token chosen at h, with probability
    d_t(h) pi_t(a|h) pi_t(a'|h) pi_t(y|h a) pi_t(y'|h a') = pi_t(y) pi_t(y') / d_t(h), summed over
    the nodes (every turn of the roll-in) and averaged over prompts."""
    P = task.n_prompts
    seq_t = np.exp(task.sequence_logprobs(log_softmax(sampler)))  # (P, Y)
    xs_, ya_, yb_, w_, t_ = [], [], [], [], []
    for _h, t, ys in node_paths(task):
        a, b = (g.reshape(-1) for g in np.meshgrid(ys, ys, indexing="ij"))
        for x in range(P):
            d = seq_t[x, ys].sum()
            xs_.append(np.full(a.shape, x))
            ya_.append(a)
            yb_.append(b)
            w_.append(seq_t[x, a] * seq_t[x, b] / d / P)
            t_.append(np.full(a.shape, t))
    x, ya, yb, w, t = (torch.as_tensor(np.concatenate(v)) for v in (xs_, ya_, yb_, w_, t_))
    xs, ys = _pair_rows(x, ya, yb)
    turn = t.repeat_interleave(2)
    mask = torch.zeros((len(ys), task.L), dtype=D)
    mask[torch.arange(len(ys)), turn] = 1.0  # the turn's token only
    cond = pol.cond_logp()
    old = pol.token_logp(torch.as_tensor(log_softmax(sampler)), xs, ys)
    logp = pol.token_logp(cond, xs, ys)
    r = torch.as_tensor(task.mean_reward)[xs, ys]
    return make_loss("refuel", eta=eta)(logp, old, None, mask, r, xs, w)


def tbrm_objective(task, pol: LogitTable, behaviour: np.ndarray, beta: float):
    """E_{x, y ~ mu(.|x)} of the registered tbrm loss; behaviour: (P, N, V) logits of mu; the root
    value from the logit table's root row (the reference's logits are log ref)."""
    x, y = _all_examples(task)
    w = torch.as_tensor(np.exp(task.sequence_logprobs(log_softmax(behaviour))))[x, y]
    logp, ref, m = _rows(task, pol, pol.cond_logp(), x, y)
    r = torch.as_tensor(task.mean_reward)[x, y]
    root = rl.tbrm_root_values(
        pol.theta[:, 0, :], torch.as_tensor(np.log(task.ref_cond[:, 0, :])), beta
    )  # (P,)
    return make_loss("tbrm", beta=beta)(logp, ref, m, r, root[x], w / task.n_prompts)


def objective(task, method: str, pol: LogitTable, sampler: np.ndarray, step: float):
    """The exact expected loss of ``method``; ``step`` is beta (A*-PO, TBRM) or eta (REBEL,
    REFUEL); ``sampler`` pi_t (A*-PO, REBEL, REFUEL) or mu (TBRM) as a logit table."""
    fns = {"astar-po": astar_objective, "rebel": rebel_objective,
           "refuel": refuel_objective, "tbrm": tbrm_objective}  # fmt: skip
    if method not in fns:
        raise ValueError(f"unknown method {method!r}; expected one of {METHODS}")
    return fns[method](task, pol, sampler, step)


def lbfgs(pol: LogitTable, loss_fn, iters: int = 200, scale: float = 1e8) -> None:
    """Minimise ``loss_fn()`` (a torch scalar of ``pol.theta``) in place: five L-BFGS runs of
    ``iters`` iterations, strong-Wolfe line search, the loss scaled up by ``scale`` (L-BFGS's
    stopping tolerances are absolute and an optimum's loss may be ~0)."""
    opt = torch.optim.LBFGS([pol.theta], lr=1.0, max_iter=iters, tolerance_grad=1e-13,
                            tolerance_change=1e-16, history_size=50,
                            line_search_fn="strong_wolfe")  # fmt: skip

    def closure():
        opt.zero_grad()
        loss = scale * loss_fn()
        loss.backward()
        return loss

    for _ in range(5):
        opt.step(closure)


def minimise(
    task, method: str, sampler: np.ndarray, step: float, iters: int = 200,
    start: np.ndarray | None = None,
) -> tuple[np.ndarray, float, float, np.ndarray]:  # fmt: skip
    """L-BFGS on the exact expected loss from ``start`` (default: the sampler's table). Returns
    (the minimiser's (P, Y) sequence log-probabilities, the final loss, the final gradient's
    max-norm, the minimiser's (P, N, V) logit table)."""
    pol = LogitTable(task, (sampler if start is None else start).copy())
    lbfgs(pol, lambda: objective(task, method, pol, sampler, step), iters)
    loss = objective(task, method, pol, sampler, step)
    (g,) = torch.autograd.grad(loss, pol.theta)
    theta = pol.theta.detach().numpy().copy()
    return pol.numpy_seq_logp(), float(loss.detach()), float(g.abs().max()), theta


# --------------------------------------------------------------------------- predictions
def rollout_q(task, cond_logp: np.ndarray) -> np.ndarray:
    """(P, N, V) E_pi[r | h, a] by enumerating the rollouts after (h, a)
    (:meth:`~theorylab.mdps.token_tree.TreeTask.continuations`)."""
    return np.einsum("xhay,xy->xha", task.continuations(cond_logp), task.mean_reward)


def predicted_minimiser(task, method: str, sampler: np.ndarray, step: float) -> np.ndarray:
    """(P, Y) the minimiser theory predicts (module docstring)."""
    if method in ("astar-po", "tbrm"):
        return task.soft_optimum(step).seq_logp
    cond_t = log_softmax(sampler)
    if method == "rebel":
        z = task.sequence_logprobs(cond_t) + step * task.mean_reward
        return z - np.logaddexp.reduce(z, axis=1, keepdims=True)
    if method == "refuel":
        q = task.backup(cond_t, task.mean_reward, soft=None)
        return task.sequence_logprobs(log_softmax(cond_t + step * q))
    raise ValueError(f"unknown method {method!r}; expected one of {METHODS}")


# --------------------------------------------------------------------------- independent gradients
def score_matrix(task, cond_logp: np.ndarray) -> np.ndarray:
    """(P, Y, N, V) d log pi(y|x) / d theta[x, h, :] = sum_t 1[h_t = h] (e_{a_t} - pi(.|h))."""
    P, Y, N, V = task.n_prompts, task.n_responses, task.n_nodes, task.V
    pi = np.exp(cond_logp)
    out = np.zeros((P, Y, N, V))
    for y in range(Y):
        for t in np.nonzero(task.token_mask[y])[0]:
            h, a = task.token_nodes[y, t], task.tokens[y, t]
            out[:, y, h, :] -= pi[:, h, :]
            out[:, y, h, a] += 1.0
    return out


def independent_gradient(task, method: str, theta: np.ndarray, sampler: np.ndarray,
                         step: float) -> np.ndarray:  # fmt: skip
    """(P, N, V) the gradient of ``method``'s exact expected loss at the logit table ``theta``,
    from the papers' residuals and :func:`score_matrix` (numpy only; REFUEL not covered)."""
    P = task.n_prompts
    cond = log_softmax(theta)
    s = task.sequence_logprobs(cond)  # (P, Y)
    S = score_matrix(task, cond)
    r = task.mean_reward
    ref = task.ref_logprobs
    samp = np.exp(task.sequence_logprobs(log_softmax(sampler)))  # (P, Y)
    if method in ("astar-po", "tbrm"):
        beta = step
        if method == "astar-po":
            v = beta * np.log((np.exp(ref) * np.exp(r / beta)).sum(1))  # (P,)
            extra = 0.0
        else:  # V_theta(x) = beta logsumexp theta[x, root]
            v = beta * np.log(np.exp(theta[:, 0, :]).sum(-1))
            extra = np.zeros_like(theta)
            extra[:, 0, :] = beta * np.exp(cond[:, 0, :])
        res = beta * (s - ref) + v[:, None] - r  # (P, Y)
        g = np.einsum("xy,xyhv->xhv", samp * 2 * res * beta, S)
        if method == "tbrm":
            g = g + (samp * 2 * res).sum(1)[:, None, None] * extra
        return g / P
    if method == "rebel":
        st = task.sequence_logprobs(log_softmax(sampler))
        ratio = s - st
        res = (ratio[:, :, None] - ratio[:, None, :]) - step * (r[:, :, None] - r[:, None, :])
        w = samp[:, :, None] * samp[:, None, :] * 2 * res  # (P, Y, Y)
        return (np.einsum("xab,xahv->xhv", w, S) - np.einsum("xab,xbhv->xhv", w, S)) / P
    raise ValueError(f"no independent gradient for {method!r}")
