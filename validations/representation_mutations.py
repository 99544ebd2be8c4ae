"""Known-bug mutations of the representation-learning seeds
(``validations/claims/representation.py``), appended to ``mutations.MUTATIONS``:

* ``contrastive-negatives-from-positives`` (Contrastive UCB, 000#12; the control of
  ``contrastive-ucb-recovers-subspace``): the negatives of the contrastive loss drawn from the
  positive law at the same (s, a) (the empirical next-state distribution of the data so far)
  instead of the fixed uniform law P^- (``contrastive_ucb.sample_negatives``). The population
  minimiser is then f = 1 everywhere: the loss says nothing about phi*, and the learned span stays
  where the initialisation put it.
* ``musik-one-step-inverse-kinematics``: MusIK (001#27; the control of
  ``musik-decodes-block-lock``) decodes x_h by one-step inverse kinematics, the predictor of
  a_{h-1} from (x_{h-1}, x_h) (``musik.inverse_kinematics_signatures``), the baseline that merges
  the good latents of a combination lock.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import numpy as np

from theorylab.validations.controls import Control, register_control
from theorylab.validations.controls import patched as _patched


@contextlib.contextmanager
def contrastive_negatives_from_positives(claim=None) -> Iterator[None]:
    from theorylab.algorithms.online import contrastive_ucb

    def from_positives(new, counts, n_negatives, rng):
        n = new.sum(axis=-1).astype(np.int64) * n_negatives  # (..., SA)
        N = counts.sum(axis=-1, keepdims=True)  # (..., SA, 1)
        law = np.where(N > 0, counts / np.maximum(N, 1.0), 1.0 / counts.shape[-1])
        return rng.multinomial(n, law).astype(np.float64)  # the bug: P^- = P_hat(.|s, a)

    with _patched(contrastive_ucb, "sample_negatives", from_positives):
        yield


MUTATIONS = (
    register_control(
        Control(
            "contrastive-negatives-from-positives",
            "mutation",
            "Contrastive UCB's negatives drawn from the positive law at (s, a), not uniform",
            contrastive_negatives_from_positives,
        )
    ),
)


# ----------------------------------------------------------------------------- MusIK (001#27)
@contextlib.contextmanager
def musik_one_step_inverse_kinematics(claim=None) -> Iterator[None]:
    """MusIK's decoder replaced by one-step inverse kinematics (HOMER-style): x_h is decoded from
    the predictor of a_{h-1} given (x_{h-1}, x_h) -- the signature of x_h is
    C(x_{h-1} = x, a_{h-1} = a, x_h) / C(x_h) -- instead of a_h given (x_h, x_{h+k}). Every good
    latent of a combination lock is reached by the same (predecessor, secret action) law, so the
    good latents merge (layer 0, with no predecessor, keeps the multi-step signature)."""
    from theorylab.algorithms.online import musik

    original = musik.inverse_kinematics_signatures

    def one_step(states, actions, rewards, h, S, A, k_max):
        if h == 0:
            return original(states, actions, rewards, h, S, A, k_max)
        x = states[:, h]
        idx = x * (S * A) + states[:, h - 1] * A + actions[:, h - 1]
        sig = np.bincount(idx, minlength=S * S * A).reshape(S, S * A).astype(np.float64)
        return sig / np.maximum(np.bincount(x, minlength=S), 1.0)[:, None]

    with _patched(musik, "inverse_kinematics_signatures", one_step):
        yield


MUTATIONS = (
    *MUTATIONS,
    register_control(
        Control(
            "musik-one-step-inverse-kinematics",
            "mutation",
            "MusIK's decoder from one-step inverse kinematics (a_{h-1} from (x_{h-1}, x_h))",
            musik_one_step_inverse_kinematics,
        )
    ),
)


# ------------------------------------------------------------------------ TD-JEPA (002-004#A4)
@contextlib.contextmanager
def td_jepa_degenerate_init(claim=None) -> Iterator[None]:
    """TD-JEPA's state encoder initialised with d copies of one column (rank 1) instead of
    orthonormal columns: the semi-gradient flow keeps the row space of Phi, so it never leaves
    rank 1 (the collapse the prescribed initialisation avoids)."""
    from theorylab.algorithms.offline import td_jepa

    original = td_jepa.initial_encoders

    def degenerate(B, S, d, rng):
        Phi, Psi = original(B, S, d, rng)
        return np.repeat(Phi[..., :1], d, axis=-1), Psi

    with _patched(td_jepa, "initial_encoders", degenerate):
        yield


@contextlib.contextmanager
def td_jepa_no_stop_gradient(claim=None) -> Iterator[None]:
    """TD-JEPA without the stop-gradient: the full gradient of both TD losses, through the
    bootstrapped term gamma P Phi T and into the other loss's target encoder. Zero loss is then
    reached by any pair with Psi = (I - gamma P) Phi T: nothing pulls the spans to the top
    singular subspace, and the encoders shrink (measured: smallest singular value 0.03)."""
    from theorylab.algorithms.offline import td_jepa

    def full_gradients(Phi, Psi, P, gamma):
        T = td_jepa.lstd_predictor(Phi, Psi, P, gamma)
        P_adj = np.swapaxes(P, -1, -2)
        T_task = td_jepa.lstd_predictor(Psi, Phi, P_adj, gamma)
        R = Phi @ T - Psi - gamma * (P @ (Phi @ T))
        R_task = Psi @ T_task - Phi - gamma * (P_adj @ (Psi @ T_task))
        scale = np.maximum(
            np.linalg.norm(T, 2, axis=(-2, -1)), np.linalg.norm(T_task, 2, axis=(-2, -1))
        )
        scale = np.maximum(scale**2, 1.0)[:, None, None]
        G = ((R - gamma * (P_adj @ R)) @ np.swapaxes(T, -1, -2) - R_task) / scale
        G_task = ((R_task - gamma * (P @ R_task)) @ np.swapaxes(T_task, -1, -2) - R) / scale
        return G, G_task

    with _patched(td_jepa, "semi_gradients", full_gradients):
        yield


MUTATIONS = (
    *MUTATIONS,
    register_control(
        Control(
            "td-jepa-degenerate-init",
            "mutation",
            "TD-JEPA's state encoder initialised at rank 1 (d copies of one column)",
            td_jepa_degenerate_init,
        )
    ),
    register_control(
        Control(
            "td-jepa-no-stop-gradient",
            "mutation",
            "TD-JEPA trained by the full gradient (no stop-gradient on the latent targets)",
            td_jepa_no_stop_gradient,
        )
    ),
)


# ------------------------------------------------------- representation from videos (001#30)
@contextlib.contextmanager
def exo_block_distractor_iid(claim=None) -> Iterator[None]:
    """The exogenous block MDP's distractor re-drawn iid every step whatever ``noise`` says (a
    generator that never makes the distractor persist): the video objectives then decode the
    latent on the "exogenous" instance too, and the claim's failing side cannot fail."""
    from theorylab.mdps.families import exo_block

    original = exo_block.distractor_kernel

    def always_iid(E, noise, stay):
        return original(E, "iid", stay)

    with _patched(exo_block, "distractor_kernel", always_iid):
        yield


