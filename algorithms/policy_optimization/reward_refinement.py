r"""Reward refinement against PRM hacking: the "Clip" and "Delta" mechanisms, exactly on a step
MDP where repeating a correct step earns process reward.

Seed reference: ``seed-catalogue-002-004.md#G6``. Paper: Gao, Xu, Wu et al., "On Designing
Effective RL Reward at Training Time for LLM Reasoning" (2024, arXiv:2410.15115). Card:
docs/algorithms/reward-refinement.md.

What was read [V] (the abstract, through the catalogue row): "an LLM can receive high rewards from
some of these reward models by repeating correct but unnecessary reasoning steps"; the two
refinements "Clipping" and "Delta" follow one design invariant, "The key idea is to ensure the
accumulative reward of any reasoning trajectory is upper-bounded to keep a learned reward model
effective without being exploited" (a design principle, not a theorem). Reconstructed [A] (the
paper's exact thresholds were not read; the catalogue's assumptions):

* raw: the step reward is the PRM's p_t;
* Clip: ``min(p_t - eta, 0)`` (every step reward <= 0, so the process part of the return is <= 0);
* Delta: ``p_t - p_{t+1}`` for t < n - 1 and ``p_{n-1}`` on the last step, which telescopes: the
  process part of any trajectory's return is p_0, whatever its length;

plus the outcome reward ``success`` on a correct answer. On :class:`~theorylab.mdps.
reasoning_steps.ReasoningSteps` (stage- and step-dependent PRM rewards ``prm[t, k, a]``) the
optimal trajectory is found by enumerating every trajectory (:func:`enumerate_trajectories`) and,
independently, by backward induction on (t, k) for the Markov rewards raw and Clip
(:func:`markov_optimum`) and by the telescoped closed form for Delta (:func:`delta_optimum`).
With raw rewards the optimum repeats until the budget runs out (return grows with T); with Clip or
Delta the optimal return is bounded uniformly in T and the optimum answers correctly.

Registered ``reward-refinement`` (kind ``policy-optimization``, problem ``reasoning-steps``): the
"iterates" are the step budgets T = 0..K (K <= the task's T): ``regularised[T]`` the optimal
refined return with budget T, ``objective[T]`` 1 if that optimal trajectory answers correctly,
``entropy[T]`` its length (steps; not nats: the optimum is deterministic), ``policies[T]`` its
actions padded with -1; ``target_gap`` and ``target_value`` NaN. T = 0 is the empty trajectory.
"""

from __future__ import annotations

import numpy as np

from theorylab.algorithms.policy_optimization.path import (
    PolicyPath,
    check_iterations,
    check_number,
)
from theorylab.algorithms.registry import register
from theorylab.mdps.reasoning_steps import ADVANCE, ANSWER, REPEAT, ReasoningSteps

PAPERS = ("002-004#G6",)
MODES = ("raw", "clip", "delta")


def refine(p: np.ndarray, mode: str, eta: float = 0.5) -> np.ndarray:
    """The refined step rewards (n,) of one trajectory's PRM rewards ``p`` (n,)."""
    p = np.asarray(p, dtype=np.float64)
    if mode == "raw":
        return p.copy()
    if mode == "clip":
        return np.minimum(p - eta, 0.0)
    if mode == "delta":
        return np.append(p[:-1] - p[1:], p[-1:]) if p.size else p.copy()
    raise ValueError(f"reward-refinement: mode must be one of {', '.join(MODES)}, got {mode!r}")


def enumerate_trajectories(task: ReasoningSteps) -> list[tuple[tuple[int, ...], np.ndarray, bool]]:
    """Every trajectory within the budget: (actions, PRM rewards (n,), answered correctly)."""
    out = []

    def walk(t: int, k: int, acts: tuple[int, ...], p: tuple[float, ...]) -> None:
        if t == task.T:  # budget spent without an answer
            out.append((acts, np.array(p), False))
            return
        out.append((acts + (ANSWER,), np.array(p + (task.prm[t, k, ANSWER],)), k == task.H))
        if k < task.H:
            walk(t + 1, k + 1, acts + (ADVANCE,), p + (task.prm[t, k, ADVANCE],))
        walk(t + 1, k, acts + (REPEAT,), p + (task.prm[t, k, REPEAT],))

    walk(0, 0, (), ())
    return out


