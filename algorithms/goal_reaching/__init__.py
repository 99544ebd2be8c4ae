"""Goal-conditioned RL by quasimetric learning (seed rows 000#65, 001#73).

Kind ``"goal-reaching"`` (:data:`~theorylab.algorithms.registry.KINDS`): an algorithm is
``fit(data, **params) -> QuasimetricFit`` (:mod:`.qrl`), distances d(s, g) learned from observed
transitions ``data`` (:class:`~.qrl.GoalData`); the runner ``theorylab.runners.goal_reaching``
scores them against the true goal-conditioned cost-to-go. Registered:

* ``qrl`` (:func:`.qrl.fit_qrl_lp`): QRL's objective solved exactly, a linear programme over
  quasimetrics (Wang, Torralba, Isola & Zhang 2023);
* ``qrl-embedding`` (:func:`.qrl.fit_qrl_embedding`): the paper's practical Lagrangian relaxation
  (global push + local constraint with a learned multiplier) on a tabular max-relu quasimetric
  embedding.
"""

from theorylab.algorithms.goal_reaching.qrl import fit_qrl_embedding, fit_qrl_lp
from theorylab.algorithms.registry import register

QRL_PAPERS = ("000#65", "001#73")

register(
    "qrl",
    kind="goal-reaching",
    problem="tabular",
    summary="QRL (Wang et al. 2023) exactly: max sum d over quasimetrics with d(s, s') <= c on "
    "observed transitions (an LP); recovers shortest-path distances",
    papers=QRL_PAPERS,
)(fit_qrl_lp)
register(
    "qrl-embedding",
    kind="goal-reaching",
    problem="tabular",
    summary="QRL's Lagrangian relaxation (softplus global push, squared local constraint, "
    "learned multiplier) on a max-relu quasimetric embedding, full batch Adam",
    papers=QRL_PAPERS,
)(fit_qrl_embedding)
