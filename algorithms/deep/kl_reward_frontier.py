"""The exact KL-reward frontier of a token tree and the points clipped policy-gradient learners
(P3O, value-free PPO) reach on it (seed row 002-004#E3, P3O's "KL-Reward trade-off").

The frontier. For a KL budget k, F(k) = max { mean_x E_pi r(x, .) : mean_x KL(pi(.|x) || ref(.|x))
<= k }. The Lagrangian separates over prompts with one multiplier 1/beta, so F is traced by
pi*_beta(y|x) ∝ ref(y|x) exp(r(x, y) / beta) on the enumerated responses: F is concave and
increasing, F(KL(pi*_beta)) = E_{pi*_beta} r, and *every* policy's point (KL, E r) lies on or
below it. :class:`ExactFrontier` holds the closed form and inverts a budget by a root search on
log beta.

The learners: :func:`clipped_rounds` runs PPO-style rounds on a
:class:`~theorylab.algorithms.deep.twins.LogitTable`: each round freezes pi_old, draws G = 2
responses per prompt from it (``batch`` groups per prompt; ``batch = 0``: the exact expectation
over every ordered pair, ``pacs.group_expectation``) and takes ``epochs`` gradient steps on the
group loss at pi_theta != pi_old (off-policy reuse; the clip is active), then records the policy's
exact (KL, E r). The group losses: the registered ``p3o`` (pairwise advantage r~_i - r~_j) and
:func:`value_free_ppo`, the registered ``ppo-clip`` with the value-free advantage A_i = r~_i
(r~ = r + c(x) - beta sum_t log pi_old / ref, the KL in the reward as RLHF PPO puts it). Both see
the same draws (same seed).

On pairs, P3O's advantage of y_1 is r~_1 - r~_2: PPO with the partner as a leave-one-out baseline,
and a trajectory ratio. On-policy and in expectation its gradient equals value-free PPO's
(E[c(x) grad log pi] = 0), and the fixed point of both is pi*_beta (at pi = pi_old the gradient of
E_pi r~ is the gradient of E_pi r - beta KL). What separates them here is (i) the variance of a
sampled batch (value-free PPO's gradient carries (r + c(x)) grad log pi, not a difference), and
(ii) the clip under off-policy reuse, which value-free PPO applies by the sign of r~ + c(x)
(measured with exact expectations under r + c(x): 0.19 below the frontier on V=3, L=2, 1e-4 on
V=3, L=3 -- instance-dependent). Weak duality bounds the distance: F(KL(pi)) - E_pi r <=
beta KL(pi || pi*_beta) for every beta.

Read [V]: the catalogue row (P3O's frontier "at or above PPO's" on the "KL-Reward trade-off").
Reconstructed [A]: the experiment -- the instance, the round schedule (frozen pi_old, draws,
SGD epochs), value-free PPO as the baseline (the paper's PPO has a learned critic, not
reproduced) -- is this module's design, not the paper's.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from scipy.optimize import brentq

from theorylab.mdps.token_tree import TreeTask


# --------------------------------------------------------------------------- the exact frontier
def policy_point(task: TreeTask, seq_logp: np.ndarray) -> tuple[float, float]:
    """(mean_x KL(pi || ref), mean_x E_pi r) of a (P, Y) sequence log-probability table."""
    kl = task.kl(seq_logp, task.ref_logprobs).mean()
    return float(kl), float(task.expected_reward(seq_logp).mean())


class ExactFrontier:
    """F(k) of a task (module docstring), from its (P, Y) rewards and reference: pi*_beta in
    closed form on the enumerated responses (independent of the tree's soft VI)."""

    def __init__(self, task: TreeTask) -> None:
        self.r = task.mean_reward  # (P, Y)
        self.ref = task.ref_logprobs  # (P, Y)
        best = np.isclose(self.r, self.r.max(axis=1, keepdims=True), rtol=0.0, atol=1e-12)
        mass = np.where(best, np.exp(self.ref), 0.0).sum(axis=1)  # (P,) ref mass of the best
        self.kl_max = float(-np.log(mass).mean())  # the beta -> 0 end
        self.r_max = float(self.r.max(axis=1).mean())
        self.r_ref = float((np.exp(self.ref) * self.r).sum(axis=1).mean())  # the beta -> inf end

    def point(self, beta: float) -> tuple[float, float]:
        """(mean KL(pi*_beta || ref), mean E_{pi*_beta} r)."""
        u = self.r / beta  # (P, Y)
        z = u + self.ref
        top = z.max(axis=1, keepdims=True)
        log_z = top + np.log(np.exp(z - top).sum(axis=1, keepdims=True))  # (P, 1)
        p = np.exp(z - log_z)  # (P, Y) pi*_beta
        return float((p * (u - log_z)).sum(axis=1).mean()), float((p * self.r).sum(axis=1).mean())

    def reward_at(self, kl: float) -> tuple[float, float]:
        """(beta, F(kl)): the largest mean reward at mean KL <= kl and the beta attaining it (0 at
        the greedy end, inf at the reference)."""
        if kl >= self.kl_max * (1 - 1e-12):
            return 0.0, self.r_max
        if kl <= 1e-14:
            return np.inf, self.r_ref
        lo, hi = -3.0, 3.0  # log10 beta
        while self.point(10.0**lo)[0] < kl:
            lo -= 1.0
        while self.point(10.0**hi)[0] > kl:
            hi += 1.0
        log_beta = brentq(lambda s: self.point(10.0**s)[0] - kl, lo, hi, xtol=1e-13)
        return float(10.0**log_beta), self.point(10.0**log_beta)[1]

    def gap(self, kl: float, reward: float) -> float:
        """F(kl) - reward: >= 0 for every policy (a negative gap beyond rounding is a bug)."""
        return self.reward_at(kl)[1] - reward


# --------------------------------------------------------------------------- the learners
def value_free_ppo(clip_eps: float = 0.2, beta: float = 0.0):
    """The registered ``ppo-clip`` with the single-response advantage A_i = r~_i (no baseline),
    r~ = r - beta sum_t log pi_old / ref, as a group loss (the ``p3o`` signature)."""
    from theorylab.algorithms.deep.masking import masked_sum
    from theorylab.algorithms.deep.registry import make_loss

    ppo = make_loss("ppo-clip", clip_eps=clip_eps, aggregation="seq-mean-token-sum-norm")

    def loss(logp, old_logp, ref_logp, mask, rewards, group, weights=None):
        shaped = rewards.detach().to(logp.dtype)
        if beta > 0:
            old = logp.detach() if old_logp is None else old_logp.detach()
            shaped = shaped - beta * masked_sum(old - ref_logp.detach(), mask)
        # seq-mean-token-sum-norm divides by the padded length T: undo it, sum over tokens
        return ppo(logp, old_logp, shaped, mask, None, weights) * mask.shape[1]

    return loss


LEARNERS = ("p3o", "ppo")


def learner_loss(name: str, clip_eps: float, beta: float):
    """The group loss of a learner in ``LEARNERS``."""
    if name == "p3o":
        from theorylab.algorithms.deep.registry import make_loss

        return make_loss("p3o", clip_eps=clip_eps, beta=beta)
    if name == "ppo":
        return value_free_ppo(clip_eps, beta)
    raise ValueError(f"learner {name!r} unknown; expected one of {LEARNERS}")


@dataclass
class FrontierRun:
    """One learner at one beta: the exact (KL, E r) after every round (length rounds + 1, the
    reference first) and the mean KL(pi || pi*_beta) at the end."""

    learner: str
    beta: float
    kl: np.ndarray  # (rounds + 1,)
    reward: np.ndarray  # (rounds + 1,)
    kl_to_optimum: float


def clipped_rounds(
    task: TreeTask,
    learner: str,
    beta: float,
    *,
    rounds: int,
    epochs: int = 4,
    lr: float = 1.0,
    batch: int = 0,
    clip_eps: float = 0.2,
    shift: np.ndarray | None = None,
    seed: int = 0,
) -> FrontierRun:
    """PPO-style rounds of ``learner`` from pi = ref (module docstring). ``batch``: pairs drawn per
    prompt per round (0: the exact expectation); ``shift`` (P,) c(x) added to every reward (an
    equivalent reward: the same Bradley-Terry preferences)."""
    from theorylab.algorithms.deep.pacs import group_expectation
    from theorylab.algorithms.deep.twins import LogitTable
    from theorylab.kernels.sampling import draws_per_row

    for key, val in (("rounds", rounds), ("epochs", epochs)):
        if int(val) < 1:
            raise ValueError(f"{key} must be >= 1, got {val}")
    if batch < 0:
        raise ValueError(f"batch must be >= 0 (0: exact expectation), got {batch}")
    P = task.n_prompts
    c = np.zeros(P) if shift is None else np.asarray(shift, dtype=np.float64)
    if c.shape != (P,):
        raise ValueError(f"shift has shape {c.shape}, expected ({P},)")
    rewards = task.mean_reward + c[:, None]  # (P, Y)
    loss = learner_loss(learner, clip_eps, beta)
    pol = LogitTable(task, np.log(task.ref_cond))
    ref_cond = torch.as_tensor(np.log(task.ref_cond))
    rng = np.random.default_rng(seed)
    opt = torch.optim.SGD([pol.theta], lr=lr)
    seq = pol.numpy_seq_logp()
    points = [policy_point(task, seq)]
    for _ in range(rounds):
        old = pol.cond_logp().detach()  # (P, N, V)
        if batch:
            ys = draws_per_row(rng, np.exp(seq), 2 * batch).reshape(-1)  # (P 2 batch,)
            xs = np.repeat(np.arange(P), 2 * batch)
            xt, yt = torch.as_tensor(xs), torch.as_tensor(ys)
            group = torch.arange(P * batch).repeat_interleave(2)
            r = torch.as_tensor(rewards[xs, ys])
            old_tok, ref_tok = pol.token_logp(old, xt, yt), pol.token_logp(ref_cond, xt, yt)
        for _ in range(epochs):
            opt.zero_grad()
            if batch:
                cond = pol.cond_logp()
                value = loss(pol.token_logp(cond, xt, yt), old_tok, ref_tok, pol.mask[yt], r, group)
            else:
                value = group_expectation(task, pol, 2, loss, old, rewards)
            value.backward()
            opt.step()
        seq = pol.numpy_seq_logp()
        points.append(policy_point(task, seq))
    kl, reward = np.array(points).T
    to_opt = float(task.kl(seq, task.optimum_by_enumeration(beta)).mean())
    return FrontierRun(learner, beta, kl, reward, to_opt)
