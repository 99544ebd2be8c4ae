"""Known-bug mutations of the preference-alignment rows of issue 29, the controls of their claims
(``validations/claims/preference.py``, claims 5-); appended to ``mutations.MUTATIONS``:

* ``gibbs-temperature-inverted``: the Gibbs policy ref exp(eta r) instead of ref exp(r / eta)
  (``theorylab.mdps.kl_bandit.gibbs_policy``; the temperature on the wrong side);
* ``gshf-enhancer-no-bonus``: GSHF's enhancer without its uncertainty bonus, so it plays the
  main agent's policy and the rounds never explore (``gshf.enhancer_rewards``);
* ``hypo-kl-dropped``: HyPO without its reverse-KL term (``hypo.hypo_minimiser`` at lam = 0);
* ``dno-target-reversed``: DNO regresses on r_t(y') - r_t(y) (``dno.dno_step``);
* ``maxmin-utilitarian``: MaxMin-RLHF maximises sum_k w_k U_k, not min_k U_k
  (``maxmin.policy_of_groups``);
* ``pessimism-dropped``: VPO's value term / RPO's SFT term dropped, so both fit the plain reward MLE
  and play its Gibbs policy -- DPO in the bounded reward class (``vpo.regularised_rewards`` at
  alpha = 0);
* ``xpo-bonus-dropped``: XPO's exploration bonus dropped, i.e. online DPO (``xpo.xpo_rewards`` at
  alpha = 0);
* ``rlcr-brier-dropped``: RLCR trained on the binary correctness reward alone, no Brier term
  (``rlcr.reward_table`` with brier = False);
* ``rlhs-foresight-labels``: RLHS relabels its pairs without the simulated outcome
  (``rlhs.hindsight_labels``).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from theorylab.validations.controls import Control, register_control
from theorylab.validations.controls import patched as _patched


@contextlib.contextmanager
def gibbs_temperature_inverted(claim=None) -> Iterator[None]:
    from theorylab.mdps import kl_bandit

    original = kl_bandit.gibbs_policy

    def inverted(ref, rewards, eta):
        return original(ref, rewards, 1.0 / eta)  # the bug: exp(eta r)

    with _patched(kl_bandit, "gibbs_policy", inverted):
        yield


@contextlib.contextmanager
def gshf_enhancer_no_bonus(claim=None) -> Iterator[None]:
    from theorylab.algorithms.preference import gshf

    original = gshf.enhancer_rewards

    def no_bonus(bandit, theta, main, M, radius):
        return original(bandit, theta, main, M, 0.0)  # the bug: no exploration bonus

    with _patched(gshf, "enhancer_rewards", no_bonus):
        yield


MUTATIONS = (
    register_control(
        Control(
            "gibbs-temperature-inverted",
            "mutation",
            "the Gibbs policy ref exp(eta r) in place of ref exp(r / eta)",
            gibbs_temperature_inverted,
        )
    ),
    register_control(
        Control(
            "gshf-enhancer-no-bonus",
            "mutation",
            "GSHF's enhancer without its uncertainty bonus (it plays the main agent)",
            gshf_enhancer_no_bonus,
        )
    ),
)


@contextlib.contextmanager
def hypo_kl_dropped(claim=None) -> Iterator[None]:
    from theorylab.algorithms.preference import hypo

    original = hypo.hypo_minimiser

    def dropped(ref, wins, beta, lam, weight=1.0):
        return original(ref, wins, beta, 0.0, weight)  # the bug: the online KL term forgotten

    with _patched(hypo, "hypo_minimiser", dropped):
        yield


MUTATIONS = (
    *MUTATIONS,
    register_control(
        Control(
            "hypo-kl-dropped",
            "mutation",
            "HyPO's online reverse-KL term dropped (it minimises the DPO loss alone)",
            hypo_kl_dropped,
        )
    ),
)


@contextlib.contextmanager
def dno_target_reversed(claim=None) -> Iterator[None]:
    from theorylab.algorithms.preference import dno

    original = dno.dno_step

    def reversed_target(pi_t, r_t, eta):
        return original(pi_t, -r_t, eta)  # the bug: regress on r_t(y') - r_t(y)

    with _patched(dno, "dno_step", reversed_target):
        yield


MUTATIONS = (
    *MUTATIONS,
    register_control(
        Control(
            "dno-target-reversed",
            "mutation",
            "DNO's regression target r_t(y) - r_t(y') with its sign reversed",
            dno_target_reversed,
        )
    ),
)


@contextlib.contextmanager
def maxmin_utilitarian(claim=None) -> Iterator[None]:
    from theorylab.algorithms.preference import maxmin
    from theorylab.mdps.kl_bandit import gibbs_policy

    def utilitarian(bandit, rewards, weights):
        # the bug: the weighted average sum_k w_k U_k maximised instead of the minimum
        return gibbs_policy(bandit.ref, (weights[:, None, None] * rewards).sum(0), bandit.eta)

    with _patched(maxmin, "policy_of_groups", utilitarian):
        yield


MUTATIONS = (
    *MUTATIONS,
    register_control(
        Control(
            "maxmin-utilitarian",
            "mutation",
            "MaxMin-RLHF maximising the group-weighted average utility instead of the minimum",
            maxmin_utilitarian,
        )
    ),
)


@contextlib.contextmanager
def rlhs_foresight_labels(claim=None) -> Iterator[None]:
    from theorylab.algorithms.preference import rlhs
    from theorylab.mdps.preference import LinearBTLOracle

    def foresight(bandit, data, accuracy, rngs):
        # the bug: the pairs relabelled without the simulated outcome (foresight ratings)
        oracle = LinearBTLOracle(bandit.feedback_theta("foresight"), rngs)
        s, a0, a1 = data.states, data.a0, data.a1
        return oracle.compare(bandit.phi[s, a1], bandit.phi[s, a0]), oracle.queries.copy()

    with _patched(rlhs, "hindsight_labels", foresight):
        yield


MUTATIONS = (
    *MUTATIONS,
    register_control(
        Control(
            "rlhs-foresight-labels",
            "mutation",
            "RLHS relabelling its pairs without the simulated outcome (foresight ratings)",
            rlhs_foresight_labels,
        )
    ),
)


@contextlib.contextmanager
def pessimism_dropped(claim=None) -> Iterator[None]:
    from theorylab.algorithms.preference import vpo

    original = vpo.regularised_rewards

    def dropped(ref, cal, wins, beta, alpha, R, sign=-1, r0=None):
        return original(ref, cal, wins, beta, 0.0, R, sign, r0)  # the bug: no value term

    with _patched(vpo, "regularised_rewards", dropped):
        yield


MUTATIONS = (
    *MUTATIONS,
    register_control(
        Control(
            "pessimism-dropped",
            "mutation",
            "VPO's value term / RPO's SFT term dropped (the plain reward MLE, DPO)",
            pessimism_dropped,
        )
    ),
)


@contextlib.contextmanager
def xpo_bonus_dropped(claim=None) -> Iterator[None]:
    from theorylab.algorithms.preference import xpo

    original = xpo.xpo_rewards

    def dropped(bandit, data_b, alpha, R, r0):
        return original(bandit, data_b, 0.0, R, r0)  # the bug: no exploration bonus

    with _patched(xpo, "xpo_rewards", dropped):
        yield


MUTATIONS = (
    *MUTATIONS,
    register_control(
        Control(
            "xpo-bonus-dropped",
            "mutation",
            "XPO's exploration bonus dropped (online DPO)",
            xpo_bonus_dropped,
        )
    ),
)


@contextlib.contextmanager
def rlcr_brier_dropped(claim=None) -> Iterator[None]:
    from theorylab.algorithms.policy_optimization import rlcr

    original = rlcr.reward_table

    def dropped(inst, brier=True):
        return original(inst, False)  # the bug: the calibration term forgotten

    with _patched(rlcr, "reward_table", dropped):
        yield


MUTATIONS = (
    *MUTATIONS,
    register_control(
        Control(
            "rlcr-brier-dropped",
            "mutation",
            "RLCR's Brier term dropped (the binary correctness reward)",
            rlcr_brier_dropped,
        )
    ),
)
