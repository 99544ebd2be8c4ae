r"""Inverse RL without RL: moment matching whose inner policy search resets to expert states.

Seed reference: ``seed-catalogue-000.md#43`` (row 000#43, L245). Paper: Gokul Swamy, David Wu,
Sanjiban Choudhury, J. Andrew Bagnell, Zhiwei Steven Wu, "Inverse Reinforcement Learning without
Reinforcement Learning", ICML 2023, arXiv:2303.14623 (author list as recalled [M]).

What was read: the seed catalogue's row and abstract quotation [V] ("we utilize the state
distribution of the expert to alleviate the global exploration component of the RL subroutine,
providing an exponential speedup in theory"); the authors' public code ``gkswamy98/fast_irl``
(FILTER) [V]: ``learners/gym_wrappers.py`` ``ResetWrapper.reset`` starts an episode, with
probability ``alpha`` (0.5; 0 is plain moment matching, "mm"), from an expert demonstration's
state at a uniformly drawn time t and runs to the horizon; ``learners/filt.py`` alternates policy
steps with a discriminator (the reward player: ``f_expert.mean() - f_learner.mean()``, optimistic
Adam), the no-regret variant on a replay buffer of all past learner data. The paper's PDF, its
MMDP / NRMM pseudo-code and its theorem constants were not available here: the tabular algorithm
below is reconstructed [A] from those pieces, the PSDP policy player from Bagnell, Kakade, Ng and
Schneider (2003) [M], which the paper's dynamic-programming variant (MMDP) builds on [M].

Algorithm (reconstructed [A]), finite horizon H, per seed, moment class
F = {f : (h, s, a) -> [-1, 1], f_h = 0 off the moment steps} (``moments``: the last step only or
every step), expert occupancy d^E estimated from the demonstrations:

    f_1 = 0
    for t = 1..T:                                     (T = rounds)
        pi_t = PSDP(f_t): for h = H-1 down to 0:
                   draw n states s ~ nu_h, a ~ Unif(A) per state  (n = ``samples``)
                   G = sum_{k >= h} f_k(s_k, a_k), a_h = a, a_k = pi_t[k](s_k) for k > h
                   pi_t[h](s) = argmax over the actions tried at s of the mean G
                   (ties uniformly; a state never drawn: a uniformly random action)
        d_t = empirical occupancy of ``moment_rollouts`` roll-outs of pi_t from mu0
        f_{t+1} = clip(f_t + eta (d^E - d_t), -1, 1)  on the moment steps  (projected OGD)
    output the uniform mixture pi_bar_T of pi_1..pi_T

The reset distribution nu_h is the paper's idea:

* ``resets="expert"``: nu_h = the demonstrations' states at step h (the roll-out starts there:
  H - h transitions);
* ``resets="start"``: standard RL with a start-state simulator: a roll-in from mu0 with uniform
  actions for h steps, then the roll-out (H transitions). This is the baseline the paper improves
  on (FILTER's alpha = 0) and the claim's negative control.

Why it matters (the claim ``irl-expert-resets-horizon``): on a combination lock with
last-step moments the reward player's f is non-zero only at step H - 1, so PSDP learns level h
only from a sample that stands on the lock's path state h and tries its code action. From the
start state that has probability A^-(h+1) per sample; from the expert's state it has probability
1/A. With every other level right, level h comes out right with probability exactly

    q_h(n) = 1 - (1 - c_h)^n + (1 - v_h)^n / A,   c_h = v_h / A,
    v_h = A^-h (start) or 1 (expert)                                 (a never-drawn state guesses)

and a round whose f favours the code is exactly optimal with probability prod_h q_h(n): n grows
like A^H without resets and like A log H with them. The moment gap of the mixture obeys the
no-regret reduction: sup_F <f, d^E - d(pi_bar_T)> <= (Regret_T + sum_t eps_t) / T, with
eps_t = max_pi <f_t, d^pi> - <f_t, d^{pi_t}> the policy player's best-response error and
Zinkevich's Regret_T <= d / (2 eta) + (eta / 2) sum_t ||d^E - d_t||^2 for f_1 = 0 on the box
[-1, 1]^d (exact when d^E and d_t are, e.g. deterministic lock, deterministic policies).

Choices and deviations [A]:

* tabular PSDP with uniform exploratory actions stands in for the paper's policy player (SAC in
  FILTER): the same sampler for both reset distributions, so only nu_h differs;
* FILTER mixes the two resets (alpha = 0.5); here ``resets`` picks one of them (alpha = 1 or 0):
  a mixture halves the samples where it matters and changes no rate;
* the reward player is projected online gradient ascent with a fixed step ``eta`` (FILTER:
  optimistic Adam on a neural discriminator with a gradient penalty);
* the learner never reads the model's reward: ``mdp`` is used as a simulator (``P``, ``mu0``)
  only (tests/test_inverse_rl.py runs it on a model with the reward erased).

Measured (claim ``irl-expert-resets-horizon``, full scale, A = 2, T = 20, 24 seeds; docs/algorithms/
irl-expert-resets.md): the smallest n (powers of 2) giving a mixture value gap <= 0.1 is 8 at
H = 4, 6, 8, 10 with expert resets (1600 to 8800 inner transitions per seed, log-log slope 1.86)
and 64, 256, 1024, 4096 from the start state (log-slope 0.693 = log 2; 931 times the transitions
at H = 10), both equal to the closed form's n; the mixture's moment gap at T = 20 is 0.171.

Samples are counted in transitions drawn from the simulator: ``inner_samples`` those of PSDP
(roll-ins included), ``moment_samples`` those of the learner's moment estimates.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from theorylab.algorithms.registry import register

RESETS = ("expert", "start")
MOMENTS = ("final", "all")


@dataclass
class IRLRun:
    """What one run returns (per seed b, round t).

    policies ``(B, T, H, S)`` int: pi_t; rewards ``(B, T, H, S, A)``: the f_t each pi_t answered;
    inner_samples, moment_samples ``(B, T)``: transitions drawn in round t by the policy search
    and by the moment estimate; moment_mask ``(H,)`` bool: the steps that carry moments;
    expert_moments ``(B, H, S, A)``: the demonstrations' empirical occupancy (masked)."""

    policies: np.ndarray
    rewards: np.ndarray
    inner_samples: np.ndarray
    moment_samples: np.ndarray
    moment_mask: np.ndarray
    expert_moments: np.ndarray
    config: dict[str, Any] = field(default_factory=dict)


