r"""MusIK: multi-step inverse kinematics for block MDPs (decode latent states, then plan).

Seed reference: ``seed-catalogue-001.md#27``. Paper: Zakaria Mhammedi, Dylan J. Foster, Alexander
Rakhlin, "Representation Learning with Multi-Step Inverse Kinematics: An Efficient and Optimal
Approach to Rich-Observation RL", ICML 2023, arXiv:2304.05889. Read: the catalogue row and the
abstract [V] ("multi-step inverse kinematics": predict the agent's own action from the current
and a future observation; systematic, non-optimistic exploration; rate-optimal 1/eps^2 sample
complexity in the accuracy). The algorithm below is reconstructed [A]: the paper's function
classes, its policy-cover recursion and its constants were not read.

Episodic, layer by layer (``samples`` = n episodes per layer h = 0 .. H-1, then the output
policy is played):

1. **Roll-in** for layer h >= 1: pick a decoded latent z of step h-1 uniformly, follow the plan
   that reaches z in the decoded model (``reach_policy``: DP on the estimated latent transitions
   T_hat_t, t < h-1, with the indicator of z at h-1 as the terminal value), then uniform actions
   from step h-1 on (layer 0: uniform actions throughout; x_0 ~ mu0).
2. **Multi-step inverse kinematics** for the decoder phi_h of x_h: the Bayes predictor of the
   uniform action a_h from (x_h, x_{h+k}), k = 1 .. ``k_max`` (the reward r_h at the last step),
   weighted by the target's frequency, is the signature
   v(x)[k, a, x'] = C_k(x_h = x, a_h = a, x_{h+k} = x') / C(x_h = x)
   (``inverse_kinematics_signatures``); phi_h clusters the signatures into ``n_latent`` groups
   (Ward linkage; an unvisited observation has signature 0). Observations of one latent state
   share the population signature (it depends on x only through z(x)), so the decoder is exact
   up to a relabelling once the counts concentrate.
3. **Latent model**: T_hat_{h-1}(z' | z, a) from the layer-h tuples (phi_{h-1}(x_{h-1}), a_{h-1},
   phi_h(x_h)); rewards r_hat(z, a) at the last step; the initial law p_hat_0 from layer 0.
4. **Output**: the optimal plan of the decoded model, pi_h(x) = argmax_a Q_hat_h(phi_h(x), a);
   ``value_estimate`` returns V_hat = sum_z p_hat_0(z) V_hat_0(z) (the planning value).

Known: ``n_latent`` (an upper bound on the latent states per step, as in the paper's setting).
The one-step inverse-kinematics baseline (HOMER-style: decode x_h from the predictor of a_{h-1}
given (x_{h-1}, x_h)) is the registered mutation ``musik-one-step-inverse-kinematics``: on a
combination lock every good latent at h is reached by the same (predecessor, secret action)
law, so it merges them.

Memory: the trajectories of every episode, O(K H) per seed; the decoders O(H S).
"""

from __future__ import annotations

import numpy as np

from theorylab.agent import EnvSpec, read_only_copy
from theorylab.algorithms.registry import register


def inverse_kinematics_signatures(
    states: np.ndarray, actions: np.ndarray, rewards: np.ndarray, h: int, S: int, A: int, k_max: int
) -> np.ndarray:
    """Multi-step inverse-kinematics signatures of the observations at step h, ``(S, D)``.

    states, actions, rewards: one seed's layer-h episodes ``(n, H)``. Row x is
    C_k(x, a, x') / C(x) over k = 1 .. k_max (targets x_{h+k} within the horizon) and, at the
    last step, C(x, a, r = 1) / C(x) (the reward as the future).
    """
    n, H = states.shape
    x = states[:, h]  # (n,)
    C = np.bincount(x, minlength=S).astype(np.float64)  # (S,)
    blocks = []
    for k in range(1, k_max + 1):
        if h + k >= H:
            break
        idx = (x * A + actions[:, h]) * S + states[:, h + k]
        blocks.append(np.bincount(idx, minlength=S * A * S).reshape(S, A * S))
    if h == H - 1:
        idx = x * A + actions[:, h]
        blocks.append(np.bincount(idx, weights=rewards[:, h], minlength=S * A).reshape(S, A))
    sig = np.concatenate(blocks, axis=1).astype(np.float64)  # (S, D)
    return sig / np.maximum(C, 1.0)[:, None]


