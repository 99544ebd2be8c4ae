"""Known-bug mutations of the regression losses (issue 28), the controls of
``astar-po-optimal-advantage-regression``, ``rebel-refuel-npg-step`` and
``tbrm-trajectory-bellman-residual`` (``validations/claims/deep.py``); appended to
``mutations.MUTATIONS`` (registered only where torch is installed):

* ``regression-ratio-length-normalised``: the log-ratio of A*-PO / REBEL / REFUEL / TBRM averaged
  over a response's tokens instead of summed (a length normalisation the papers do not have; on a
  tree whose responses have one length it would change only the scale);
* ``astar-po-v-star-mean-reward``: A*-PO's stage-1 V* taken as the mean reward of the reference
  samples (the authors' code's ``beta1 = 0`` option) instead of beta log-mean-exp(r / beta);
* ``tbrm-without-root-value``: TBRM's residual without V_theta(s_1) (the root value set to 0);
* ``qsharp-mean-return``: Q#'s certainty equivalent beta log E exp(Z/beta) computed as the mean
  return E Z (the unregularised Q of the reference);
* ``rto-implicit-reward-length-normalised``: RTO's token rewards averaged over a response's
  tokens instead of summed;
* ``exo-forward-kl``: EXO's divergence taken as the forward KL(p_r || p_theta) (DPO's direction)
  instead of the reverse KL(p_theta || p_r).
"""

from __future__ import annotations

import contextlib
import importlib.util
from collections.abc import Iterator

from theorylab.validations.controls import Control, register_control
from theorylab.validations.controls import patched as _patched


@contextlib.contextmanager
def regression_ratio_length_normalised(claim=None) -> Iterator[None]:
    from theorylab.algorithms.deep import regression_losses as rl
    from theorylab.algorithms.deep.masking import masked_sum

    def token_mean(logp, base_logp, m):
        return masked_sum(logp - base_logp.detach(), m) / m.sum(dim=1)  # the bug: / |y|

    with _patched(rl, "sequence_log_ratio", token_mean):
        yield


@contextlib.contextmanager
def astar_po_v_star_mean_reward(claim=None) -> Iterator[None]:
    from theorylab.algorithms.deep import regression_losses as rl

    def mean_reward(rewards, beta, weights=None):
        return rewards.mean(1) if weights is None else (weights * rewards).sum(1)  # the bug

    with _patched(rl, "log_mean_exp_value", mean_reward):
        yield


@contextlib.contextmanager
def tbrm_without_root_value(claim=None) -> Iterator[None]:
    from theorylab.algorithms.deep import regression_losses as rl

    original = rl.tbrm_root_values

    def zero(root_logits, ref_root_logits, beta):
        return 0.0 * original(root_logits, ref_root_logits, beta)  # the bug: no V(s_1)

    with _patched(rl, "tbrm_root_values", zero):
        yield


@contextlib.contextmanager
def qsharp_mean_return(claim=None) -> Iterator[None]:
    import numpy as np

    from theorylab.algorithms.deep import qsharp

    def mean(atoms, probs, beta):
        return (np.broadcast_to(atoms, probs.shape) * probs).sum(axis=(-2, -1))  # the bug

    with _patched(qsharp, "certainty_equivalent", mean):
        yield


@contextlib.contextmanager
def rto_implicit_reward_length_normalised(claim=None) -> Iterator[None]:
    from theorylab.algorithms.deep import rto

    original = rto.implicit_return

    def token_mean(task, tok_reward):
        return original(task, tok_reward) / task.token_mask.sum(1)[None]  # the bug: / |y|

    with _patched(rto, "implicit_return", token_mean):
        yield


@contextlib.contextmanager
def exo_forward_kl(claim=None) -> Iterator[None]:
    from theorylab.algorithms.deep import exo

    def forward(log_p_theta, log_p_r):
        return (log_p_r.exp() * (log_p_r - log_p_theta)).sum(-1)  # the bug: KL(p_r || p_theta)

    with _patched(exo, "exo_divergence", forward):
        yield


MUTATIONS = ()
if importlib.util.find_spec("torch") is not None:
    MUTATIONS = tuple(
        register_control(Control(name, "mutation", description, mutation))
        for name, description, mutation in (
            (
                "regression-ratio-length-normalised",
                "the regression losses' log-ratio averaged over a response's tokens, not summed",
                regression_ratio_length_normalised,
            ),
            (
                "astar-po-v-star-mean-reward",
                "A*-PO's V* estimated by the mean reference reward instead of log-mean-exp",
                astar_po_v_star_mean_reward,
            ),
            (
                "tbrm-without-root-value",
                "TBRM's trajectory residual without the root value V_theta(s_1)",
                tbrm_without_root_value,
            ),
            (
                "qsharp-mean-return",
                "Q#'s certainty equivalent beta log E exp(Z/beta) taken as the mean return",
                qsharp_mean_return,
            ),
            (
                "rto-implicit-reward-length-normalised",
                "RTO's token rewards averaged over a response's tokens instead of summed",
                rto_implicit_reward_length_normalised,
            ),
            (
                "exo-forward-kl",
                "EXO's reverse KL(p_theta || p_r) computed as the forward KL(p_r || p_theta)",
                exo_forward_kl,
            ),
        )
    )
