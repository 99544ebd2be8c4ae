"""GP bandits on a finite grid (``kind="gp-bandit"``): a learner chooses one grid point per round
(``factory(problem, rounds, rngs, **params) -> GridBanditRun``, :mod:`.run_record`) from an exact
GP posterior (:mod:`theorylab.kernels.gp`); the runner ``theorylab.runners.gp_bandit`` scores the
choices on the true functions. Registered:

* ``config`` (:mod:`.config`): CONFIG, constrained efficient global optimisation (Xu et al.
  2023; seed row 000#39) on ``gp-constrained``;
* ``mbtl`` (:mod:`.mbtl`): MBTL, training-task selection for zero-shot transfer (Cho et al.
  2024; seed row 002-004#B1) on ``transfer-grid``.
"""

from theorylab.algorithms.gp_bandit import config, mbtl  # noqa: F401