def cluster(signatures: np.ndarray, n_latent: int) -> np.ndarray:
    """Labels ``(S,)`` in 0 .. n_latent-1: Ward clustering of the signature rows."""
    from scipy.cluster.hierarchy import fcluster, linkage

    S = signatures.shape[0]
    if S <= n_latent:
        return np.arange(S)
    labels = fcluster(linkage(signatures, method="ward"), t=n_latent, criterion="maxclust")
    return labels.astype(np.int64) - 1


def reach_policy(T_hat: np.ndarray, decoders: np.ndarray, target: int, steps: int) -> np.ndarray:
    """Observation policy ``(steps, S)`` maximising the decoded-model probability of being in
    latent ``target`` at step ``steps``; T_hat ``(>= steps, N, A, N)``, decoders ``(H, S)``."""
    N = T_hat.shape[1]
    W = (np.arange(N) == target).astype(np.float64)  # (N,)
    pol = np.zeros((steps, decoders.shape[1]), dtype=np.int64)
    for t in range(steps - 1, -1, -1):
        Q = T_hat[t] @ W  # (N, A)
        pol[t] = Q[decoders[t]].argmax(axis=-1)
        W = Q.max(axis=-1)
    return pol


@register(
    "musik",
    kind="online",
    problem="tabular",
    papers=("001#27",),
    summary="MusIK (Mhammedi et al. 2023): multi-step inverse-kinematics decoder for block MDPs",
)
class MusIK:
    """MusIK (reconstructed), layer by layer: roll in, decode by inverse kinematics, plan."""

    name = "musik"

    def __init__(
        self,
        env: EnvSpec,
        n_seeds: int,
        rngs,
        *,
        episodes: int,
        samples: int = 200,
        n_latent: int | None = None,
        k_max: int = 2,
    ) -> None:
        for key, val in (("episodes", episodes), ("samples", samples), ("k_max", k_max)):
            if isinstance(val, bool) or int(val) != val or val < 1:
                raise ValueError(f"musik: {key} must be a positive integer, got {val!r}")
        if n_latent is None or isinstance(n_latent, bool) or int(n_latent) != n_latent:
            raise ValueError(
                "musik: n_latent must be a positive integer (the number of latent states per "
                f"step, e.g. n_latent=3), got {n_latent!r}"
            )
        if n_latent < 1:
            raise ValueError(f"musik: n_latent must be a positive integer, got {n_latent!r}")
        if len(rngs) != n_seeds:
            raise ValueError(f"musik: got {len(rngs)} generators for n_seeds={n_seeds}")
        self.n_seeds, self.rngs = B, _ = int(n_seeds), rngs
        self.S, self.A, self.H = S, A, H = env.S, env.A, env.H
        self.samples, self.N, self.k_max = int(samples), int(n_latent), int(k_max)
        N = self.N
        self.data = [[] for _ in range(B)]  # per seed: (states, actions, rewards) of each episode
        self.decoders = np.zeros((B, H, S), dtype=np.int64)  # phi_h(x): (B, H, S)
        self.T_hat = np.full((B, H, N, A, N), 1.0 / N)  # (B, H, N, A, N)
        self.r_hat = np.zeros((B, N, A))  # last-step rewards: (B, N, A)
        self.p0 = np.full((B, N), 1.0 / N)  # (B, N)
        self.V_hat = np.zeros(B)
        self.final = np.zeros((B, H, S), dtype=np.int64)
        self.k = 0
        self._choose()

    @property
    def layer(self) -> int:
        """The layer whose data the next episode collects (H once every layer is decoded)."""
        return min(self.k // self.samples, self.H)

    def _choose(self) -> None:
        """The next episode's policy ``(B, H, S)``: roll-in plan then uniform actions."""
        B, H, S, A = self.n_seeds, self.H, self.S, self.A
        h = self.layer
        if h == H:
            self._policy = self.final
            return
        if (
            self.k % self.samples == 0 and h >= 1
        ):  # a new layer: the reach plans of its roll-in, once
            self._reach = np.zeros((B, self.N, max(h - 1, 0), S), dtype=np.int64)
            for b in range(B):
                for z in range(self.N):
                    self._reach[b, z] = reach_policy(self.T_hat[b], self.decoders[b], z, h - 1)
        pol = np.stack([g.integers(0, A, size=(H, S)) for g in self.rngs])  # (B, H, S)
        if h >= 1:
            targets = np.array([int(g.integers(self.N)) for g in self.rngs])  # (B,)
            pol[:, : h - 1] = self._reach[np.arange(B), targets]
        self._policy = pol

    def policy(self) -> np.ndarray:
        return read_only_copy(self._policy)

    def value_estimate(self) -> np.ndarray:
        """``(B,)``: V_hat of the decoded model's plan (0 until every layer is decoded)."""
        return self.V_hat.copy()

    def update(self, traj) -> None:
        for b in range(self.n_seeds):
            self.data[b].append((traj.states[b], traj.actions[b], traj.rewards[b]))
        self.k += 1
        if self.k % self.samples == 0 and self.k // self.samples <= self.H:
            self._decode_layer(self.k // self.samples - 1)
            if self.k // self.samples == self.H:
                self._plan()
        self._choose()

    def _decode_layer(self, h: int) -> None:
        S, A, N = self.S, self.A, self.N
        for b in range(self.n_seeds):
            eps = self.data[b][h * self.samples : (h + 1) * self.samples]
            states = np.stack([e[0] for e in eps])  # (n, H)
            actions = np.stack([e[1] for e in eps])
            rewards = np.stack([e[2] for e in eps]).astype(np.float64)
            sig = inverse_kinematics_signatures(states, actions, rewards, h, S, A, self.k_max)
            self.decoders[b, h] = cluster(sig, N)
            z = self.decoders[b, h, states[:, h]]  # (n,)
            if h == 0:
                self.p0[b] = np.bincount(z, minlength=N) / len(z)
            else:
                zp = self.decoders[b, h - 1, states[:, h - 1]]
                C = np.zeros((N, A, N))
                np.add.at(C, (zp, actions[:, h - 1], z), 1.0)
                tot = C.sum(axis=-1, keepdims=True)
                self.T_hat[b, h - 1] = np.where(tot > 0, C / np.maximum(tot, 1.0), 1.0 / N)
            if h == self.H - 1:
                Rs = np.zeros((N, A))
                Cn = np.zeros((N, A))
                np.add.at(Rs, (z, actions[:, h]), rewards[:, h])
                np.add.at(Cn, (z, actions[:, h]), 1.0)
                self.r_hat[b] = Rs / np.maximum(Cn, 1.0)

    def _plan(self) -> None:
        H = self.H
        for b in range(self.n_seeds):
            Q = self.r_hat[b]  # (N, A)
            self.final[b, H - 1] = Q[self.decoders[b, H - 1]].argmax(axis=-1)
            for t in range(H - 2, -1, -1):
                Q = self.T_hat[b, t] @ Q.max(axis=-1)  # (N, A)
                self.final[b, t] = Q[self.decoders[b, t]].argmax(axis=-1)
            self.V_hat[b] = float(self.p0[b] @ Q.max(axis=-1))
