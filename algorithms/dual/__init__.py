"""Dual RL on exact MDPs (import name ``theorylab.algorithms.dual``).

The occupancy LP of :mod:`theorylab.algorithms.planning.lp`, regularised by an f-divergence to a
data distribution, and the algorithms that are its duals (Sikchi et al., ICLR 2024):

* ``f_divergences``: KL, Pearson chi^2, OptiDICE's half chi^2, TV, with exact conjugates;
* ``regularized_objectives``: the primal and dual-V objectives, primal recovery;
* ``regularized_primal``: the primal solved by cvxpy (the reference answer);
* ``dual_v``: the dual-V form solved directly (closed-form gradient, Newton or L-BFGS);
* ``dual_q``: the dual-Q form for a fixed policy;
* ``reps``: REPS (Peters et al. 2010), exact, with the infeasible (unbounded-dual) case detected;
* ``cmdp``: constrained MDPs: the LP with cost rows, Lagrangian GDA and optimistic GDA;
* ``empirical_model``, ``optidice``, ``dualdice``: the DICE methods on offline datasets;
* ``f_dvl``: tabular f-DVL with the authors' surrogate value losses (kept apart from the exact
  conjugates);
* ``recoil``, ``smodice``: imitation from expert plus other data (kind "imitation"): ReCOIL's
  mixture matching (exact, its dual derived and Theorem 1 checked) and the coverage-restricted
  SMODICE; ``behaviour_kl``: f-DVL's reference answer (the behaviour-KL-regularised MDP, cvxpy);
  ``surrogate_losses``: the DVL / ReCOIL code's losses, defined once for numpy and torch;
* ``reference``: the default d^O (a behaviour policy's occupancy);
* ``registrations``: ``dual-v``, ``regularized-primal`` (kind "dual"), ``optidice``, ``f-dvl``
  (kind "offline") on the one registry;
* ``smooth_dual_solver``: the Newton / L-BFGS minimiser both duals share;
* ``inputs``: input checks (alpha, d^O, coverage of the flow).
"""

from theorylab.algorithms.dual.dual_v import solve_dual_v
from theorylab.algorithms.dual.f_divergences import DIVERGENCES, FDivergence, divergence
from theorylab.algorithms.dual.inputs import DualInputError, UncoveredFlowError
from theorylab.algorithms.dual.regularized_objectives import RegularizedSolution
from theorylab.algorithms.dual.regularized_primal import solve_regularized_primal

__all__ = [
    "DIVERGENCES",
    "DualInputError",
    "FDivergence",
    "RegularizedSolution",
    "UncoveredFlowError",
    "divergence",
    "solve_dual_v",
    "solve_regularized_primal",
]
