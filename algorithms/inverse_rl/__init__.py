"""Inverse RL: moment matching against an expert with a sampled inner policy search.

Kind ``"irl"`` (:data:`~theorylab.algorithms.registry.KINDS`): an algorithm is
``fit(mdp, expert, rounds, rngs, **params) -> IRLRun`` (:mod:`.expert_resets`), given a simulator
(the model's transitions only, never its reward) and expert demonstrations; the runner
``theorylab.runners.irl`` scores every round's policy and the mixture exactly. Registered:

* ``irl-expert-resets`` (:mod:`.expert_resets`): a no-regret (projected online gradient) reward
  player against a PSDP policy player whose roll-outs start from the expert's state distribution
  or from the start state (Swamy, Wu, Choudhury, Bagnell, Wu 2023; seed row 000#43);
* ``rhip`` (:mod:`.rhip`): receding-horizon inverse planning, gradient ascent on the likelihood
  of H MaxEnt steps then a Dijkstra tail, on the model's deterministic layered route graph
  (Barnes et al. 2024; seed row 000#55).
"""

from theorylab.algorithms.inverse_rl import (
    expert_resets,  # noqa: F401
    rhip,  # noqa: F401
)
