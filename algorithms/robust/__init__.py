"""Robust MDPs on models solved exactly (seed-coverage family 4).

The robust Bellman operators for (s, a)-rectangular tv / kl / chi-square sets live on the
planning floor (:mod:`theorylab.algorithms.planning.robust`); this family holds the papers built
on them. Registered (kind ``"policy-optimization"``: ``factory(problem, iterations, **params) ->
PolicyPath``, scored exactly at every iterate):

* ``iwocs`` (:mod:`.iwocs`): robust MDPs as a sequence of static problems on a finite set of
  kernels (Zouitine, Geist & Rachelson 2024; seed row 002-004#D1);
* ``dr-rpo`` (:mod:`.drrpo`): KL-regularised robust policy mirror ascent on a d-rectangular TV
  set, the exact-model core of DR-RPO (Gu, He, Liu & Xu 2025; seed rows 000#22, 001#49);
* ``dr-rpo-online`` (:mod:`.drrpo_online`): DR-RPO's sampled learner (ridge factors, elliptical
  bonus, optimistic robust regularised Q), each iterate scored exactly by the core;
* ``substate-dp`` (:mod:`.substates`): distributional DP with worst/best substates and safe /
  risky tie-breaking among optimal actions (Achab & Neu; seed row 000#73);
* ``tc-rmdp`` (:mod:`.time_constrained`): time-constrained robust DP on (s, psi_prev) (seed row
  000#50, tier B);
* ``nondominated-exp3`` (:mod:`.nondominated`): the non-dominated policies against a finite set
  of observation attacks and EXP3 over them at test time (Liu et al. 2024; seed row 002-004#D3);
* ``policy-smoothing`` (:mod:`.policy_smoothing`): the Gaussian-smoothing certificate on the
  return under an l2 observation attack (Kumar, Levine & Feizi 2022; seed row 002-004#D2).
"""

from theorylab.algorithms.robust import (  # noqa: F401
    drrpo,
    drrpo_online,
    hinf_lq,
    iwocs,
    nondominated,
    policy_smoothing,
    substates,
    time_constrained,
)