def moment_mask(moments: str, H: int) -> np.ndarray:
    """The steps that carry moments, ``(H,)`` bool: ``final`` (h = H - 1) or ``all``."""
    if moments not in MOMENTS:
        raise ValueError(f"moments must be one of {', '.join(MOMENTS)}, got {moments!r}")
    mask = np.zeros(H, dtype=bool)
    mask[-1 if moments == "final" else slice(None)] = True
    return mask


def empirical_occupancy(states: np.ndarray, actions: np.ndarray, S: int, A: int) -> np.ndarray:
    """``(B, H, S, A)`` visit frequencies of ``states, actions (B, N, H)`` ints."""
    B, N, H = states.shape
    d = np.zeros((B, H, S, A))
    b = np.broadcast_to(np.arange(B)[:, None, None], states.shape)
    h = np.broadcast_to(np.arange(H)[None, None, :], states.shape)
    np.add.at(d, (b, h, states, actions), 1.0 / N)
    return d


class Simulator:
    """Sampling from ``P (S, A, S)`` and ``mu0 (S,)`` (never the reward), batched over seeds:
    arrays are ``(B, n)``, seed b drawing from ``rngs[b]`` alone (a seed gives the same numbers
    alone or in a batch)."""

    def __init__(self, mdp, rngs: Sequence[np.random.Generator]) -> None:
        self.cdf = np.cumsum(mdp.dense_P(), axis=-1)  # (S, A, S)
        self.mu0_cdf = np.cumsum(np.asarray(mdp.mu0, dtype=float))  # (S,)
        self.S, self.A, self.H = mdp.S, mdp.A, int(mdp.horizon)
        self.rngs = list(rngs)
        self.seed = np.arange(len(self.rngs))[:, None]  # (B, 1) index of the seed axis

    def uniform(self, n: int) -> np.ndarray:
        return np.stack([g.random(n) for g in self.rngs])  # (B, n)

    def integers(self, high: int, n: int) -> np.ndarray:
        return np.stack([g.integers(0, high, size=n) for g in self.rngs])  # (B, n)

    def start(self, n: int) -> np.ndarray:
        u = self.uniform(n)
        return np.minimum((u[..., None] >= self.mu0_cdf).sum(-1), self.S - 1)

    def step(self, s: np.ndarray, a: np.ndarray) -> np.ndarray:
        u = self.uniform(s.shape[1])
        return np.minimum((u[..., None] >= self.cdf[s, a]).sum(-1), self.S - 1)


