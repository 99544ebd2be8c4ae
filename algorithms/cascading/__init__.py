"""Cascading RL (``kind="cascading"``): a learner shows an ordered list of m items out of N in
each state, the user clicks the first attractive one (``theorylab.mdps.cascading``); the runner
``theorylab.runners.cascading`` plays the lists and scores them exactly. Registered:

* ``cascading-vi`` (:mod:`.cascading_vi`): CascadingVI with the BestPerm oracle
  (:mod:`.best_perm`; Du, Srikant & Chen 2024; seed row 001#13).
"""

from theorylab.algorithms.cascading import cascading_vi  # noqa: F401
