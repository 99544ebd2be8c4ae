"""DPO and IPO on a FIXED dataset of sampled preference pairs: the empirical optimum, exactly.

Setting (issue 19): a one-token task (``tokentree:V=Y,L=1``), so the twin's logit table
``theta[x, 0, y]`` is a softmax over whole responses (with L > 1 the token tree ties the logits of
responses sharing a prefix and the statement below does not hold). For each prompt a dataset of n
pairs (a, b) ~ ref x ref is drawn once, labelled by Bradley-Terry on the task reward,
P(a > b) = sigmoid(r(a) - r(b)), and the registered ``dpo`` / ``ipo`` loss (mean over the n pairs;
docs/algorithms/deep-losses.md) is minimised from theta_0 = log ref.

What theory predicts (DPO: Rafailov et al., NeurIPS 2023, eq. (7); IPO: Azar et al., AISTATS
2024, eq. (17) of arXiv 2310.12036v2; the population minimisers of docs/algorithms/deep-losses.md,
here restricted to the responses the data contains -- our derivation, not a paper's theorem):

* The empirical loss depends on theta only through h = delta(y_w) - delta(y_l) on the pairs in the
  data, delta = theta - theta_0 (the log-normalisers cancel in h). Its gradient in theta[y] is
  sum_i l'(h_i) (1[y = y_w,i] - 1[y = y_l,i]): **zero on every response that no pair contains**,
  and summing to zero over each connected component C of the comparison graph. Any optimiser whose
  steps are combinations of gradients (gradient descent, L-BFGS) therefore keeps delta(y) = 0 off
  the data and sum_{y in C} delta(y) = 0: unsampled responses keep the reference's relative mass
  (pi(y)/ref(y) is one constant on them), whatever the reward.
* Within a component the empirical optimum fixes the differences of delta: for IPO the weighted
  least-squares solution of delta(y_w) - delta(y_l) = 1/(2 tau) over the pairs (a graph
  Laplacian system, always solvable); for DPO the Bradley-Terry maximum-likelihood scores / beta,
  which are finite iff every component's win graph is strongly connected (else inf L_DPO is
  approached only as h -> infinity: the "known failure" of section 8.1; such prompts get no finite
  prediction and are reported, not checked).
* So the limit is delta = pinv(Laplacian) b (IPO; the minimum-norm solution is the one with zero
  component means) or the Newton solution projected to zero component means (DPO), and
  pi_n = softmax(theta_0 + delta): computable exactly from the data.
* Coverage term: with U the unsampled responses, any pi with pi/ref constant (kappa) on U has
  TV(pi, pi*) >= c(U) = min_kappa 1/2 sum_{y in U} |kappa ref(y) - pi*(y)| (a weighted median), so
  the error is bounded below by what the data never showed, and vanishes only when every response
  with pi*(y) != kappa ref(y) is covered. On covered responses the log-ratio estimates are
  averages of n Bernoulli labels: the error shrinks like n^(-1/2).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from scipy.sparse.csgraph import connected_components

from theorylab.algorithms.deep.registry import make_loss
from theorylab.mdps.token_tree import TokenTreeTask

D = torch.float64
LOSSES = ("dpo", "ipo")


@dataclass(frozen=True)
class PairData:
    """n pairs per prompt: winners, losers (P, n) response indices."""

    winners: np.ndarray
    losers: np.ndarray

    @property
    def n(self) -> int:
        return int(self.winners.shape[1])


def check_one_token(task: TokenTreeTask) -> None:
    if task.L != 1:
        raise ValueError(
            f"the sampled-pairs twin needs one-token responses (L = 1, a softmax over responses); "
            f"got L = {task.L}"
        )


def sample_pairs(task: TokenTreeTask, n: int, rng: np.random.Generator) -> PairData:
    """n pairs per prompt: (a, b) ~ ref x ref, a wins with probability sigmoid(r(a) - r(b))."""
    if n < 1:
        raise ValueError(f"n (pairs per prompt) must be >= 1, got {n}")
    ref = np.exp(task.ref_logprobs)  # (P, Y)
    cum = np.cumsum(ref, axis=1)
    P, Y = ref.shape

    def draw():
        u = rng.random((P, n)) * cum[:, -1:]
        return np.minimum((u[:, :, None] > cum[:, None, :]).sum(-1), Y - 1)

    a, b = draw(), draw()
    r = task.mean_reward
    x = np.arange(P)[:, None]
    a_wins = rng.random((P, n)) < 1.0 / (1.0 + np.exp(-(r[x, a] - r[x, b])))
    return PairData(np.where(a_wins, a, b), np.where(a_wins, b, a))


def covered(data: PairData, Y: int) -> np.ndarray:
    """(P, Y) bool: the responses some pair contains."""
    P = data.winners.shape[0]
    out = np.zeros((P, Y), dtype=bool)
    x = np.arange(P)[:, None]
    out[x, data.winners] = True
    out[x, data.losers] = True
    return out


def _incidence(w: np.ndarray, lo: np.ndarray, Y: int) -> np.ndarray:
    """(m, Y) rows e_w - e_l of the pairs with w != l (ties carry no information)."""
    keep = w != lo
    B = np.zeros((int(keep.sum()), Y))
    B[np.arange(B.shape[0]), w[keep]] += 1.0
    B[np.arange(B.shape[0]), lo[keep]] -= 1.0
    return B


def _component_means_zero(delta: np.ndarray, B: np.ndarray, Y: int) -> np.ndarray:
    adj = (np.abs(B).T @ np.abs(B)) > 0
    _, label = connected_components(adj, directed=False)
    out = delta.copy()
    for c in np.unique(label):
        members = label == c
        out[members] -= out[members].mean()
    return out


def _dpo_finite(B: np.ndarray, Y: int) -> bool:
    """The BT likelihood has a finite maximiser iff, within every component of the comparison
    graph, every response reaches every other along win edges (strong connectivity)."""
    if B.shape[0] == 0:
        return True
    wins = np.zeros((Y, Y), dtype=bool)
    wins[np.argmax(B, axis=1), np.argmin(B, axis=1)] = True
    n_weak, weak = connected_components(wins, directed=True, connection="weak")
    n_strong, strong = connected_components(wins, directed=True, connection="strong")
    return n_weak == n_strong


def empirical_optimum(
    task: TokenTreeTask, data: PairData, loss: str, beta: float
) -> tuple[np.ndarray, np.ndarray]:
    """The predicted limit of training on ``data`` from theta_0 = log ref: (P, Y) sequence
    log-probabilities (NaN rows where DPO has no finite minimiser) and (P,) bool finite."""
    check_one_token(task)
    if loss not in LOSSES:
        raise ValueError(f"loss must be one of {LOSSES}, got {loss!r}")
    P, Y = task.n_prompts, task.n_responses
    theta0 = task.ref_logprobs
    out = np.full((P, Y), np.nan)
    finite = np.ones(P, dtype=bool)
    for x in range(P):
        B = _incidence(data.winners[x], data.losers[x], Y)
        if loss == "ipo":  # min sum_i (B delta - 1/(2 tau))^2: the min-norm solution
            delta = np.linalg.pinv(B.T @ B) @ (B.T @ np.full(B.shape[0], 1.0 / (2.0 * beta)))
        else:
            if not _dpo_finite(B, Y):
                finite[x] = False
                continue
            delta = _bt_newton(B, beta, Y)
        delta = _component_means_zero(delta, B, Y) if B.shape[0] else np.zeros(Y)
        logits = theta0[x] + delta
        out[x] = logits - np.logaddexp.reduce(logits)
    return out, finite


def _bt_newton(B: np.ndarray, beta: float, Y: int) -> np.ndarray:
    """argmin_delta sum_i -log sigmoid(beta (B delta)_i) by damped Newton (convex)."""
    delta = np.zeros(Y)

    def f(d):
        return np.logaddexp(0.0, -beta * (B @ d)).sum()

    for _ in range(200):
        s = 1.0 / (1.0 + np.exp(beta * (B @ delta)))  # sigmoid(-beta h)
        g = -beta * B.T @ s
        H = beta**2 * (B.T * (s * (1.0 - s))) @ B
        step = -np.linalg.pinv(H) @ g
        t, f0 = 1.0, f(delta)
        while f(delta + t * step) > f0 + 0.25 * t * (g @ step) and t > 1e-12:
            t *= 0.5
        delta = delta + t * step
        # converged: the gradient vanishes, or the iterate no longer moves beyond round-off (at
        # n ~ 8000 pairs the gradient can stall near 1e-8, where 200 iterations of 1e-12 steps
        # and 40-halving line searches took 3 s per call and moved delta by < 1e-10)
        if np.abs(g).max() < 1e-13 or np.abs(t * step).max() <= 1e-11 * max(
            1.0, np.abs(delta).max()
        ):
            break
    return delta


def coverage_term(task: TokenTreeTask, data: PairData, target_logp: np.ndarray) -> np.ndarray:
    """(P,) c(U) = min_kappa 1/2 sum_{y unsampled} |kappa ref(y) - target(y)|: the TV to
    ``target`` that any policy keeping the reference's relative mass off the data must pay."""
    P, Y = task.n_prompts, task.n_responses
    ref, tgt = np.exp(task.ref_logprobs), np.exp(target_logp)
    cov = covered(data, Y)
    out = np.zeros(P)
    for x in range(P):
        u = ~cov[x]
        if not u.any():
            continue
        ratio, w = tgt[x, u] / ref[x, u], ref[x, u]
        order = np.argsort(ratio)
        cw = np.cumsum(w[order])
        kappa = ratio[order][np.searchsorted(cw, 0.5 * cw[-1])]  # weighted median
        out[x] = 0.5 * np.abs(kappa * ref[x, u] - tgt[x, u]).sum()
    return out


