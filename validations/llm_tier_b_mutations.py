"""Known-bug mutations of issue 28's tier-B LLM-RL rows (``validations/claims/llm_tier_b.py``);
appended to ``mutations.MUTATIONS``:

* ``copg-no-contrast``: CoPG without its contrastive partner, i.e. plain off-policy policy
  gradient E_mu [R^pi(y) grad log pi(y)] with no baseline (``copg.copg_gradient``);
* ``oprl-no-reference``: OPRL's step reward beta log pi(a|h) without the reference log-ratio (not
  potential-based) (``oprl.step_rewards``);
* ``reward-clip-floor``: Clip as a floor, max(p - eta, 0), instead of the cap min(p - eta, 0)
  (``reward_refinement.refine``);
* ``reward-delta-discounted``: Delta as p_t - 0.9 p_{t+1}, which no longer telescopes
  (``reward_refinement.refine``);
* ``rapo-reverse-kl``: RAPO with the reverse KL to the base (the penalty it replaces)
  (``rapo.optimum``);
* ``rapo-confined-forward-kl``: RAPO's forward-KL optimum restricted to the base's support (the
  maximiser of the restricted problem) (``rapo.optimum``);
* ``rl-plus-no-mis``: RL-PLUS weights the external answers 1, as if drawn from the policy
  (``rl_plus.mis_weights``);
* ``vpo-online-bonus-dropped``: online VPO without its value term, i.e. online DPO
  (``vpo_online.round_solution`` at alpha = 0);
* ``vpo-online-local-solve``: each round solved locally from the warm start only (the previous
  reconstruction, which stalls) (``vpo_online.round_starts`` returns the warm start).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import numpy as np
from scipy.special import log_softmax

from theorylab.validations.controls import Control, register_control
from theorylab.validations.controls import patched as _patched


@contextlib.contextmanager
def copg_no_contrast(claim=None) -> Iterator[None]:
    from theorylab.algorithms.preference import copg

    def plain(logits, ref_logp, reward, mu, beta):
        logp = log_softmax(logits, axis=1)
        R = copg.regularised_score(logp, ref_logp, reward, beta)
        # the bug: E_mu [R (e_y - pi)], no contrastive partner (no baseline)
        return mu * R - (mu * R).sum(1, keepdims=True) * np.exp(logp)

    with _patched(copg, "copg_gradient", plain):
        yield


@contextlib.contextmanager
def oprl_no_reference(claim=None) -> Iterator[None]:
    from theorylab.algorithms.preference import oprl

    def no_reference(task, cond_logp, beta):
        return beta * cond_logp  # the bug: log pi, not log pi / ref

    with _patched(oprl, "step_rewards", no_reference):
        yield


@contextlib.contextmanager
def reward_clip_floor(claim=None) -> Iterator[None]:
    from theorylab.algorithms.policy_optimization import reward_refinement as rr

    original = rr.refine

    def floor(p, mode, eta=0.5):
        if mode == "clip":
            return np.maximum(np.asarray(p) - eta, 0.0)  # the bug: a floor, not a cap
        return original(p, mode, eta)

    with _patched(rr, "refine", floor):
        yield


@contextlib.contextmanager
def reward_delta_discounted(claim=None) -> Iterator[None]:
    from theorylab.algorithms.policy_optimization import reward_refinement as rr

    original = rr.refine

    def discounted(p, mode, eta=0.5):
        if mode == "delta":
            p = np.asarray(p, dtype=np.float64)
            return np.append(p[:-1] - 0.9 * p[1:], p[-1:])  # the bug: no longer telescopes
        return original(p, mode, eta)

    with _patched(rr, "refine", discounted):
        yield


@contextlib.contextmanager
def rapo_reverse_kl(claim=None) -> Iterator[None]:
    from theorylab.algorithms.policy_optimization import rapo

    original = rapo.optimum

    def reverse(base, reward, beta, tau, divergence="forward"):
        return original(base, reward, beta, tau, "reverse")  # the bug: the reverse KL

    with _patched(rapo, "optimum", reverse):
        yield


@contextlib.contextmanager
def rapo_confined_forward_kl(claim=None) -> Iterator[None]:
    from theorylab.algorithms.planning import divergence_optima
    from theorylab.algorithms.policy_optimization import rapo

    original = rapo.optimum

    def confined(base, reward, beta, tau, divergence="forward"):
        if divergence == "reverse":
            return original(base, reward, beta, tau, divergence)
        ref = rapo.reweighted_reference(base, reward, tau)
        return divergence_optima.forward_kl_optimum(ref, reward, beta)  # the bug: confined

    with _patched(rapo, "optimum", confined):
        yield


@contextlib.contextmanager
def rl_plus_no_mis(claim=None) -> Iterator[None]:
    from theorylab.algorithms.policy_optimization import rl_plus

    def ones(pi, mu, G, G_e):
        return np.ones_like(pi)  # the bug: no importance correction

    with _patched(rl_plus, "mis_weights", ones):
        yield


@contextlib.contextmanager
def vpo_online_bonus_dropped(claim=None) -> Iterator[None]:
    from theorylab.algorithms.preference import vpo_online

    original = vpo_online.round_solution

    def no_bonus(ref, wins, beta, alpha, R, r0):
        return original(ref, wins, beta, 0.0, R, r0)  # the bug: online DPO

    with _patched(vpo_online, "round_solution", no_bonus):
        yield


@contextlib.contextmanager
def vpo_online_local_solve(claim=None) -> Iterator[None]:
    from theorylab.algorithms.preference import vpo_online

    original = vpo_online.round_starts

    def warm_only(r0, R):
        return original(r0, R)[:1]  # the bug: a local solve from the warm start

    with _patched(vpo_online, "round_starts", warm_only):
        yield


MUTATIONS = (
    register_control(
        Control(
            "copg-no-contrast",
            "mutation",
            "CoPG as plain off-policy policy gradient, without the contrastive partner",
            copg_no_contrast,
        )
    ),
    register_control(
        Control(
            "oprl-no-reference",
            "mutation",
            "OPRL's step reward beta log pi(a|h) without the reference log-ratio",
            oprl_no_reference,
        )
    ),
    register_control(
        Control(
            "reward-clip-floor",
            "mutation",
            "Clip as a floor max(p - eta, 0) instead of a cap min(p - eta, 0)",
            reward_clip_floor,
        )
    ),
    register_control(
        Control(
            "reward-delta-discounted",
            "mutation",
            "Delta as p_t - 0.9 p_(t+1), which does not telescope",
            reward_delta_discounted,
        )
    ),
    register_control(
        Control(
            "rapo-reverse-kl",
            "mutation",
            "RAPO with the reverse KL to the base model instead of the forward KL",
            rapo_reverse_kl,
        )
    ),
    register_control(
        Control(
            "rapo-confined-forward-kl",
            "mutation",
            "RAPO's forward-KL optimum confined to the base model's support",
            rapo_confined_forward_kl,
        )
    ),
    register_control(
        Control(
            "rl-plus-no-mis",
            "mutation",
            "RL-PLUS without multiple importance sampling (external answers weighted 1)",
            rl_plus_no_mis,
        )
    ),
    register_control(
        Control(
            "vpo-online-bonus-dropped",
            "mutation",
            "online VPO without its optimistic value term (online DPO)",
            vpo_online_bonus_dropped,
        )
    ),
    register_control(
        Control(
            "vpo-online-local-solve",
            "mutation",
            "online VPO's rounds solved locally from the warm start only",
            vpo_online_local_solve,
        )
    ),
)