def psdp(sim: Simulator, f: np.ndarray, reset_states, n: int) -> tuple[np.ndarray, np.ndarray]:
    """PSDP against the rewards ``f (B, H, S, A)``: the policies ``(B, H, S)`` int and the
    transitions drawn ``(B,)``. ``reset_states(h, n) -> ((B, n) states, transitions used)``."""
    B, H, S, A = f.shape
    pi = np.zeros((B, H, S), dtype=np.int64)
    used = np.zeros(B, dtype=np.int64)
    bi = sim.seed  # (B, 1)
    for h in range(H - 1, -1, -1):
        s0, cost = reset_states(h, n)  # (B, n)
        a0 = sim.integers(A, n)  # (B, n) uniform exploratory actions
        G = f[bi, h, s0, a0]  # (B, n) returns from step h on
        s, a = s0, a0
        for k in range(h + 1, H):
            s = sim.step(s, a)
            a = pi[bi, k, s]
            G = G + f[bi, k, s, a]
        used += cost + n * (H - h)  # the roll-in, the first action's transition, the roll-out
        total, count = np.zeros((B, S, A)), np.zeros((B, S, A))
        b = np.broadcast_to(bi, s0.shape)
        np.add.at(total, (b, s0, a0), G)
        np.add.at(count, (b, s0, a0), 1.0)
        score = np.where(count > 0, total / np.maximum(count, 1.0), -np.inf)  # (B, S, A)
        top = score == score.max(axis=2, keepdims=True)  # all True where nothing was tried
        keys = np.where(top, sim.uniform(S * A).reshape(B, S, A), -1.0)
        pi[:, h] = keys.argmax(axis=2)  # uniform among the best tried actions
    return pi, used


def reset_sampler(resets: str, sim: Simulator, demo_states: np.ndarray):
    """PSDP's reset distribution nu_h as ``(h, n) -> ((B, n) states, transitions used)``:
    ``expert``: the states at step h of uniformly drawn demonstrations ``demo_states (B, N,
    H)``; ``start``: a roll-in of h uniform actions from mu0 (h transitions per state)."""
    N, A = demo_states.shape[1], sim.A

    def reset_states(h: int, n: int) -> tuple[np.ndarray, int]:
        if resets == "expert":
            return demo_states[sim.seed, sim.integers(N, n), h], 0
        s = sim.start(n)
        for _ in range(h):
            s = sim.step(s, sim.integers(A, n))
        return s, n * h

    return reset_states


def reward_step(f: np.ndarray, g: np.ndarray, eta: float) -> np.ndarray:
    """The reward player's projected gradient step: ``clip(f + eta g, -1, 1)``."""
    return np.clip(f + eta * g, -1.0, 1.0)


