"""Preference-based RL (import name ``theorylab.algorithms.preference``).

Modules: ``mle`` (constrained BTL and Plackett-Luce MLE, pairwise split), ``pessimistic``
(Zhu-Jordan-Jiao's pessimistic MLE policy and the greedy-on-MLE contrast), ``nash`` (von Neumann
winner by LP, KL-regularised equilibrium, OMD / INPO-style no-regret dynamics), ``p2r`` (the
preference-to-reward interface around UCBVI-Bernstein). Feedback models live in
``theorylab.mdps.preference``.
"""
