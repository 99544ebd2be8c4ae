"""Risk-sensitive RL, exact core: CVaR, return distributions, static and iterated CVaR planning.

* :mod:`.cvar` -- CVaR / VaR of a discrete distribution (exact, by sorting);
* :mod:`.reward_lattice` -- rewards as integer steps of a grid of width eta;
* :mod:`.return_distribution` -- the exact return law of a Markov or budget-augmented policy;
* :mod:`.static_cvar_planning` -- Bauerle-Ott augmented-state planning for static CVaR
  (the planner inside Wang, Kallus, Sun 2023);
* :mod:`.iterated_cvar` -- nested-CVaR and worst-path dynamic programming (Du, Wang, Huang 2023);
* :mod:`.brute_force` -- enumeration oracles for tiny MDPs;
* :mod:`.objectives` -- the regret objectives used by the online agents ``cvar-ucbvi``,
  ``icvar-rm`` and ``maxwp`` (``theorylab.algorithms.online``).
"""

from theorylab.algorithms.risk.augmented_policy import (
    AugmentedPolicy,
    BudgetTrajectories,
    budget_rollout,
)
from theorylab.algorithms.risk.brute_force import (
    BruteForceResult,
    TooManyPoliciesError,
    brute_force_mean,
    brute_force_static_cvar,
    brute_force_worst_path,
    enumerate_markov_policies,
    outcome_paths,
)
from theorylab.algorithms.risk.iterated_cvar import (
    cvar_next,
    evaluate_iterated_cvar,
    iterated_cvar_planning,
    iterated_cvar_values,
)
from theorylab.algorithms.risk.objectives import IteratedCVaR, StaticCVaR, WorstPath
from theorylab.algorithms.risk.return_distribution import ReturnDistribution, return_distribution
from theorylab.algorithms.risk.reward_lattice import (
    RewardGridError,
    RewardLattice,
    infer_eta,
    reward_lattice,
    reward_lattice_from_means,
)
from theorylab.algorithms.risk.static_cvar_planning import StaticCVaRSolution, static_cvar_planning
from theorylab.risk_measures import cvar, cvar_objective, mean, var, worst_case

__all__ = [
    "AugmentedPolicy",
    "BruteForceResult",
    "BudgetTrajectories",
    "IteratedCVaR",
    "ReturnDistribution",
    "RewardGridError",
    "RewardLattice",
    "StaticCVaR",
    "StaticCVaRSolution",
    "TooManyPoliciesError",
    "WorstPath",
    "brute_force_mean",
    "brute_force_static_cvar",
    "brute_force_worst_path",
    "budget_rollout",
    "cvar",
    "cvar_next",
    "cvar_objective",
    "enumerate_markov_policies",
    "evaluate_iterated_cvar",
    "infer_eta",
    "iterated_cvar_planning",
    "iterated_cvar_values",
    "mean",
    "outcome_paths",
    "return_distribution",
    "reward_lattice",
    "reward_lattice_from_means",
    "static_cvar_planning",
    "var",
    "worst_case",
]
