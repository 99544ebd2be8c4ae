"""Building blocks of the linear-MDP and low-rank algorithms (import name
``theorylab.algorithms.linear``).

* :mod:`~theorylab.algorithms.linear.features` -- how an agent gets its feature table
  ``phi (S, A, d)`` (an array, ``"onehot"``, or an MDP family spec);
* :mod:`~theorylab.algorithms.linear.gram` -- batched Sherman-Morrison updates of Gram inverses and
  elliptical norms ``||x||_{Lambda^{-1}}``;
* :mod:`~theorylab.algorithms.linear.lsvi` -- the batched least-squares value iteration engine
  (Jin et al. 2020, Algorithm 1 without its bonus) that LSVI, LSVI-UCB, LMC-LSVI and Rep-UCB build
  on;
* :mod:`~theorylab.algorithms.linear.mle` -- maximum likelihood over a finite class of simplex
  feature maps (the MLE oracle of Rep-UCB).

The registered agents live in ``theorylab.algorithms.online`` (``lsvi-ucb``, ``lsvi``,
``lmc-lsvi``, ``linucb``, ``rep-ucb``).
"""
