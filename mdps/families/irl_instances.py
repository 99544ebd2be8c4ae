"""Inverse-RL instances (:class:`theorylab.mdps.irl_problem.IRLProblem`; seed row 001#2).

``irl-trap:S=4,A=3,H=5,seed=0,traps=2``: state 0 is a good trap (every action stays, reward
+1), state 1 a bad trap (every action stays, reward -1); every other state is a decision state
whose actions all move to the good trap with the same probability ``q_h(s)`` (drawn in
[0.25, 0.75] from ``seed``) and to the bad trap otherwise, with reward 0. With ``traps=k > 2``
the first k states are traps (rewards +1, -1, +1, ...) and every action of a decision state
moves to them by the same Dirichlet(1) draw per (h, s). The expert takes action 0. Every
action ties, so every advantage is zero: the true reward sits on the feasible set's boundary
at every decision triple, and the value range at stage h is ``H - h`` on each side -- the
instance on which the reward set's estimation error is largest, ``~ (H - 1) |q_hat - q|``.

``irl-random:S=3,A=2,H=3,seed=0``: Dirichlet(1) transitions; the expert and the reward built
backwards: the expert is greedy for ``p V_{h+1}``, its reward is +-1 (a coin per state), every
other action's reward its largest value with zero advantage (clipped at 1), lowered by a
uniform slack on half of the triples.
"""

from __future__ import annotations

import numpy as np

from theorylab.errors import InvalidMDPError
from theorylab.mdps.irl_problem import IRLProblem
from theorylab.mdps.registry import register


def _check(family: str, S: int, A: int, H: int, s_min: int) -> None:
    for key, value, low in (("S", S, s_min), ("A", A, 2), ("H", H, 1)):
        if isinstance(value, bool) or not isinstance(value, int) or value < low:
            raise InvalidMDPError(f"{family}: {key} must be an integer >= {low}, got {value!r}")


@register("irl-trap")
def irl_trap(S: int = 4, A: int = 3, H: int = 5, seed: int = 0, traps: int = 2) -> IRLProblem:
    """The trap instance (module docstring)."""
    if isinstance(traps, bool) or not isinstance(traps, int) or traps < 2:
        raise InvalidMDPError(f"irl-trap: traps must be an integer >= 2, got {traps!r}")
    _check("irl-trap", S, A, H, traps + 1)
    rng = np.random.default_rng([seed, 2304])
    k = traps
    if k == 2:
        q = rng.uniform(0.25, 0.75, size=(H, S))  # (H, S)
        to_traps = np.stack([q, 1.0 - q], axis=-1)  # (H, S, 2)
    else:
        to_traps = rng.dirichlet(np.ones(k), size=(H, S))  # (H, S, k)
    p = np.zeros((H, S, A, S))
    p[:, np.arange(k), :, np.arange(k)] = 1.0
    p[:, k:, :, :k] = to_traps[:, k:, None, :]
    reward = np.zeros((H, S, A))
    reward[:, :k, :] = np.where(np.arange(k) % 2 == 0, 1.0, -1.0)[None, :, None]
    expert = np.zeros((H, S), dtype=np.int64)
    name = f"irl-trap:S={S},A={A},H={H},seed={seed}" + (f",traps={k}" if k != 2 else "")
    return IRLProblem(p, expert, reward, name=name)


@register("irl-random")
def irl_random(S: int = 3, A: int = 2, H: int = 3, seed: int = 0) -> IRLProblem:
    """The random instance (module docstring)."""
    _check("irl-random", S, A, H, 1)
    rng = np.random.default_rng([seed, 1296])
    p = rng.dirichlet(np.ones(S), size=(H, S, A))  # (H, S, A, S)
    expert = np.zeros((H, S), dtype=np.int64)
    reward = np.zeros((H, S, A))
    V = np.zeros(S)  # V_{h+1}
    for h in range(H - 1, -1, -1):
        cont = p[h] @ V  # (S, A)
        expert[h] = np.argmax(cont, axis=1)
        sign = rng.choice((-1.0, 1.0), size=S)
        best = cont[np.arange(S), expert[h]]  # (S,)
        tight = np.minimum(sign[:, None] + best[:, None] - cont, 1.0)  # zero advantage
        slack = rng.uniform(0.0, 1.0, size=(S, A)) * (tight + 1.0)
        reward[h] = tight - np.where(rng.random((S, A)) < 0.5, slack, 0.0)
        reward[h, np.arange(S), expert[h]] = sign
        V = sign + best
    return IRLProblem(p, expert, reward, name=f"irl-random:S={S},A={A},H={H},seed={seed}")
