"""Known-bug mutations of the RLVR twins of issue 28 (``validations/claims/rlvr_twins.py``);
appended to ``mutations.MUTATIONS``:

* ``rover-leaf-fraction``: ROVER's Q^{pi_u}(h, a) taken as the fraction of the responses through
  (h, a) that are correct, each response weighted equally, instead of the probability that the
  uniform policy ends on a correct one (which weights a response by V^-(its tokens after a)); on
  a tree whose responses all have one length the two are proportional at every node;
* ``rover-target-not-detached``: ROVER's practical target A + rho (next state's vocabulary-mean
  log-ratio) left in the autograd graph, so the gradient also flows through the bootstrap;
* ``pacs-ratio-length-normalised``: PACS's implicit reward beta sum_t log pi/pi_old averaged over
  a response's tokens (the authors' ``reward_method="2"`` normalisation) instead of summed;
* ``brorl-unweighted-mood``: BroRL's batch mood S_R taken as the plain sum of the sampled tokens'
  rewards instead of their probability-weighted sum R_c P_pos + R_w P_neg;
* ``prefixrl-prefix-resampled``: PrefixRL's prefix sampled on-policy with its completion (its
  tokens' probabilities multiplied in) instead of forced, so every prefix length is the root.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from theorylab.validations.controls import Control, register_control
from theorylab.validations.controls import patched as _patched


@contextlib.contextmanager
def rover_leaf_fraction(claim=None) -> Iterator[None]:
    import numpy as np

    from theorylab.algorithms.deep import rover

    def leaf_fraction(task):
        total = np.zeros((task.n_prompts, task.n_nodes, task.V))
        count = np.zeros((task.n_nodes, task.V))
        for y, _, h, a, _ in rover._positions(task):
            total[:, h, a] += task.mean_reward[:, y]
            count[h, a] += 1.0
        return total / count  # the bug: every response below (h, a) weighted alike

    with _patched(rover, "uniform_q", leaf_fraction):
        yield


@contextlib.contextmanager
def rover_target_not_detached(claim=None) -> Iterator[None]:
    import torch

    from theorylab.algorithms.deep import rover_loss

    def attached(advantages, mean_logp, old_mean_logp, mask, rho):
        nxt = rho * (mean_logp[:, 1:] - old_mean_logp[:, 1:]) * mask[:, 1:]
        return advantages[:, None] + torch.cat([nxt, torch.zeros_like(mask[:, :1])], dim=1)

    with _patched(rover_loss, "bootstrap_target", attached):  # the bug: no .detach()
        yield


@contextlib.contextmanager
def pacs_ratio_length_normalised(claim=None) -> Iterator[None]:
    from theorylab.algorithms.deep import pacs

    original = pacs.implicit_reward

    def token_mean(logp, old_logp, mask):
        return original(logp, old_logp, mask) / mask.sum(dim=1)  # the bug: / |o|

    with _patched(pacs, "implicit_reward", token_mean):
        yield


@contextlib.contextmanager
def brorl_unweighted_mood(claim=None) -> Iterator[None]:
    import numpy as np

    from theorylab.algorithms.deep import brorl

    def unweighted(p, correct, sampled, n, *, r_c=1.0, r_w=-1.0, eta=1.0):
        rewards = np.where(correct, r_c, r_w)
        s = np.asarray(sampled, dtype=float)
        mood = (s * rewards).sum(-1, keepdims=True)  # the bug: no p_j weights
        return eta / n * p * (rewards * s - mood)

    with _patched(brorl, "logit_update", unweighted):
        yield


@contextlib.contextmanager
def prefixrl_prefix_resampled(claim=None) -> Iterator[None]:
    import numpy as np

    from theorylab.algorithms.deep import prefixrl

    def resampled(task, cond, trace, ell):
        picked = cond[:, task.token_nodes, task.tokens]  # (P, Y, L)
        whole = np.where(task.token_mask[None] > 0, picked, 1.0).prod(axis=-1)  # the bug
        return (whole * prefixrl._through(task, trace, ell)).sum(axis=1)

    with _patched(prefixrl, "prefix_success", resampled):
        yield


MUTATIONS = tuple(
    register_control(Control(name, "mutation", description, mutation))
    for name, description, mutation in (
        (
            "rover-leaf-fraction",
            "ROVER's uniform-policy Q taken as the fraction of correct responses below (h, a)",
            rover_leaf_fraction,
        ),
        (
            "rover-target-not-detached",
            "ROVER's regression target (the next state's bootstrap) left attached to the graph",
            rover_target_not_detached,
        ),
        (
            "pacs-ratio-length-normalised",
            "PACS's implicit reward averaged over a response's tokens instead of summed",
            pacs_ratio_length_normalised,
        ),
        (
            "brorl-unweighted-mood",
            "BroRL's batch mood S_R summed over the sampled tokens without their probabilities",
            brorl_unweighted_mood,
        ),
        (
            "prefixrl-prefix-resampled",
            "PrefixRL's prefix sampled on-policy with the completion instead of forced",
            prefixrl_prefix_resampled,
        ),
    )
)
