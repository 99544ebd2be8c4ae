"""Average-reward (non-episodic) learners (seed-coverage family 8).

Kind ``"average-reward"`` (:data:`~theorylab.algorithms.registry.KINDS`): an algorithm is
``factory(mdp, steps, rngs, **params) -> StepRun`` (:mod:`.run_record`), one trajectory of
``steps`` steps per seed generator; the runner ``theorylab.runners.average_reward`` scores it
exactly against the optimal gain g* (:mod:`theorylab.algorithms.planning.average_reward`).
Registered:

* ``ucrl2`` (:mod:`.ucrl2`): Jaksch, Ortner & Auer 2010, the anchor of the family;
* ``uniform-average`` (:mod:`.uniform`): the null baseline.
"""

from theorylab.algorithms.average_reward import ucrl2, uniform  # noqa: F401