def trajectory_returns(task: ReasoningSteps, mode: str, eta: float = 0.5):
    """(returns (M,), answered correctly (M,) bool, actions list) over every trajectory."""
    trajs = enumerate_trajectories(task)
    ret = np.array([refine(p, mode, eta).sum() + task.success * ok for _, p, ok in trajs])
    return ret, np.array([ok for _, _, ok in trajs]), [a for a, _, _ in trajs]


def markov_optimum(task: ReasoningSteps, mode: str, eta: float = 0.5) -> float:
    """The optimal return by backward induction on (t, k) for the Markov rewards raw and clip:
    V_t(k) = max_a f(prm[t, k, a]) + success 1[a = ANSWER, k = H] + V_{t+1}(k') (V_T = 0)."""
    if mode not in ("raw", "clip"):
        raise ValueError(f"markov_optimum: mode must be raw or clip, got {mode!r}")
    f = task.prm if mode == "raw" else np.minimum(task.prm - eta, 0.0)  # (T, H+1, 3)
    v = np.zeros(task.H + 1)  # V_T
    for t in range(task.T - 1, -1, -1):
        q = np.full((task.H + 1, 3), -np.inf)
        q[:, ANSWER] = f[t, :, ANSWER] + task.success * (np.arange(task.H + 1) == task.H)
        q[:, REPEAT] = f[t, :, REPEAT] + v
        q[:-1, ADVANCE] = f[t, :-1, ADVANCE] + v[1:]
        v = q.max(1)
    return float(v[0])


def delta_optimum(task: ReasoningSteps) -> float:
    """The optimal Delta return in closed form: the process part telescopes to the first step's
    PRM reward, so the best is max over the first action of p(0, 0, a) + success when a correct
    answer is still reachable in the budget (ADVANCE: H + 1 <= T steps; REPEAT: H + 2 <= T)."""
    p0 = task.prm[0, 0]
    reach = {ADVANCE: task.H + 1 <= task.T, REPEAT: task.H + 2 <= task.T, ANSWER: False}
    return float(max(p0[a] + task.success * reach[a] for a in (ADVANCE, REPEAT, ANSWER)))


@register("reward-refinement", kind="policy-optimization", problem="reasoning-steps",
          papers=PAPERS)  # fmt: skip
def reward_refinement(problem, iterations, mode: str = "clip", eta: float = 0.5) -> PolicyPath:
    """The optimal trajectory under raw, clipped or delta PRM rewards for budgets T = 0..K."""
    if not isinstance(problem, ReasoningSteps):
        raise ValueError(f"reward-refinement runs on a reasoning-steps task (e.g. "
                         f"reasoning-steps:H=3,T=10), got {type(problem).__name__}")  # fmt: skip
    K = check_iterations("reward-refinement", iterations)
    if K > problem.T:
        raise ValueError(f"reward-refinement: iterations (the largest budget) must be <= the "
                         f"task's T = {problem.T}, got {K}")  # fmt: skip
    if mode not in MODES:
        raise ValueError(f"reward-refinement: mode must be one of {', '.join(MODES)}, got {mode!r}")
    eta = check_number("reward-refinement", "eta", eta, positive=False)
    best, ok, length = [0.0], [0.0], [0.0]
    acts = [np.full(K, -1)]
    for T in range(1, K + 1):
        ret, correct, actions = trajectory_returns(problem.truncated(T), mode, eta)
        i = int(np.argmax(ret))
        best.append(float(ret[i]))
        ok.append(float(correct[i]))
        length.append(float(len(actions[i])))
        acts.append(np.pad(np.array(actions[i]), (0, K - len(actions[i])), constant_values=-1))
    return PolicyPath(
        objective=np.array(ok),
        regularised=np.array(best),
        entropy=np.array(length),
        target_gap=np.full(K + 1, np.nan),
        target_value=float("nan"),
        policies=np.stack(acts),
        config={"mode": mode, "eta": eta, "task": problem.name},
    )
