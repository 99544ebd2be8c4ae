"""Q#, RTO, REFUEL and EXO as runs of ``kind="deep"`` (``tl.run("qsharp-twin",
"tokentree-eos:V=3,L=3,prompts=2")``): each produces a :class:`~theorylab.algorithms.deep.twins.
TwinTrace` of exact metrics, as the gradient-trained twins do, from the exact twins of
:mod:`~theorylab.algorithms.deep.qsharp`, :mod:`~theorylab.algorithms.deep.rto`,
:mod:`~theorylab.algorithms.deep.regression_twins` and :mod:`~theorylab.algorithms.deep.exo`
(seed rows 000#18, 002-004#E6, 002-004#E5, 000#11; their docstrings say what was read).

What ``steps`` counts, and the predicted point each run's ``tv_predicted`` measures against:

* ``qsharp``: the reference guided by Q#'s Q* (exact mode: the certainty equivalent of the
  enumerated return distribution; sampled mode: the plug-in estimate from ``s x batch``
  reference roll-outs per (h, a) at record step s). Predicted: pi*_beta.
* ``rto``: ``steps`` gradient steps of the DPO twin (stage 1, at beta), then the token-level soft
  optimum with the token rewards beta log pi_DPO/ref and KL beta2 (stage 2, in closed form).
  Predicted: pi*_beta2 (reached as DPO converges); ``kl_optimum`` is to pi*_beta2 too.
* ``refuel``: ``steps`` REFUEL iterations, each the L-BFGS minimiser of the registered loss's
  exact expectation with the current policy as sampler (:func:`regression_twins.minimise`).
  Predicted: the per-node NPG iterates pi_{t+1}(a|h) ∝ pi_t(a|h) exp(eta Q^{pi_t}(h, a)) from
  ref, in closed form. REFUEL has no KL term: ``kl_optimum`` is to pi*_beta for the given beta.
* ``exo``: ``steps`` gradient steps (per-prompt step size lr, as the twins) on the registered exo
  loss's exact expectation over K = ``group_size`` i.i.d. reference responses, from the uniform
  table. Predicted: pi*_beta, a zero of the loss for every K >= 2 (there p_theta = p_r on every
  K-tuple). Exact mode only.
* ``rover`` (seed row 000#17, :mod:`~theorylab.algorithms.deep.rover`): ROVER's policy
  softmax(Q^{pi_u} / rho) (exact mode: Q^{pi_u} by the tree backup; sampled mode: the mean reward
  of ``s x batch`` uniform roll-outs per (h, a) at record step s). Predicted: the exact-Q
  softmax; ``kl_optimum`` is to pi*_beta for the given beta.
* ``c-rlft`` (seed row 002-004#F7, :mod:`~theorylab.algorithms.deep.c_rlft`): ``steps`` gradient
  steps (step size lr x P C) on the registered c-rlft loss's exact expectation over the mixed
  data of :func:`c_rlft.mixed_quality_data` (expert pi*_0.2, a share ``expert_share``, reward 1;
  a random table, reward ``alpha``), from the uniform class-conditioned table; the recorded
  policy is the expert-conditioned one. Predicted: pi*(.|x, expert) ∝ pi_expert exp(1/beta) =
  pi_expert (soft value iteration on the conditioned tree); ``kl_optimum`` is to pi*_beta.
* ``brorl`` (seed row 002-004#G2, :mod:`~theorylab.algorithms.deep.brorl`): ``steps`` one-step
  BroRL updates (R_c = 1, R_w = -1, step eta) of each prompt's sequence-level logits log pi, the
  responses its vocabulary, from the reference; sampled mode: the sampled set S the distinct
  responses among ``batch`` = N rollouts per prompt and step; exact mode: S every response (the
  N -> oo limit). Predicted: the exact-mode iterate at the last step (the large-N limit);
  ``kl_optimum`` is to pi*_beta for the given beta.
* ``prefixrl`` (seed row 002-004#G4, :mod:`~theorylab.algorithms.deep.prefixrl`): ``steps``
  exact gradient-ascent steps (per-prompt step lr) on the PrefixRL objective, the success of
  on-policy completion from the prefixes of each prompt's longest correct response, prefix
  lengths uniform (0 included), on a per-node logit table from the reference. Exact mode only.
  Predicted: the set of root-optimal policies (all mass on correct responses), each a maximiser
  of the objective; ``tv_predicted`` is the TV to that set, 1 - accuracy (``predicted_seq_logp``
  holds one member, the greedy argmax-Q* policy); ``kl_optimum`` is to pi*_beta.
"""

from __future__ import annotations

import time

import numpy as np
import torch

from theorylab.algorithms.deep.twins import (
    LogitTable,
    TwinTrace,
    trace_from_policies,
    train_twin,
)

