"""Stochastic shortest path learners (import name ``theorylab.algorithms.ssp``; kind ``ssp``).

* :mod:`~theorylab.algorithms.ssp.two_timescale` -- tabular two-timescale actor-critic
  (``ssp-ac``) and critic-actor (``ssp-ca``), seed row 000#51 (Guin & Bhatnagar 2025,
  reconstructed);
* :mod:`~theorylab.algorithms.ssp.q_learning` -- synchronous Q-learning (``ssp-q-learning``), the
  convergent baseline the paper compares against (its greedy iterates can be improper).

The exact answers they are checked against live on the planning floor
(:mod:`theorylab.algorithms.planning.ssp`); the instances in :mod:`theorylab.mdps.ssp`.
"""

from theorylab.algorithms.ssp import q_learning, two_timescale  # noqa: F401  (registrations)
