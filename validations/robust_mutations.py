"""Known-bug mutations of the robust-MDP family (issue 30), the controls of the claims in
``validations/claims/robust.py``; appended to ``mutations.MUTATIONS``:

* ``iwocs-adds-best-case-model``: IWOCS's worst-case search returns the model on which the
  current policy does *best* (argmax for argmin), so it stops as soon as that model is already
  in the working set (``theorylab.algorithms.robust.iwocs.worst_model``);
* ``dr-rpo-nominal-q``: DR-RPO's mirror step driven by the nominal (rho = 0) regularised
  Q-function (``theorylab.algorithms.robust.drrpo.robust_regularised_evaluation``);
* ``substate-safe-breaks-by-best``: the safe policy breaks ties among optimal actions by the
  best substate's value Q^+ instead of the worst one's Q^-
  (``theorylab.algorithms.robust.substates.tie_break_key``);
* ``tc-adversary-unconstrained``: the time-constrained adversary's step bound ignored
  (``theorylab.algorithms.robust.time_constrained.tc_backup``);
* ``nondominated-drops-a-vertex``: the non-dominated filter loses the last policy it keeps
  (``theorylab.algorithms.robust.nondominated.nondominated``);
* ``exp3-plays-uniform``: EXP3 never updates its weights (``...nondominated.exp3``);
* ``smoothing-budget-over-sqrt-horizon``: the smoothing certificate's shift B / sigma replaced
  by B / (sigma sqrt(H)) (``theorylab.algorithms.robust.policy_smoothing.budget_shift``);
* ``cvar-ela-bonus-without-inverse-tau``: CVaR-ELA's bonus enters the CVaR objective without
  its 1/tau (``theorylab.algorithms.online.cvar_ela.CVaRELA.alpha`` times tau);
* ``hinf-disturber-sign-flipped``: the H-infinity learner's disturber term with the wrong sign of
  its gamma^-2 term (``theorylab.algorithms.robust.hinf_lq.worst_case_weight``).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import numpy as np

from theorylab.validations.controls import Control, register_control
from theorylab.validations.controls import patched as _patched


@contextlib.contextmanager
def iwocs_adds_best_case_model(claim=None) -> Iterator[None]:
    from theorylab.algorithms.robust import iwocs
    from theorylab.algorithms.robust.finite_sets import static_values

    def best(mdp, models, policy):  # the bug: argmax where argmin belongs
        v = static_values(mdp, models, policy[None])[0]
        i = int(np.argmax(v))
        return i, float(v[i])

    with _patched(iwocs, "worst_model", best):
        yield


MUTATIONS = (
    register_control(
        Control(
            "iwocs-adds-best-case-model",
            "mutation",
            "IWOCS's worst-case search returns the best-case model (argmax for argmin)",
            iwocs_adds_best_case_model,
        )
    ),
)


@contextlib.contextmanager
def dr_rpo_nominal_q(claim=None) -> Iterator[None]:
    from theorylab.algorithms.robust import drrpo

    original = drrpo.robust_regularised_evaluation

    def nominal(model, pi, beta, ref, rho, V0=None, tol=1e-12):  # the bug: rho dropped
        return original(model, pi, beta, ref, 0.0, V0=V0, tol=tol)

    with _patched(drrpo, "robust_regularised_evaluation", nominal):
        yield


MUTATIONS = (
    *MUTATIONS,
    register_control(
        Control(
            "dr-rpo-nominal-q",
            "mutation",
            "DR-RPO's update uses the nominal (rho = 0) Q-function instead of the robust one",
            dr_rpo_nominal_q,
        )
    ),
)


@contextlib.contextmanager
def substate_safe_breaks_by_best(claim=None) -> Iterator[None]:
    from theorylab.algorithms.robust import substates

    def by_best(Qm, Qp, mode):  # the bug: the best substate breaks the safe policy's ties too
        return Qp

    with _patched(substates, "tie_break_key", by_best):
        yield


MUTATIONS = (
    *MUTATIONS,
    register_control(
        Control(
            "substate-safe-breaks-by-best",
            "mutation",
            "the safe policy breaks ties among optimal actions by the best substate's value",
            substate_safe_breaks_by_best,
        )
    ),
)


@contextlib.contextmanager
def tc_adversary_unconstrained(claim=None) -> Iterator[None]:
    from theorylab.algorithms.robust import time_constrained as T

    original = T.tc_backup

    def unconstrained(R, family, V, L, gamma):  # the bug: the step bound L ignored
        return original(R, family, V, family.shape[0], gamma)

    with _patched(T, "tc_backup", unconstrained):
        yield


MUTATIONS = (
    *MUTATIONS,
    register_control(
        Control(
            "tc-adversary-unconstrained",
            "mutation",
            "the time-constrained adversary's step bound L ignored (any psi every step)",
            tc_adversary_unconstrained,
        )
    ),
)


@contextlib.contextmanager
def nondominated_drops_a_vertex(claim=None) -> Iterator[None]:
    from theorylab.algorithms.robust import nondominated

    original = nondominated.nondominated

    def drops(values, tol=1e-9):  # the bug: the last vertex found is lost (off by one)
        kept = original(values, tol)
        return kept[:-1] if kept.size > 1 else kept

    with _patched(nondominated, "nondominated", drops):
        yield


@contextlib.contextmanager
def exp3_plays_uniform(claim=None) -> Iterator[None]:
    from theorylab.algorithms.robust import nondominated

    def uniform(x, n_seeds, seed, gamma=None):  # the bug: the weights are never updated
        T, K = x.shape
        return np.full((n_seeds, T, K), 1.0 / K)

    with _patched(nondominated, "exp3", uniform):
        yield


MUTATIONS = (
    *MUTATIONS,
    register_control(
        Control(
            "nondominated-drops-a-vertex",
            "mutation",
            "the non-dominated filter loses the last policy it keeps (a needed one)",
            nondominated_drops_a_vertex,
        )
    ),
    register_control(
        Control(
            "exp3-plays-uniform",
            "mutation",
            "EXP3 never updates its weights: uniform play over the kept policies",
            exp3_plays_uniform,
        )
    ),
)


@contextlib.contextmanager
def smoothing_budget_over_sqrt_horizon(claim=None) -> Iterator[None]:
    from theorylab.algorithms.robust import policy_smoothing

    def shift(budget, sigma, horizon):  # the bug: the budget spread over the H noise draws
        return budget / (sigma * np.sqrt(horizon))

    with _patched(policy_smoothing, "budget_shift", shift):
        yield


MUTATIONS = (
    *MUTATIONS,
    register_control(
        Control(
            "smoothing-budget-over-sqrt-horizon",
            "mutation",
            "the smoothing certificate shifts by B / (sigma sqrt(H)) instead of B / sigma",
            smoothing_budget_over_sqrt_horizon,
        )
    ),
)


@contextlib.contextmanager
def cvar_ela_plans_risk_neutral(claim=None) -> Iterator[None]:
    from theorylab.algorithms.online import cvar_ela

    original = cvar_ela.CVaRELA.plan

    def neutral(self):  # the bug: the budget-augmented plan at tau = 1 whatever tau is asked
        tau, self.tau = self.tau, 1.0
        try:
            original(self)
        finally:
            self.tau = tau

    with _patched(cvar_ela.CVaRELA, "plan", neutral):
        yield


MUTATIONS = (
    *MUTATIONS,
    register_control(
        Control(
            "cvar-ela-plans-risk-neutral",
            "mutation",
            "CVaR-ELA plans the risk-neutral problem (tau = 1) whatever tau is asked",
            cvar_ela_plans_risk_neutral,
        )
    ),
)


@contextlib.contextmanager
def cvar_ela_bonus_without_inverse_tau(claim=None) -> Iterator[None]:
    from theorylab.algorithms.online import cvar_ela

    width_scale = cvar_ela.CVaRELA.alpha.fget

    def tau_times_alpha(self):  # the bug: the shortfall's bonus scaled by tau, so the CVaR
        return self.tau * width_scale(self)  # objective's bonus (bonus / tau) lacks its 1/tau

    with _patched(cvar_ela.CVaRELA, "alpha", property(tau_times_alpha)):
        yield


MUTATIONS = (
    *MUTATIONS,
    register_control(
        Control(
            "cvar-ela-bonus-without-inverse-tau",
            "mutation",
            "CVaR-ELA's elliptical bonus enters the CVaR objective without its 1/tau factor (the "
            "shortfall's bonus scaled by tau)",
            cvar_ela_bonus_without_inverse_tau,
        )
    ),
)


@contextlib.contextmanager
def hinf_disturber_sign_flipped(claim=None) -> Iterator[None]:
    from theorylab.algorithms.robust import hinf_lq as H

    def flipped(P, D, gamma):  # the bug: the gamma^-2 term's sign flipped (a helping disturber)
        if np.isinf(gamma):
            return P.copy()
        M = gamma**2 * np.eye(D.shape[1]) + D.T @ P @ D
        Pt = P - P @ D @ np.linalg.solve(M, D.T @ P)
        return (Pt + Pt.T) / 2

    with _patched(H, "worst_case_weight", flipped):
        yield


MUTATIONS = (
    *MUTATIONS,
    register_control(
        Control(
            "hinf-disturber-sign-flipped",
            "mutation",
            "the H-infinity learner's disturber term enters with the wrong sign (P - P D (gamma^2 "
            "I + D'P D)^-1 D'P): the disturber helps",
            hinf_disturber_sign_flipped,
        )
    ),
)


# DR-RPO online (issue 30, helper drrpo30): the two controls of dr-rpo-online-regret-sublinear


@contextlib.contextmanager
def dr_rpo_online_no_bonus(claim=None) -> Iterator[None]:
    from theorylab.algorithms.robust import drrpo_online

    with _patched(drrpo_online, "bonus_coefficient", lambda c: 0.0):  # the bug: no optimism
        yield


@contextlib.contextmanager
def dr_rpo_online_nominal(claim=None) -> Iterator[None]:
    from theorylab.algorithms.robust import drrpo_online

    with _patched(drrpo_online, "learner_radius", lambda rho: 0.0):  # the bug: rho dropped
        yield


MUTATIONS = (
    *MUTATIONS,
    register_control(
        Control(
            "dr-rpo-online-no-bonus",
            "mutation",
            "DR-RPO online without its upper-confidence bonus (c_b = 0): the ridge estimate alone",
            dr_rpo_online_no_bonus,
        )
    ),
    register_control(
        Control(
            "dr-rpo-online-nominal",
            "mutation",
            "DR-RPO online's backup uses the nominal (rho = 0) expectation: the non-robust "
            "learner, scored against the robust optimum",
            dr_rpo_online_nominal,
        )
    ),
)