RUNS = ("qsharp", "rto", "refuel", "exo", "rover", "c-rlft", "brorl", "prefixrl")


def _schedule(steps: int, record_every: int) -> list[int]:
    every = record_every or max(steps // 100, 1)
    return [0] + [s for s in range(1, steps + 1) if s % every == 0 or s == steps]


def _trace(task, twin, params, marks, seqs, predicted, optimum, k, t0, tv=None) -> TwinTrace:
    """A TwinTrace from the policies (P, Y) at the recorded steps ``marks`` (``tv``: the TV to a
    predicted set, as :func:`trace_from_policies`)."""
    return trace_from_policies(
        task, twin, dict(params, k=k), marks, seqs, predicted, optimum, k, t0, tv=tv
    )


def _qsharp(task, marks, mode, batch, seed, beta):
    from theorylab.algorithms.deep import qsharp

    rng = np.random.default_rng(seed)
    seqs = [task.ref_logprobs]
    for s in marks[1:]:
        q = (qsharp.qsharp_q(task, beta) if mode == "exact"
             else qsharp.sampled_q(task, beta, s * batch, rng))  # fmt: skip
        seqs.append(task.sequence_logprobs(qsharp.guided_policy(task, q, beta)))
    opt = task.soft_optimum(beta).seq_logp
    return seqs, opt, opt


def _rto(task, marks, beta, beta2, lr):
    from theorylab.algorithms.deep import rto

    seqs = [task.ref_logprobs]
    theta = None
    for a, b in zip(marks, marks[1:], strict=False):  # DPO continues from the last record
        tr = train_twin(task, "dpo", steps=b - a, lr=lr, beta=beta, theta0=theta, record_every=b)
        theta = tr.extra["theta"]
        dpo_cond = theta - np.logaddexp.reduce(theta, axis=-1, keepdims=True)
        tok = rto.token_rewards(task, dpo_cond, beta)
        seqs.append(task.sequence_logprobs(rto.token_soft_vi(task, tok, beta2)))
    opt = task.soft_optimum(beta2).seq_logp
    return seqs, opt, opt


def _refuel(task, marks, eta, beta, iters):
    from theorylab.algorithms.deep import regression_twins as rt

    theta = np.log(task.ref_cond)
    pred_cond = theta.copy()
    seqs = [task.ref_logprobs]
    for step in range(1, marks[-1] + 1):
        seq, _, _, theta = rt.minimise(task, "refuel", theta, eta, iters=iters)
        q = task.backup(pred_cond, task.mean_reward, soft=None)
        pred_cond = rt.log_softmax(pred_cond + eta * q)
        if step in marks:
            seqs.append(seq)
    return seqs, task.sequence_logprobs(pred_cond), task.soft_optimum(beta).seq_logp


def _exo(task, marks, beta, group_size, lr):
    from theorylab.algorithms.deep import exo

    pol = LogitTable(task)
    seqs = [pol.numpy_seq_logp()]
    for step in range(1, marks[-1] + 1):
        loss = exo.exo_expectation(task, pol.seq_logp(pol.cond_logp()), group_size, beta)
        (g,) = torch.autograd.grad(loss, pol.theta)
        with torch.no_grad():
            pol.theta -= lr * task.n_prompts * g
        if step in marks:
            seqs.append(pol.numpy_seq_logp())
    opt = task.soft_optimum(beta).seq_logp
    return seqs, opt, opt


def _rover(task, marks, mode, batch, seed, rho, beta):
    from theorylab.algorithms.deep import rover

    rng = np.random.default_rng(seed)
    seqs = [task.ref_logprobs]
    predicted = np.log(rover.sequence_probs(task, rover.rover_policy(rover.uniform_q(task), rho)))
    for s in marks[1:]:
        q = (rover.uniform_q(task) if mode == "exact"
             else rover.sampled_uniform_q(task, s * batch, rng))  # fmt: skip
        seqs.append(np.log(rover.sequence_probs(task, rover.rover_policy(q, rho))))
    return seqs, predicted, task.soft_optimum(beta).seq_logp


def _c_rlft(task, marks, beta, lr, expert_share, alpha, seed):
    from theorylab.algorithms.deep import c_rlft

    data = c_rlft.mixed_quality_data(task, expert_share, alpha, seed=seed)
    cond_task = c_rlft.conditioned_task(data)
    pol = LogitTable(cond_task)
    seqs = [c_rlft.inference_logp(data, pol.numpy_seq_logp(), 0)]
    for step in range(1, marks[-1] + 1):
        (g,) = torch.autograd.grad(c_rlft.exact_objective(data, pol), pol.theta)
        with torch.no_grad():
            pol.theta -= lr * cond_task.n_prompts * g
        if step in marks:
            seqs.append(c_rlft.inference_logp(data, pol.numpy_seq_logp(), 0))
    predicted = c_rlft.inference_logp(data, cond_task.soft_optimum(beta).seq_logp, 0)
    return seqs, predicted, task.soft_optimum(beta).seq_logp


def _brorl(task, marks, mode, batch, seed, eta, beta):
    from theorylab.algorithms.deep import brorl

    rng = np.random.default_rng(seed)
    correct = task.correct.astype(bool)
    limit = brorl.brorl_iterates(task.ref_logprobs, correct, marks[-1], None, rng, eta=eta)
    its = (
        limit
        if mode == "exact"
        else brorl.brorl_iterates(task.ref_logprobs, correct, marks[-1], batch, rng, eta=eta)
    )
    return [its[s] for s in marks], limit[-1], task.soft_optimum(beta).seq_logp


def _prefixrl(task, marks, lr, beta):
    from theorylab.algorithms.deep import prefixrl, rover

    trace = prefixrl.longest_correct(task)
    lt = int(task.token_mask.sum(axis=1)[trace].min())
    conds = prefixrl.train(task, trace, np.full(lt, 1.0 / lt), marks[-1], lr)
    with np.errstate(divide="ignore"):
        seqs = [np.log(rover.sequence_probs(task, conds[s])) for s in marks]
        greedy = rover.greedy_policy(rover.optimal_q_by_enumeration(task))
        predicted = np.log(rover.sequence_probs(task, greedy))
    # the maximisers form a set (every policy on correct responses): TV to it = 1 - accuracy
    tv = np.asarray([1.0 - task.accuracy(s).mean() for s in seqs])
    return seqs, predicted, task.soft_optimum(beta).seq_logp, tv


def run_twin(
    task,
    twin: str,
    *,
    steps: int,
    mode: str = "exact",
    batch: int = 64,
    seed: int = 0,
    record_every: int = 0,
    k: int = 4,
    beta: float = 0.5,
    beta2: float = 0.25,
    eta: float = 1.0,
    lr: float = 1.0,
    group_size: int = 2,
    iters: int = 200,
    rho: float = 0.05,
    expert_share: float = 0.25,
    alpha: float = 0.1,
) -> TwinTrace:
    """Run ``twin`` (one of :data:`RUNS`) for ``steps`` (module docstring) and record exact
    metrics; the keywords not used by ``twin`` are ignored by it."""
    if twin not in RUNS:
        raise ValueError(f"unknown run {twin!r}; expected one of {RUNS}")
    if mode != "exact" and twin not in ("qsharp", "rover", "brorl"):
        raise ValueError(f"{twin}-twin runs in mode 'exact' only, got mode {mode!r}")
    for name, v in (("beta", beta), ("beta2", beta2), ("eta", eta), ("lr", lr), ("rho", rho)):
        if not v > 0:
            raise ValueError(f"{name} must be > 0, got {v!r}")
    if group_size < 2:
        raise ValueError(f"group_size (EXO's K) must be >= 2, got {group_size!r}")
    t0 = time.perf_counter()
    marks = _schedule(steps, record_every)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # tiny tensors
    try:
        if twin == "qsharp":
            params = {"beta": beta}
            out = _qsharp(task, marks, mode, batch, seed, beta)
        elif twin == "rto":
            params = {"beta": beta, "beta2": beta2, "lr": lr}
            out = _rto(task, marks, beta, beta2, lr)
        elif twin == "refuel":
            params = {"eta": eta, "beta": beta, "iters": iters}
            out = _refuel(task, marks, eta, beta, iters)
        elif twin == "c-rlft":
            params = {"beta": beta, "lr": lr, "expert_share": expert_share, "alpha": alpha}
            out = _c_rlft(task, marks, beta, lr, expert_share, alpha, seed)
        elif twin == "rover":
            params = {"rho": rho, "beta": beta}
            out = _rover(task, marks, mode, batch, seed, rho, beta)
        elif twin == "prefixrl":
            params = {"lr": lr, "beta": beta}
            out = _prefixrl(task, marks, lr, beta)
        elif twin == "brorl":
            params = {"eta": eta, "beta": beta}
            out = _brorl(task, marks, mode, batch, seed, eta, beta)
        else:
            params = {"beta": beta, "group_size": group_size, "lr": lr}
            out = _exo(task, marks, beta, group_size, lr)
    finally:
        torch.set_num_threads(threads)
    params.update(mode=mode, steps=steps, seed=seed, batch=batch)
    return _trace(task, twin, params, marks, *out[:3], k, t0, tv=out[3] if len(out) > 3 else None)