@contextlib.contextmanager
def video_ik_without_actions(claim=None) -> Iterator[None]:
    """The inverse-kinematics decoder fitted without the action labels: its signature is the
    action-free pair model P_hat(x'|x) (what a video gives), so it is a video objective."""
    from theorylab.algorithms.offline import video_representation as vr

    original = vr.signatures

    def no_actions(C, objective, prior=1.0):
        return original(C, "forward" if objective == "inverse-kinematics" else objective, prior)

    with _patched(vr, "signatures", no_actions):
        yield


MUTATIONS = (
    *MUTATIONS,
    register_control(
        Control(
            "exo-block-distractor-iid",
            "mutation",
            "exo-block's distractor drawn iid every step even when noise=sticky",
            exo_block_distractor_iid,
        )
    ),
    register_control(
        Control(
            "video-ik-without-actions",
            "mutation",
            "the inverse-kinematics decoder fitted on action-free pairs (the forward model)",
            video_ik_without_actions,
        )
    ),
)


# ------------------------------------------- offline RL with observation histories (000#49)
@contextlib.contextmanager
def bisimulation_no_merge(claim=None) -> Iterator[None]:
    """bisimulation-vi with confidence radii 0: observations merge only when their estimates are
    equal, so (almost surely) every observation is its own block and the abstraction is the last
    observation, not the latent state."""
    from theorylab.algorithms.offline import history_abstraction

    def zero(n, n_blocks, U, delta):
        z = np.zeros(np.shape(n))
        return z, z

    with _patched(history_abstraction, "radius", zero):
        yield


MUTATIONS = (
    *MUTATIONS,
    register_control(
        Control(
            "bisimulation-no-merge",
            "mutation",
            "bisimulation-vi's confidence radii set to 0 (no observations merged)",
            bisimulation_no_merge,
        )
    ),
)


@contextlib.contextmanager
def bisimulation_seen_histories_only(claim=None) -> Iterator[None]:
    """bisimulation-vi lifts its block policy only to the histories that occur in the data;
    every other history gets Q = 0 and so action 0 (a learner that memoises histories instead
    of acting through the abstraction). On ``history-stitch`` the optimal path's second half,
    after a start on the path, is never in the data, so the stitched policy is lost there."""
    from theorylab.algorithms.offline import history_abstraction

    real = history_abstraction.bisimulation_vi

    def seen_only(dataset, observations=None, delta=0.1):
        res = real(dataset, observations, delta)
        Q = res.Q.copy()  # (B, H, S, A)
        for b in range(dataset.n_seeds):
            seen = np.zeros(Q.shape[1:3], dtype=bool)  # (H, S)
            seen[dataset.stages[b], dataset.states[b]] = True
            Q[b][~seen] = 0.0
        res.Q = Q
        res.policy = history_abstraction.greedy(Q)
        return res

    with _patched(history_abstraction, "bisimulation_vi", seen_only):
        yield


MUTATIONS = (
    *MUTATIONS,
    register_control(
        Control(
            "bisimulation-seen-histories-only",
            "mutation",
            "bisimulation-vi's block policy lifted only to the histories seen in the data",
            bisimulation_seen_histories_only,
        )
    ),
)


# ------------------------------------------------------------- HiP-BMDP abstractions (001#31)
@contextlib.contextmanager
def hip_ignores_shared_emission(claim=None) -> Iterator[None]:
    """hip-abstraction-vi's pooled decoder replaced by one decoder per task: the learner ignores
    that the block emission is shared, so each task's abstraction sees only its N / M samples."""
    from theorylab.algorithms.offline import hip_abstraction

    with _patched(hip_abstraction, "shared_decoder", hip_abstraction.per_task_decoders):
        yield


MUTATIONS = (
    *MUTATIONS,
    register_control(
        Control(
            "hip-ignores-shared-emission",
            "mutation",
            "hip-abstraction-vi decodes every task from its own samples (no pooling)",
            hip_ignores_shared_emission,
        )
    ),
)
