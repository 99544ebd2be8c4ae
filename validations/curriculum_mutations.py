"""Known-bug mutations of the curriculum bandits (``validations/claims/curriculum.py``); appended
to ``mutations.MUTATIONS``:

* ``sec-mean-reward-value``: SEC's TD(0) target is the group's mean reward (pass rate) instead of
  its mean absolute advantage, so the curriculum chases the easiest categories
  (``sec.sec_reward``);
* ``dump-bonus-dropped``: DUMP's UCB index without its exploration term (greedy on the mean
  absolute advantage after one pull each) (``dump.ucb_scores`` at bonus 0);
* ``mopps-posterior-frozen``: MoPPS never updates its posteriors, so its Thompson draws are prior
  draws and the choice is random (``mopps.discounted_update`` returns its input);
* ``difficulty-filter-dropped``: the balanced filter keeps every group, zero-variance ones
  included (``difficulty_filtering.keep_group`` always true);
* ``seele-irt-slope-ignored``: SEELE inverts its item with slope 1 instead of the fitted beta
  (``seele.next_hint``);
* ``guide-importance-weights-dropped``: Guide trains on its hinted rollouts with weight 1, i.e. on
  the hinted objective (``guide.importance_ratio`` returns ones);
* ``rollin-target-only``: ROLLIN's task list holds only the target task, so the curriculum is
  never run -- learning from scratch under the curriculum's name (``rollin.task_sequence``);
* ``rollin-no-carry-over``: nothing passes from one task to the next -- each restarts from
  theta = 0 on the original start distribution (``rollin.carry_over``).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from theorylab.validations.controls import Control, register_control
from theorylab.validations.controls import patched as _patched


@contextlib.contextmanager
def sec_mean_reward_value(claim=None) -> Iterator[None]:
    from theorylab.algorithms.policy_optimization import sec

    def mean_reward(abs_adv, mean_reward):
        return mean_reward  # the bug: the pass rate, not the learning gain

    with _patched(sec, "sec_reward", mean_reward):
        yield


@contextlib.contextmanager
def dump_bonus_dropped(claim=None) -> Iterator[None]:
    from theorylab.algorithms.policy_optimization import dump

    original = dump.ucb_scores

    def greedy(total, counts, t, bonus):
        return original(total, counts, t, 0.0)  # the bug: no exploration term

    with _patched(dump, "ucb_scores", greedy):
        yield


@contextlib.contextmanager
def mopps_posterior_frozen(claim=None) -> Iterator[None]:
    from theorylab.algorithms.policy_optimization import mopps

    def frozen(a, b, k, G, lam, a0, b0):
        return a, b  # the bug: the observation is dropped

    with _patched(mopps, "discounted_update", frozen):
        yield


@contextlib.contextmanager
def difficulty_filter_dropped(claim=None) -> Iterator[None]:
    import numpy as np

    from theorylab.algorithms.policy_optimization import difficulty_filtering

    def keep_all(rbar, G, low, high):
        return np.ones(np.shape(rbar), dtype=bool)  # the bug: nothing is filtered

    with _patched(difficulty_filtering, "keep_group", keep_all):
        yield


@contextlib.contextmanager
def seele_irt_slope_ignored(claim=None) -> Iterator[None]:
    import numpy as np

    from theorylab.algorithms.policy_optimization import seele

    original = seele.next_hint

    def unit_slope(alpha, beta, target, previous):
        return original(alpha, np.ones_like(beta), target, previous)  # the bug: beta dropped

    with _patched(seele, "next_hint", unit_slope):
        yield


@contextlib.contextmanager
def guide_importance_weights_dropped(claim=None) -> Iterator[None]:
    import numpy as np

    from theorylab.algorithms.policy_optimization import guide

    def ones(pi, pi_hint):
        return np.ones(np.shape(pi))  # the bug: the hinted rollouts taken as on-policy

    with _patched(guide, "importance_ratio", ones):
        yield


@contextlib.contextmanager
def rollin_target_only(claim=None) -> Iterator[None]:
    from theorylab.algorithms.policy_optimization import rollin

    def target_only(n_tasks, schedule):
        return [n_tasks - 1]  # the bug: the easier tasks are dropped

    with _patched(rollin, "task_sequence", target_only):
        yield


@contextlib.contextmanager
def rollin_no_carry_over(claim=None) -> Iterator[None]:
    from theorylab.algorithms.policy_optimization import rollin

    def fresh(task, theta, rho, beta, warm_start):
        return 0.0 * theta, rho.copy()  # the bug: neither the logits nor the roll-in carried

    with _patched(rollin, "carry_over", fresh):
        yield


MUTATIONS = (
    register_control(
        Control(
            "sec-mean-reward-value",
            "mutation",
            "SEC's arm value tracks the mean reward instead of the absolute advantage",
            sec_mean_reward_value,
        )
    ),
    register_control(
        Control(
            "dump-bonus-dropped",
            "mutation",
            "DUMP's UCB index without its exploration bonus (greedy)",
            dump_bonus_dropped,
        )
    ),
    register_control(
        Control(
            "mopps-posterior-frozen",
            "mutation",
            "MoPPS's posteriors never updated (Thompson draws from the prior)",
            mopps_posterior_frozen,
        )
    ),
    register_control(
        Control(
            "difficulty-filter-dropped",
            "mutation",
            "balanced difficulty filtering keeps every group (no filter)",
            difficulty_filter_dropped,
        )
    ),
    register_control(
        Control(
            "seele-irt-slope-ignored",
            "mutation",
            "SEELE inverts its item-response model with slope 1, not the fitted one",
            seele_irt_slope_ignored,
        )
    ),
    register_control(
        Control(
            "guide-importance-weights-dropped",
            "mutation",
            "Guide's hinted rollouts used without their importance weights",
            guide_importance_weights_dropped,
        )
    ),
    register_control(
        Control(
            "rollin-target-only",
            "mutation",
            "ROLLIN's task list holds the target task only (learning from scratch)",
            rollin_target_only,
        )
    ),
    register_control(
        Control(
            "rollin-no-carry-over",
            "mutation",
            "ROLLIN restarts every task from theta = 0 on rho (nothing carried over)",
            rollin_no_carry_over,
        )
    ),
)
