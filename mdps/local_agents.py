"""A global agent and n homogeneous local agents with binary local states (seed row 001#3, the
setting of Anand & Qu's SUBSAMPLE-Q; reconstructed, see
``algorithms/multiagent/subsample_q.py``).

:class:`LocalAgentsProblem` -- a global state ``g in [0, G)`` that the global agent's action
``a in [0, A)`` moves (``P_g[g, a, g']``), and n local agents, each with a state
``s_i in {0, 1}`` that moves given the global state only, independently of the other agents
(``Pr(s_i' = 1 | g, s_i) = p_on[g, s_i]``). The reward is the global agent's plus the mean of
the local agents':

    r(g, s_1..s_n, a) = r_g[g, a] + (1/n) sum_i r_l[g, s_i],   r_g, r_l in [0, 1/2],

discounted by gamma. The agents are exchangeable, so the count ``c = sum_i s_i`` of agents in
state 1 is a sufficient statistic: the lumped chain on ``(g, c)`` (:meth:`count_mdp`, G (n + 1)
states) has the same optimal values as the joint chain on ``(g, s_1..s_n)`` (:meth:`joint_mdp`,
G 2^n states, built for n <= 8 as the independent check). The next count given ``(g, c)`` is
the sum of two independent binomials, ``Bin(c, p_on[g, 1]) + Bin(n - c, p_on[g, 0])``.

The same local dynamics with k agents (:meth:`count_mdp` with ``agents=k``) is the k-agent
system SUBSAMPLE-Q learns on.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from scipy.stats import binom

from theorylab.errors import InvalidMDPError

MAX_JOINT_AGENTS = 8  # the joint chain has G 2^n states and a dense (S, A, S) model


def count_transition(p_on: np.ndarray, agents: int) -> np.ndarray:
    """``T (G, m+1, m+1)``: ``T[g, c, c'] = Pr(c' agents in state 1 next | g, c now)`` for m =
    ``agents`` local agents, each moving by ``p_on (G, 2)``: the convolution of
    ``Bin(c, p_on[g, 1])`` (the agents in state 1 that stay) with ``Bin(m - c, p_on[g, 0])``
    (those in state 0 that switch on)."""
    G = p_on.shape[0]
    m = int(agents)
    j = np.arange(m + 1)
    c = j[:, None]  # (m+1, 1): agents in state 1 now
    T = np.zeros((G, m + 1, m + 1))
    for g in range(G):
        stay = binom.pmf(j[None, :], c, p_on[g, 1])  # (m+1, m+1): [c, i] i of c stay on
        come = binom.pmf(j[None, :], m - c, p_on[g, 0])  # (m+1, m+1): [c, i] i of m-c switch on
        for cc in range(m + 1):
            T[g, cc] = np.convolve(stay[cc, : cc + 1], come[cc, : m - cc + 1])
    return T


@dataclass(frozen=True, eq=False)
class LocalAgentsProblem:
    """The model (module docstring). Arrays: ``P_g (G, A, G)``, ``p_on (G, 2)``, ``r_g (G, A)``,
    ``r_l (G, 2)``; n local agents; discount gamma; ``start_on``: each agent starts in state 1
    with this probability (independently), the global state starts at 0."""

    n: int
    P_g: np.ndarray
    p_on: np.ndarray
    r_g: np.ndarray
    r_l: np.ndarray
    gamma: float
    start_on: float = 0.5
    name: str = "local-agents"
    _chains: dict = field(default_factory=dict, repr=False, compare=False)

    @property
    def G(self) -> int:
        return int(self.P_g.shape[0])

    @property
    def A(self) -> int:
        return int(self.P_g.shape[1])

    def state_index(self, g, c, agents: int | None = None):
        """Index of ``(g, c)`` in the count chain of ``agents`` (default n) agents."""
        m = self.n if agents is None else int(agents)
        return np.asarray(g) * (m + 1) + np.asarray(c)

    def count_reward(self, agents: int | None = None) -> np.ndarray:
        """``R (G (m+1), A)``: ``r_g[g, a] + (c/m) r_l[g, 1] + (1 - c/m) r_l[g, 0]``."""
        m = self.n if agents is None else int(agents)
        frac = np.arange(m + 1) / m  # (m+1,)
        local = frac[None, :] * self.r_l[:, 1:2] + (1 - frac[None, :]) * self.r_l[:, 0:1]
        return (self.r_g[:, None, :] + local[:, :, None]).reshape(self.G * (m + 1), self.A)

    def count_mdp(self, agents: int | None = None):
        """The lumped chain on ``(g, c)`` for ``agents`` (default n) agents as a discounted
        :class:`~theorylab.mdps.tabular.TabularMDP` (state ``g (m+1) + c``); initial
        distribution: g = 0 and ``c ~ Bin(m, start_on)``."""
        from theorylab.mdps.tabular import TabularMDP

        m = self.n if agents is None else int(agents)
        if m < 1:
            raise InvalidMDPError(f"local-agents: the number of agents must be >= 1, got {m}")
        if m in self._chains:  # built once per number of agents (the model is immutable)
            return self._chains[m]
        T = count_transition(self.p_on, m)  # (G, m+1, m+1)
        # P[(g, c), a, (g', c')] = P_g[g, a, g'] T[g, c, c']
        P = np.einsum("gah,gcd->gcahd", self.P_g, T).reshape(self.G * (m + 1), self.A, -1)
        mu0 = np.zeros(self.G * (m + 1))
        mu0[: m + 1] = binom.pmf(np.arange(m + 1), m, self.start_on)
        chain = TabularMDP(P, self.count_reward(m), mu0, gamma=self.gamma,
                           name=f"{self.name} (count chain, {m} agents)")  # fmt: skip
        self._chains[m] = chain
        return chain

    def joint_mdp(self):
        """The joint chain on ``(g, s_1..s_n)`` (state ``g 2^n + x``, bit i of x the state of
        agent i), written without counts: the local transition is the n-fold Kronecker product
        of each agent's 2 x 2 matrix, the reward the mean over the agents' bits. n <= 8."""
        from theorylab.mdps.tabular import TabularMDP

        n = self.n
        if n > MAX_JOINT_AGENTS:
            raise InvalidMDPError(
                f"local-agents: the joint chain is built for n <= {MAX_JOINT_AGENTS} agents "
                f"(G 2^n states), got n = {n}"
            )
        X = 2**n
        bits = (np.arange(X)[:, None] >> np.arange(n)[None, :]) & 1  # (X, n)
        P = np.zeros((self.G, X, self.A, self.G, X))
        R = np.zeros((self.G, X, self.A))
        for g in range(self.G):
            one = np.array(
                [[1 - self.p_on[g, 0], self.p_on[g, 0]], [1 - self.p_on[g, 1], self.p_on[g, 1]]]
            )  # fmt: skip  (2, 2)
            M = np.ones((1, 1))
            for _ in range(n):  # agent n-1 is the most significant bit
                M = np.kron(one, M)  # (X, X) after n factors
            P[g] = np.einsum("ah,xy->xahy", self.P_g[g], M)
            R[g] = self.r_g[g][None, :] + self.r_l[g][bits].mean(axis=1)[:, None]
        p_x = np.prod(np.where(bits == 1, self.start_on, 1 - self.start_on), axis=1)  # (X,)
        mu0 = np.zeros(self.G * X)
        mu0[:X] = p_x
        return TabularMDP(P.reshape(self.G * X, self.A, self.G * X), R.reshape(-1, self.A), mu0,
                          gamma=self.gamma, name=f"{self.name} (joint chain)")  # fmt: skip

    def sample_next(
        self, g: np.ndarray, c: np.ndarray, a: np.ndarray, agents: int, rng: np.random.Generator
    ) -> tuple[np.ndarray, np.ndarray]:
        """One draw of the generative model of the ``agents``-agent count chain per entry of the
        broadcast arrays ``g, c, a``: ``(g', c')`` of the same shape."""
        g, c, a = np.broadcast_arrays(np.asarray(g), np.asarray(c), np.asarray(a))
        cdf = np.cumsum(self.P_g[g, a], axis=-1)  # (..., G)
        u = rng.random(g.shape)[..., None]
        g2 = np.minimum((u > cdf).sum(axis=-1), self.G - 1)
        c2 = rng.binomial(c, self.p_on[g, 1]) + rng.binomial(int(agents) - c, self.p_on[g, 0])
        return g2, c2
