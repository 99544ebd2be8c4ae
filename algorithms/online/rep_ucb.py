r"""Rep-UCB: representation learning by MLE plus an elliptical bonus, for low-rank MDPs.

Paper: Masatoshi Uehara, Xuezhou Zhang, Wen Sun, "Representation Learning for Online and Offline
RL in Low-rank MDPs", ICLR 2022, arXiv:2110.04652. The iteration (Algorithm 1), as theory.md 7
records it, checked against the arXiv v3 text (06 Jan 2022) [V]::

    1. collect transitions with pi_n (roll-in, then uniform actions)
    2. (phi_hat, mu_hat) = argmax_{phi in Phi, mu in Upsilon} sum log mu(s')^T phi(s, a)   (MLE)
    3. Sigma_n = sum phi_hat phi_hat^T + lambda I;
       b_hat(s, a) = min{ alpha_n ||phi_hat(s,a)||_{Sigma_n^{-1}}, 2 }
    4. pi_{n+1} = argmax_pi V^pi(P_hat, r + b_hat)

In v3, step 1 collects one tuple (s, a, s', a', s~) per episode: s ~ d^{pi_{n-1}}, a, a' ~ U(A),
s' ~ P*(.|s, a), s~ ~ P*(.|s', a'); the MLE uses both triples (s, a, s') and (s', a', s~), Sigma_n
sums over the first ones (D_n) only, and the cap 2 goes with returns normalised to [0, 1]
(sum_h gamma^h r in [0, 1]). The paper gives the bonus scale and the regulariser only as orders
(Theorem 4, Lemma 8; no constants): alpha_n = O(sqrt((|A| + d^2) gamma ln(|M| n / delta))),
lambda_n = O(d ln(|M| n / delta)), M the model class (mu and phi classes).

Episodic version implemented here (registered ``rep-ucb``), episode k, seeds batched:

* **Data**: the transitions (x_h, a_h, x_{h+1}) of every played episode, counted per step:
  C_h(s, a, s') ``(B, H, S*A, S)``.
* **MLE** (theorylab.algorithms.linear.mle): for every candidate phi_j of the finite class and
  every step h, mu_{j,h} maximises sum C_h log <phi_j, mu_{j,h}> over row-stochastic ``(d, S)``
  matrices (EM, warm-started from the previous episode, ``em_iters`` iterations per episode); the
  selected map is phi_hat = phi_{j*}, j* = argmax_j sum_h loglik_{j,h} (ties -> smallest j), and
  P_hat_h = <phi_hat, mu_{j*,h}>. The class must be simplex-valued (theorylab.mdps.lowrank).
* **Bonus**: Sigma_h = sum_{tau<k} phi_hat(x^tau_h, a^tau_h) phi_hat^T + lambda I (the LSVI-UCB Gram
  matrix of the learned features, per step) and
  b_h(s, a) = min{ alpha ||phi_hat(s, a)||_{Sigma_h^{-1}}, H },
  alpha = c H sqrt(d iota), iota = log(2 d K H |Phi| / delta).
* **Planning** in the learned model with the bonus: V_H = 0,
  Q_h = min{ r_h + b_h + P_hat_h V_{h+1}, H }, greedy policy. Rewards: ``env.reward`` when known
  (the paper's setting: the reward is given, the transitions are learned); otherwise a ridge
  estimate r_hat_h = phi_hat^T Sigma_h^{-1} sum phi_hat r, clipped to [0, 1].

Bound carried: ``rep-ucb-arxiv`` -- Theorem 4's (and the arXiv abstract's) sample complexity
O~(A^2 d^4 / (eps^2 (1-gamma)^5)) for the discounted setting (the earlier abstract,
``rep-ucb-earlier``, prints O~(A^4 d^4 / (eps^2 (1-gamma)^3)); theory.md 7 and 10 ask tests to
cite the version: this module cites the arXiv one). It is a PAC statement for the discounted
problem, not an episodic regret bound, so the claim built on it tests a consequence only:
sublinear regret, and the MLE selecting phi*.

Deviations, each deliberate:

* episodic finite horizon instead of discounted; one mu_h per step (the truth may be
  stage-dependent); the bonus cap is H and Q is capped at H. The paper's cap 2 is for returns in
  [0, 1]; rescaled to returns in [0, H] it would be 2H, so the cap here is tighter. (In the paper
  the bonus only gives near-optimism at d0, Lemma 5, not pointwise optimism.)
* data = the on-policy transitions (no extra uniform-action roll-outs: step 1's uniform actions
  serve the discounted analysis' coverage argument; the optimistic bonus drives exploration here);
  Sigma and the MLE use these transitions, where the paper's use the uniform-action tuples (its
  Lemma 8 needs Sigma_n to estimate n E_{rho_n x U(A)}[phi phi^T]);
* alpha: the paper's alpha_n is an order only (above); alpha = c H sqrt(d iota) is an LSVI-UCB-style
  width with ``c`` exposed (default 1, to be swept). Rescaled to [0, H], the paper's order is
  about H sqrt((A + d^2) ln(.)), so at c = 1 this width is smaller by roughly sqrt(d + A/d); its log
  uses |Phi| and K, the paper's |M| and the episode index n;
* lambda = ``lam`` = 1 (fixed), where the paper's lambda_n = O(d ln(|M| n / delta)) grows with n;
* MLE by warm-started EM with a fixed iteration budget per episode (an approximate oracle; the
  log-likelihood is concave in mu, so the budget only delays convergence).

Memory: the counts are O(H S^2 A) per seed (a tabular statistic: the MLE needs the next states).
"""

