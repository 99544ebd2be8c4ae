"""Known-bug mutations of log-barrier FTRL policy optimisation (002-004#A1; the controls of
``adversarial-linear-q-sqrt-k`` in ``validations/claims/adversarial.py``); appended to
``mutations.MUTATIONS``:

* ``adv-ftrl-uniform-exploration``: the log-barrier iterate mixed with uniform exploration
  ``gamma_k = min(1/2, k^{-1/3})`` (``LogBarrierFTRL._iterate``), the exploration that gives the
  earlier methods their K^{2/3}: the regret slope rises to about 2/3.
* ``adv-linear-q-no-inverse-covariance``: the loss estimator ``phi^T phi(s_h, a_h) L_h`` without
  ``Sigma^+`` (``linear_q_estimator.linear_q_estimate``): biased, and no longer the tabular
  importance weight with one-hot features.
* ``adv-exp-weights-exploration-per-action`` (the control of
  ``adversarial-linear-q-action-count``): algorithm 2's uniform share scaled by the number of
  actions, ``gamma_k = min(1/2, A exploration_scale eta_k)``
  (``MagnitudeReducedExpWeights.exploration``): the exploration cost grows linearly in A.
* ``adv-simulator-free-exploration-never-decays`` (the control of
  ``adversarial-linear-simulator-free-sublinear``): the simulator-free learner's uniform share
  stuck at 1/2 (``SimulatorFreeLogBarrierFTRL.exploration``, the episode index forgotten): linear
  regret.
* ``adv-exp-weights-baseline-exploration`` (the control of
  ``adversarial-linear-magnitude-reduced-sqrt-k``): algorithm 2's uniform share set to the K^{2/3}
  baseline's ``gamma_k = min(1/2, k^{-1/3})`` instead of ``exploration_scale eta_k``
  (``MagnitudeReducedExpWeights.exploration``): the gamma K term is of order K^{2/3}.
* ``adv-exp-weights-no-uniform-share`` (the control of
  ``adversarial-linear-estimator-magnitude``): algorithm 2 without its uniform share
  (``gamma_k = 0``): the magnitude reduction removed, the estimate unbounded.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import numpy as np

from theorylab.validations.controls import Control, register_control
from theorylab.validations.controls import patched as _patched


@contextlib.contextmanager
def adv_ftrl_uniform_exploration(claim=None) -> Iterator[None]:
    from theorylab.algorithms.adversarial.policy_optimization import LogBarrierFTRL

    original = LogBarrierFTRL._iterate

    def mixed(self) -> np.ndarray:
        gamma = min(0.5, self.k ** (-1.0 / 3.0))  # the bug: forced uniform exploration
        return (1.0 - gamma) * original(self) + gamma / self.A

    with _patched(LogBarrierFTRL, "_iterate", mixed):
        yield


@contextlib.contextmanager
def adv_linear_q_no_inverse_covariance(claim=None) -> Iterator[None]:
    from theorylab.algorithms.adversarial import linear_q_estimator

    def without_inverse(phi, covariance, states, actions, losses) -> np.ndarray:
        identity = np.broadcast_to(np.eye(phi.shape[-1]), np.shape(covariance))
        return original(phi, identity, states, actions, losses)  # the bug: Sigma^+ -> I

    original = linear_q_estimator.linear_q_estimate
    with _patched(linear_q_estimator, "linear_q_estimate", without_inverse):
        yield


@contextlib.contextmanager
def adv_exp_weights_exploration_per_action(claim=None) -> Iterator[None]:
    from theorylab.algorithms.adversarial.policy_optimization import MagnitudeReducedExpWeights

    def per_action(self) -> float:
        return min(0.5, self.A * self.exploration_scale * self.learning_rate())  # the bug: x A

    with _patched(MagnitudeReducedExpWeights, "exploration", per_action):
        yield


@contextlib.contextmanager
def adv_simulator_free_exploration_never_decays(claim=None) -> Iterator[None]:
    from theorylab.algorithms.adversarial.policy_optimization import SimulatorFreeLogBarrierFTRL

    def stuck(self) -> float:
        return 0.5  # the bug: min(1/2, k^(-1/3)) without k

    with _patched(SimulatorFreeLogBarrierFTRL, "exploration", stuck):
        yield


@contextlib.contextmanager
def adv_exp_weights_baseline_exploration(claim=None) -> Iterator[None]:
    from theorylab.algorithms.adversarial.policy_optimization import MagnitudeReducedExpWeights

    def baseline_share(self) -> float:
        return min(0.5, self.k ** (-1.0 / 3.0))  # the bug: the K^(2/3) baseline's share

    with _patched(MagnitudeReducedExpWeights, "exploration", baseline_share):
        yield


@contextlib.contextmanager
def adv_exp_weights_no_uniform_share(claim=None) -> Iterator[None]:
    from theorylab.algorithms.adversarial.policy_optimization import MagnitudeReducedExpWeights

    def no_share(self) -> float:
        return 0.0  # the bug: the magnitude reduction (the uniform share) dropped

    with _patched(MagnitudeReducedExpWeights, "exploration", no_share):
        yield


MUTATIONS = (
    register_control(
        Control(
            "adv-ftrl-uniform-exploration",
            "mutation",
            "log-barrier FTRL mixed with uniform exploration gamma_k = k^(-1/3) (the K^(2/3) "
            "methods' exploration)",
            adv_ftrl_uniform_exploration,
        )
    ),
    register_control(
        Control(
            "adv-linear-q-no-inverse-covariance",
            "mutation",
            "the linear-Q loss estimator without Sigma^+ (phi^T phi(s_h, a_h) L_h: biased)",
            adv_linear_q_no_inverse_covariance,
        )
    ),
    register_control(
        Control(
            "adv-exp-weights-exploration-per-action",
            "mutation",
            "algorithm 2's uniform share scaled by the number of actions (gamma_k = A eta_k)",
            adv_exp_weights_exploration_per_action,
        )
    ),
    register_control(
        Control(
            "adv-simulator-free-exploration-never-decays",
            "mutation",
            "the simulator-free learner's uniform share stuck at 1/2 (the episode index forgotten)",
            adv_simulator_free_exploration_never_decays,
        )
    ),
    register_control(
        Control(
            "adv-exp-weights-baseline-exploration",
            "mutation",
            "algorithm 2's uniform share set to the K^(2/3) baseline's gamma_k = k^(-1/3)",
            adv_exp_weights_baseline_exploration,
        )
    ),
    register_control(
        Control(
            "adv-exp-weights-no-uniform-share",
            "mutation",
            "algorithm 2 without its uniform share (gamma_k = 0: the estimate's magnitude "
            "unbounded)",
            adv_exp_weights_no_uniform_share,
        )
    ),
)
