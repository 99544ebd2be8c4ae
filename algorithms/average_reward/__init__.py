"""Average-reward (non-episodic) learners (seed-coverage family 8).

Kind ``"average-reward"`` (:data:`~theorylab.algorithms.registry.KINDS`): an algorithm is
``factory(mdp, steps, rngs, **params) -> StepRun`` (:mod:`.run_record`), one trajectory of
``steps`` steps per seed generator; the runner ``theorylab.runners.average_reward`` scores it
exactly against the optimal gain g* (:mod:`theorylab.algorithms.planning.average_reward`).
Registered:

* ``ucrl2`` (:mod:`.ucrl2`): Jaksch, Ortner & Auer 2010, the anchor of the family;
* ``uniform-average`` (:mod:`.uniform`): the null baseline.

Kind ``"average-reward-generative"``: ``factory(mdp, samples, rngs, **params) -> (policies
(B, N, S), gain estimates (B, N), config)`` at each n of ``samples`` (draws per pair from a
generative model); the runner scores each policy's exact gain gap. Registered:

* ``plugin-average`` (:mod:`.generative`): the discounted reduction with perturbed plug-in
  planning (Wang, Blanchet & Glynn 2023; seed row 001#1);
* ``null-generative`` (:mod:`.generative`): a fixed policy whatever the samples.
"""

from theorylab.algorithms.average_reward import generative, loop, neorl, ucrl2, uniform  # noqa: F401