from __future__ import annotations

import math

import numpy as np

from theorylab.agent import EnvSpec, read_only_copy
from theorylab.algorithms.linear.gram import elliptical_norm_sq
from theorylab.algorithms.linear.mle import check_simplex_class, em_steps
from theorylab.algorithms.registry import register


def resolve_feature_class(env: EnvSpec, feature_class) -> np.ndarray:
    """The candidate class ``(M, S, A, d)``: an array, an object with ``candidates`` (a
    ``LowRankMDP``) or an MDP family spec whose MDP has ``candidates`` (``;`` may stand for ``:``
    and ``,`` inside an algorithm spec, as for ``features``)."""
    if feature_class is None:
        raise ValueError(
            "rep-ucb needs feature_class: the candidate feature maps (M, S, A, d), e.g. "
            "theorylab.run('rep-ucb', mdp, ..., feature_class=mdp.candidates)"
        )
    if isinstance(feature_class, str):
        from theorylab.algorithms.linear.features import mdp_spec
        from theorylab.mdps import make

        feature_class = make(mdp_spec(feature_class))
    if hasattr(feature_class, "candidates"):
        feature_class = feature_class.candidates
    cands = np.array(feature_class, dtype=np.float64)
    if cands.ndim != 4 or cands.shape[1:3] != (env.S, env.A):
        raise ValueError(
            f"rep-ucb: feature_class must have shape (M, S, A, d) = (M, {env.S}, {env.A}, d), "
            f"got {cands.shape}"
        )
    check_simplex_class(cands)
    return cands