def train_on_pairs(
    task: TokenTreeTask, data: PairData, loss: str, beta: float, max_iter: int = 400
) -> np.ndarray:
    """Minimise the registered loss (the mean over a prompt's n pairs) over the logit table from
    theta_0 = log ref with L-BFGS, one prompt at a time (the prompts' problems are independent; a
    prompt whose DPO loss has no minimiser would otherwise slow the others' convergence). L-BFGS
    steps are combinations of gradients, so the invariants of the module docstring hold; returns
    (P, Y) sequence log-probabilities."""
    check_one_token(task)
    fn = make_loss("dpo", beta=beta) if loss == "dpo" else make_loss("ipo", tau=beta)
    out = np.empty((task.n_prompts, task.n_responses))
    for x in range(task.n_prompts):
        ref = torch.tensor(task.ref_logprobs[x], dtype=D)
        theta = ref.clone().requires_grad_(True)
        w, lo = torch.as_tensor(data.winners[x]), torch.as_tensor(data.losers[x])
        opt = torch.optim.LBFGS(
            [theta], lr=1.0, max_iter=max_iter, tolerance_grad=1e-14, tolerance_change=1e-18,
            history_size=50, line_search_fn="strong_wolfe",
        )  # fmt: skip

        def closure(theta=theta, opt=opt, ref=ref, w=w, lo=lo):
            opt.zero_grad()
            logp = torch.log_softmax(theta, dim=0)
            value = fn(logp[w], logp[lo], ref[w], ref[lo])
            value.backward()
            return value

        opt.step(closure)
        with torch.no_grad():
            out[x] = torch.log_softmax(theta, dim=0).numpy()
    return out
