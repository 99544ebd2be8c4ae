"""KL-regularised policy optimisation on models solved exactly (seed-coverage family 7).

Kind ``"policy-optimization"`` (:data:`~theorylab.algorithms.registry.KINDS`): an algorithm is
``factory(problem, iterations, **params) -> PolicyPath`` (:mod:`.path`), a deterministic
iteration scored exactly at every iterate; the runner ``theorylab.runners.policy_optimization``
records it. Registered:

* ``kl-pg`` (:mod:`.kl_bayesian_inference`): exact KL-regularised policy gradient on a token
  tree (Korbak, Perez & Buckley 2022; seed rows 000#53, 002-004#F3);
* ``soft-vi`` (:mod:`.policy_cliff`): soft value iteration on a discounted MDP, the
  entropy-regularised optimum whose stability in the reward the Policy Cliff paper analyses
  (Xu 2025; seed row 002-004#F4);
* ``trpo-penalty`` (:mod:`.trpo`): TRPO's Algorithm 1, the KL-penalised surrogate step with the
  constant of Theorem 1, on log-linear policies (Schulman et al. 2015; seed row 000#61);
* ``best-of-n`` (:mod:`.alignment_asymptotics`): best-of-N against the tilted KL-constrained
  optimum on a memoryless LM (Yang et al. 2024; seed row 000#64);
* ``md-vi`` (:mod:`.leverage_average`): KL-regularised (mirror-descent) value iteration with
  injected evaluation noise, AVI at lam = 0 (Vieillard et al. 2020; seed row 000#30);
* ``staq`` (:mod:`.staq`): policy mirror descent from the last M Q-functions (Shilova et al.
  2025; seed row 000#33);
* ``demo-regularised-vi`` (:mod:`.demonstration_regularised`): behaviour cloning, then
  KL-regularised backward induction toward the clone (Tiapkin et al. 2024; seed rows 001#24,
  002-004#A2);
* ``mdpo`` (:mod:`.mdpo`): the exact mirror-descent step and its m-step gradient approximation
  (Tomar et al. 2022; seed rows 000#29, 002-004#F2).
* ``on-policy-data`` (:mod:`.on_policy_data`): offline MLE / DPO, forward KL and on-policy
  reverse-KL PG as plain logit-gradient steps on a categorical policy (Tajwar et al. 2024; seed
  row 002-004#E12).
* ``rlcr-pg`` (:mod:`.rlcr`): exact softmax PG on a correctness + Brier calibration reward over
  (answer, confidence level) (Damani et al. 2025; seed row 002-004#B6).
* ``sec`` (:mod:`.sec`), ``dump`` (:mod:`.dump`): curricula over problem categories of a
  synthetic RLVR learner, chosen by the absolute advantage (seed rows 002-004#B2, B3);
  ``mopps`` (:mod:`.mopps`): discounted Beta posteriors and Thompson sampling toward a target
  pass rate (seed row 000#72); ``difficulty-filtering`` (:mod:`.difficulty_filtering`): GRPO
  batches of intermediate-accuracy groups only (seed row 001#58); ``seele`` (:mod:`.seele`):
  hints sized by a fitted item-response model toward a target accuracy (seed row 002-004#G9);
  ``guide-grpo`` (:mod:`.guide`): hinted, importance-weighted rollouts on all-fail prompts
  (seed row 002-004#G7);
* ``hnpg`` (:mod:`.hnpg`): NPG whose critic is fit on offline TD targets and on-policy Monte
  Carlo returns together (Zhou et al. 2024; seed rows 000#20, 002-004#C6);
* ``reward-refinement`` (:mod:`.reward_refinement`): the optimal trajectory of a step MDP under raw,
  clipped or delta PRM rewards (seed row 002-004#G6);
* ``rapo`` (:mod:`.rapo`): forward KL to a reward-reweighted reference vs the reverse KL, exactly on
  an answer bandit with unsolvable prompts (seed row 002-004#F9);
* ``rl-plus`` (:mod:`.rl_plus`): external expert answers with multiple-importance-sampling weights
  and an exploration advantage (seed row 002-004#G8).
* ``rollin`` (:mod:`.rollin`): a curriculum of goal-reaching tasks solved in order by exact
  softmax PG, warm-started and rolled in from the previous task's visitation (Li et al. 2023;
  seed rows 000#7, 001#11).
* ``subpo`` (:mod:`.subpo`): exact policy gradient on the marginal gains of a submodular utility
  of the visited states (Prajapat et al. 2024; seed rows 000#13, 001#14, 002-004#A5).
"""

from theorylab.algorithms.policy_optimization import (  # noqa: F401
    alignment_asymptotics,
    demonstration_regularised,
    difficulty_filtering,
    divergence_choice,
    dump,
    guide,
    hnpg,
    kl_bayesian_inference,
    leverage_average,
    max_at_k,
    mdpo,
    mirror_learning,
    mo_vr_pg,
    mopps,
    on_policy_data,
    policy_cliff,
    rapo,
    reasoning_boundary,
    reward_refinement,
    rl_plus,
    rlcr,
    rlvr_support,
    rollin,
    rpg,
    sec,
    seele,
    staq,
    subpo,
    trajectory_traces,
    trpo,
    value_mapping,
)