@register("rep-ucb", kind="online", problem="lowrank", bounds=("rep-ucb-arxiv", "rep-ucb-earlier"))
class RepUCB:
    """Rep-UCB (Uehara, Zhang, Sun 2022), episodic: MLE over the class, bonus, model planning."""

    name = "rep-ucb"

    def __init__(
        self,
        env: EnvSpec,
        n_seeds: int,
        rngs,
        *,
        episodes: int,
        feature_class=None,
        c: float = 1.0,
        delta: float = 0.1,
        lam: float = 1.0,
        em_iters: int = 10,
    ) -> None:
        if isinstance(episodes, bool) or int(episodes) != episodes or episodes < 1:
            raise ValueError(f"rep-ucb: episodes must be a positive integer, got {episodes!r}")
        if not (c >= 0 and math.isfinite(c)):
            raise ValueError(f"rep-ucb: c must be finite and >= 0, got {c!r}")
        if not 0.0 < delta < 1.0:
            raise ValueError(f"rep-ucb: delta must lie in (0, 1), got {delta!r}")
        if not (lam > 0 and math.isfinite(lam)):
            raise ValueError(f"rep-ucb: lam must be > 0, got {lam!r}")
        if isinstance(em_iters, bool) or int(em_iters) != em_iters or em_iters < 1:
            raise ValueError(f"rep-ucb: em_iters must be a positive integer, got {em_iters!r}")
        if len(rngs) != n_seeds:
            raise ValueError(f"rep-ucb: got {len(rngs)} generators for n_seeds={n_seeds}")
        self.env, self.rngs = env, rngs
        self.n_seeds = B = int(n_seeds)
        self.S, self.A, self.H = S, A, H = env.S, env.A, env.H
        self.episodes, self.c, self.delta, self.lam = (
            int(episodes),
            float(c),
            float(delta),
            float(lam),
        )
        self.em_iters = int(em_iters)
        cands = resolve_feature_class(env, feature_class)  # (M, S, A, d)
        self.n_candidates, self.d = cands.shape[0], cands.shape[-1]
        self.Phi = np.ascontiguousarray(
            cands.reshape(self.n_candidates, S * A, self.d)
        )  # (M, SA, d)
        self.mu0 = np.asarray(env.mu0, dtype=np.float64)  # (S,)
        self.known_rewards = env.reward is not None
        if self.known_rewards:  # r_h: (H, SA)
            self.r = np.broadcast_to(np.asarray(env.reward, dtype=np.float64), (H, S, A)).reshape(
                H, S * A
            )
        M, d = self.n_candidates, self.d
        self.counts = np.zeros((B, H, S * A, S))  # C_h(s, a, s'): (B, H, SA, S)
        self.R_sum = np.zeros((B, H, S * A))  # sum of observed rewards: (B, H, SA)
        self.mu = np.full((B, H, M, d, S), 1.0 / S)  # mu_{j,h}: (B, H, M, d, S)
        self.loglik = np.zeros((B, H, M))  # (B, H, M)
        self.selected = np.zeros(B, dtype=np.int64)  # j*: (B,)
        self.selection_history: list[np.ndarray] = []  # j* after each episode
        self.k = 0
        self.plan()

    @property
    def iota(self) -> float:
        return math.log(2.0 * self.d * self.episodes * self.H * self.n_candidates / self.delta)

    @property
    def alpha(self) -> float:
        """alpha = c H sqrt(d iota)."""
        return self.c * self.H * math.sqrt(self.d * self.iota)

    def policy(self) -> np.ndarray:
        """``(B, H, S)`` int: greedy in the optimistic Q of the learned model."""
        return read_only_copy(self._policy)

    def value_estimate(self) -> np.ndarray:
        """``(B,)``: V_1(mu0) of the learned model with the bonus."""
        return (self._V[:, 0] * self.mu0).sum(axis=-1)

    def update(self, traj) -> None:
        B, H, A = self.n_seeds, self.H, self.A
        sa = traj.states * A + traj.actions  # (B, H)
        bi, hi = np.arange(B)[:, None], np.arange(H)[None, :]
        self.counts[bi, hi, sa, traj.next_states] += 1.0
        self.R_sum[bi, hi, sa] += traj.rewards
        self.k += 1
        # MLE oracle: warm-started EM for every candidate and step, then the best candidate
        self.mu, self.loglik = em_steps(self.Phi, self.mu, self.counts, self.em_iters)
        self.selected = self.loglik.sum(axis=1).argmax(axis=-1)  # (B,)
        self.selection_history.append(self.selected.copy())
        self.plan()

    def learned_model(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The MLE model and the elliptical widths: P_hat ``(B, H, SA, S)``, the widths
        ||phi_hat(s, a)||_{Sigma_h^{-1}} ``(B, H, SA)`` and Sigma_h^{-1} ``(B, H, d, d)``."""
        B = self.n_seeds
        phi_hat = self.Phi[self.selected]  # (B, SA, d)
        mu_hat = self.mu[np.arange(B), :, self.selected]  # (B, H, d, S)
        P_hat = np.matmul(phi_hat[:, None], mu_hat)  # P_hat_h(s'|s,a): (B, H, SA, S)
        N = self.counts.sum(axis=-1)  # N_h(s, a): (B, H, SA)
        weighted = N[..., None] * phi_hat[:, None]  # (B, H, SA, d)
        Sigma = np.matmul(np.swapaxes(weighted, -1, -2), phi_hat[:, None]) + self.lam * np.eye(
            self.d
        )  # (B, H, d, d)
        Sigma_inv = np.linalg.inv(Sigma)  # (B, H, d, d)
        width = np.sqrt(elliptical_norm_sq(Sigma_inv, phi_hat[:, None]))  # (B, H, SA)
        return P_hat, width, Sigma_inv

    def plan(self) -> None:
        """Backward induction in P_hat with reward r + min{alpha ||phi_hat||_{Sigma^-1}, H}."""
        B, H, S, A = self.n_seeds, self.H, self.S, self.A
        Hf = float(H)
        phi_hat = self.Phi[self.selected]  # (B, SA, d)
        P_hat, width, Sigma_inv = self.learned_model()
        bonus = np.minimum(self.alpha * width, Hf)  # (B, H, SA)
        if self.known_rewards:
            r = np.broadcast_to(self.r, (B, H, S * A))
        else:  # ridge estimate of theta_h on the learned features
            b = np.matmul(self.R_sum[:, :, None, :], phi_hat[:, None])  # (B, H, 1, d)
            theta = np.matmul(b, Sigma_inv)  # (B, H, 1, d) (Sigma symmetric)
            r = np.clip(np.matmul(phi_hat[:, None], np.swapaxes(theta, -1, -2))[..., 0], 0, 1)
        V = np.zeros((B, H + 1, S))  # (B, H+1, S)
        Q = np.zeros((B, H, S, A))  # (B, H, S, A)
        for h in range(H - 1, -1, -1):
            PV = np.matmul(P_hat[:, h], V[:, h + 1, :, None])[..., 0]  # (B, SA)
            Q[:, h] = np.minimum(r[:, h] + bonus[:, h] + PV, Hf).reshape(B, S, A)
            V[:, h] = Q[:, h].max(axis=-1)
        self._Q, self._V = Q, V
        self.P_hat = P_hat
        self._policy = Q.argmax(axis=-1)  # (B, H, S)
