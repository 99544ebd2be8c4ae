"""Known-bug mutations of OGSRL, trajectory weighting and vw-pevi (issue 31), the controls of their
claims in ``validations/claims/offline.py``; appended to ``mutations.MUTATIONS``:

* ``ogsrl-support-dropped``: the OOD guardian removed -- the occupancy LP may use pairs without
  data (where the model's reward is a guess: the claim's fill of 1 is then exploited);
* ``ogsrl-budget-dropped``: the safety-cost row removed (the costs zeroed in the LP);
* ``trajectory-weighting-inverted``: low-return episodes up-weighted;
* ``vw-pevi-weights-inverted``: vw-pevi's regression weights sigma2 instead of 1 / sigma2;
* ``mbrcsl-no-rollouts``: MBRCSL without its model rollouts (= RCSL);
* ``hubl-continuation-kept``: HUBL's relabelled rewards with the bootstrap weight left at 1.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from theorylab.validations.controls import Control, register_control
from theorylab.validations.controls import patched as _patched


@contextlib.contextmanager
def _lp_mutated(drop_support: bool, drop_budget: bool) -> Iterator[None]:
    from theorylab.algorithms.offline import ogsrl

    original = ogsrl.solve_cmdp_lp

    def mutated(mdp, costs, thresholds, **kwargs):
        if drop_support:
            kwargs["support"] = None  # the bug: no d(s, a) = 0 off the data
        if drop_budget:
            costs = 0.0 * costs  # the bug: the cost row is 0 <= kappa
        return original(mdp, costs, thresholds, **kwargs)

    with _patched(ogsrl, "solve_cmdp_lp", mutated):
        yield


@contextlib.contextmanager
def ogsrl_support_dropped(claim=None) -> Iterator[None]:
    with _lp_mutated(True, False):
        yield


@contextlib.contextmanager
def ogsrl_budget_dropped(claim=None) -> Iterator[None]:
    with _lp_mutated(False, True):
        yield


MUTATIONS = (
    register_control(
        Control(
            "ogsrl-support-dropped",
            "mutation",
            "OGSRL's support constraint removed (the LP may use pairs without data)",
            ogsrl_support_dropped,
        )
    ),
    register_control(
        Control(
            "ogsrl-budget-dropped",
            "mutation",
            "OGSRL's safety-cost constraint removed (costs zeroed in the LP)",
            ogsrl_budget_dropped,
        )
    ),
)


@contextlib.contextmanager
def trajectory_weighting_inverted(claim=None) -> Iterator[None]:
    """The sign of the return in the weights flipped: w = exp(-G / temperature)."""
    from theorylab.algorithms.offline import trajectory_weighting as tw

    original = tw.episode_multipliers

    def inverted(s0, G, n, S, temperature):
        return original(s0, -G, n, S, temperature)  # the bug: low returns up-weighted

    with _patched(tw, "episode_multipliers", inverted):
        yield


MUTATIONS = (
    *MUTATIONS,
    register_control(
        Control(
            "trajectory-weighting-inverted",
            "mutation",
            "trajectory weighting's return sign flipped (low-return episodes up-weighted)",
            trajectory_weighting_inverted,
        )
    ),
)


@contextlib.contextmanager
def vw_pevi_weights_inverted(claim=None) -> Iterator[None]:
    """vw-pevi's regression weights inverted: sigma2 replaced by 1 / sigma2 (weights sigma2)."""
    from theorylab.algorithms.offline import vw_pevi as vw

    original = vw.estimate_variances

    def inverted(*args, **kwargs):
        return 1.0 / original(*args, **kwargs)  # the bug: high-variance pairs up-weighted

    with _patched(vw, "estimate_variances", inverted):
        yield


MUTATIONS = (
    *MUTATIONS,
    register_control(
        Control(
            "vw-pevi-weights-inverted",
            "mutation",
            "vw-pevi's variance weights inverted (1 / sigma2 -> sigma2: noisy pairs up-weighted)",
            vw_pevi_weights_inverted,
        )
    ),
)


@contextlib.contextmanager
def mbrcsl_no_rollouts(claim=None) -> Iterator[None]:
    """MBRCSL without its model rollouts: RCSL on the data alone."""
    from theorylab.algorithms.offline import rcsl

    original = rcsl._fit

    def no_rollouts(dataset, name, rollouts, seed):
        return original(dataset, name, 0, seed)  # the bug: the rollouts are skipped

    with _patched(rcsl, "_fit", no_rollouts):
        yield


MUTATIONS = (
    *MUTATIONS,
    register_control(
        Control(
            "mbrcsl-no-rollouts",
            "mutation",
            "MBRCSL's model rollouts skipped (RCSL on the data alone)",
            mbrcsl_no_rollouts,
        )
    ),
)


@contextlib.contextmanager
def _het_pevi_with(**forced) -> Iterator[None]:
    from theorylab.algorithms.offline import het_pevi as hp

    original = hp.het_pevi

    def mutated(dataset, **kwargs):
        return original(dataset, **{**kwargs, **forced})

    with _patched(hp, "het_pevi", mutated):
        yield


@contextlib.contextmanager
def het_pevi_single_source(claim=None) -> Iterator[None]:
    """HetPEVI on source 0's rows only: single-source PEVI with the same penalty."""
    with _het_pevi_with(single_source=0):
        yield


@contextlib.contextmanager
def het_pevi_source_term_dropped(claim=None) -> Iterator[None]:
    """HetPEVI without its source-uncertainty penalty (c_K = 0)."""
    with _het_pevi_with(c_K=0.0):
        yield


MUTATIONS = (
    *MUTATIONS,
    register_control(
        Control(
            "het-pevi-single-source",
            "mutation",
            "HetPEVI fed one source (single-source PEVI: no benefit from more sources)",
            het_pevi_single_source,
        )
    ),
    register_control(
        Control(
            "het-pevi-source-term-dropped",
            "mutation",
            "HetPEVI's source-uncertainty penalty removed (c_K = 0)",
            het_pevi_source_term_dropped,
        )
    ),
)


@contextlib.contextmanager
def hubl_continuation_kept(claim=None) -> Iterator[None]:
    """HUBL's rewards relabelled but the bootstrap weight left at 1 (y = r + lam G + V_hat)."""
    import numpy as np

    from theorylab.algorithms.offline import hubl

    original = hubl.relabel

    def mutated(dataset, lam, schedule="constant"):
        r_tilde, cont = original(dataset, lam, schedule)
        return r_tilde, np.ones_like(cont)  # the bug: the future counted 1 + lam times

    with _patched(hubl, "relabel", mutated):
        yield


MUTATIONS = (
    *MUTATIONS,
    register_control(
        Control(
            "hubl-continuation-kept",
            "mutation",
            "HUBL's continuation factor 1 - lambda dropped (rewards relabelled, bootstrap kept)",
            hubl_continuation_kept,
        )
    ),
)
