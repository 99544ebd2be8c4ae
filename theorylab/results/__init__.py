"""The one result family (ground floor): ``Result`` and one subclass per kind of run.

``RegretResult`` (online; alias ``RunResult``), ``SuboptimalityResult`` (offline), ``DeepResult``
(deep twins), ``TrainingResult`` (transformers trained on token-tree tasks: exact metrics per
step), ``DualResult`` (dual solvers), ``OPEResult`` (off-policy evaluation), ``ConstrainedResult``
(KL-constrained solves), ``AverageRewardResult`` (non-episodic regret in steps),
``GenerativeGainResult`` (gain gap from a generative model), ``PolicyOptimizationResult``
(exact policy-optimisation iterations), ``GoalReachingResult`` (learned goal distances against
the true ones), ``GPBanditResult`` (GP bandits on a grid: regret,
violation, infeasibility declarations), ``PreferenceResult`` (preference feedback: regret or
sub-optimality with query counts), ``PromptTrainingResult`` (LMs trained on prompt datasets:
held-out accuracy, sampled rewards), ``SSPResult`` (stochastic shortest path learners: exact
errors against J*). A new kind of result adds a module here and one import line
below (``docs/architecture.md``).
"""

from theorylab.results.average_reward import AverageRewardResult, GenerativeGainResult
from theorylab.results.base import RESULT_TYPES, Result, load_result, register_result
from theorylab.results.constrained import ConstrainedResult
from theorylab.results.deep import DeepResult
from theorylab.results.dual import DualResult
from theorylab.results.goal_reaching import GoalReachingResult
from theorylab.results.gp_bandit import GPBanditResult
from theorylab.results.irl import IRLResult
from theorylab.results.irl_generative import FeasibleSetResult
from theorylab.results.local_agents import LocalAgentsResult
from theorylab.results.multi_batch import MultiBatchResult
from theorylab.results.multitask_bandit import MultitaskBanditResult
from theorylab.results.ope import OPEResult
from theorylab.results.policy_optimization import PolicyOptimizationResult
from theorylab.results.preference import PreferenceResult
from theorylab.results.prompt_training import PromptTrainingResult
from theorylab.results.regret import RegretResult, RunResult
from theorylab.results.ssp import SSPResult
from theorylab.results.suboptimality import SuboptimalityResult
from theorylab.results.training import TrainingResult

__all__ = [
    "AverageRewardResult",
    "ConstrainedResult",
    "RESULT_TYPES",
    "DeepResult",
    "DualResult",
    "GenerativeGainResult",
    "GoalReachingResult",
    "GPBanditResult",
    "IRLResult",
    "LocalAgentsResult",
    "FeasibleSetResult",
    "MultiBatchResult",
    "MultitaskBanditResult",
    "OPEResult",
    "PolicyOptimizationResult",
    "PreferenceResult",
    "PromptTrainingResult",
    "RegretResult",
    "Result",
    "RunResult",
    "SSPResult",
    "SuboptimalityResult",
    "TrainingResult",
    "load_result",
    "register_result",
]