@register("irl-expert-resets", kind="irl", problem="tabular", bounds=(), papers=("000#43",))
def fit_irl_expert_resets(
    mdp,
    expert,
    rounds: int,
    rngs: Sequence[np.random.Generator],
    *,
    resets: str = "expert",
    samples: int = 8,
    eta: float = 1.0,
    moments: str = "final",
    moment_rollouts: int = 4,
) -> IRLRun:
    """Moment-matching IRL with a PSDP policy player (see the module docstring).

    expert: the demonstrations, ``(states, actions)`` ints ``(B, N, H)``.
    resets: where PSDP's samples start: ``expert`` (the demonstrations' state at that step) or
        ``start`` (a uniform roll-in from mu0: standard RL).
    samples: n, PSDP's samples per step and round.
    eta: the reward player's gradient step.
    moments: ``final`` (the last step's state-action frequencies) or ``all`` (every step's).
    moment_rollouts: roll-outs of pi_t from mu0 that estimate its moments.
    """
    if resets not in RESETS:
        raise ValueError(f"resets must be one of {', '.join(RESETS)}, got {resets!r}")
    for name, value in (("samples", samples), ("moment_rollouts", moment_rollouts)):
        if isinstance(value, bool) or int(value) != value or value < 1:
            raise ValueError(f"{name} must be an integer >= 1, got {value!r}")
    if not (np.isfinite(eta) and eta > 0):
        raise ValueError(f"eta must be a finite step > 0, got {eta!r}")
    S, A, H, T = mdp.S, mdp.A, int(mdp.horizon), int(rounds)
    mask = moment_mask(moments, H)
    e_states, e_actions = (np.asarray(x, dtype=np.int64) for x in expert)  # (B, N, H)
    B, N = e_states.shape[:2]
    if e_states.shape != (len(rngs), N, H) or e_actions.shape != e_states.shape:
        raise ValueError(
            f"expert must be (states, actions) of shape (B, N, H) = ({len(rngs)}, N, {H}), got "
            f"{e_states.shape} and {e_actions.shape}"
        )
    sim = Simulator(mdp, rngs)
    d_E = empirical_occupancy(e_states, e_actions, S, A) * mask[None, :, None, None]
    policies = np.zeros((B, T, H, S), dtype=np.int64)
    rewards = np.zeros((B, T, H, S, A))
    inner, moment = np.zeros((B, T), dtype=np.int64), np.zeros((B, T), dtype=np.int64)
    m = int(moment_rollouts)
    reset_states = reset_sampler(resets, sim, e_states)
    f = np.zeros((B, H, S, A))  # the reward player's iterates
    for t in range(T):
        rewards[:, t] = f
        pi, inner[:, t] = psdp(sim, f, reset_states, int(samples))  # (B, H, S)
        policies[:, t] = pi
        states = np.empty((B, m, H), dtype=np.int64)  # (B, m, H) roll-outs of pi_t from mu0
        s = sim.start(m)
        for h in range(H):
            states[:, :, h] = s
            if h + 1 < H:
                s = sim.step(s, pi[sim.seed, h, s])
        moment[:, t] = m * (H - 1)
        acts = pi[sim.seed[:, :, None], np.arange(H)[None, None, :], states]  # (B, m, H)
        d_t = empirical_occupancy(states, acts, S, A)  # (B, H, S, A)
        f = reward_step(f, d_E - d_t * mask[None, :, None, None], eta)
    return IRLRun(
        policies=policies,
        rewards=rewards,
        inner_samples=inner,
        moment_samples=moment,
        moment_mask=mask,
        expert_moments=d_E,
        config={
            "resets": resets,
            "samples": int(samples),
            "eta": float(eta),
            "moments": moments,
            "moment_rollouts": m,
            "demos": int(N),
        },  # fmt: skip
    )
