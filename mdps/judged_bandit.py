r"""The KL-regularised bandit with a mixture of judges (CGPO's setting, seed row 002-004#F8).

Prompts s ~ rho, finite responses a, a reward model r(s, a), a reference policy ``ref (S, A)``
(full support), a KL weight beta and K binary judges: ``flags (K, S, A)``, flags[j, s, a] = 1 when
judge j says response a to prompt s violates its constraint. The problem is

    max_pi  E_rho [ <pi, r> - beta KL(pi(.|s) || ref(.|s)) ]
    s.t.    E_rho <pi, flags_j> <= eps_j   for every judge j        (violation rate <= eps_j).

``judged-bandit:S=4,A=6,K=3,beta=0.2,eps=0.02,hack=1.5,seed=0``: r uniform on [0, 1], ref from a
Dirichlet(1) per prompt; the last response of every prompt is a *reward hack* (reward ``hack``,
above every honest response) flagged by judge s mod K; every other response except the first is
flagged by each judge with probability 0.15 (response 0 is never flagged, so the problem is
strictly feasible for eps > 0). Plain RLHF (no judges) puts most of its mass on the hacks.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.special import softmax

from theorylab.errors import InvalidMDPError
from theorylab.mdps.kl_bandit import kl_rows


@dataclass
class JudgedBandit:
    """rho ``(S,)``; reward, ref ``(S, A)``; flags ``(K, S, A)`` in {0, 1}; beta; eps ``(K,)``."""

    rho: np.ndarray
    reward: np.ndarray
    ref: np.ndarray
    flags: np.ndarray
    beta: float
    eps: np.ndarray
    name: str = "judged-bandit"

    def __post_init__(self) -> None:
        shape = np.shape(self.reward)
        if np.shape(self.ref) != shape or np.shape(self.flags)[1:] != shape:
            raise InvalidMDPError(
                f"judged bandit: ref {np.shape(self.ref)} and flags {np.shape(self.flags)} must "
                f"match the reward's (S, A) = {shape}"
            )
        if np.shape(self.eps) != (np.shape(self.flags)[0],):
            raise InvalidMDPError(f"judged bandit: eps must be (K,), got {np.shape(self.eps)}")
        if not self.beta > 0:
            raise InvalidMDPError(f"judged bandit: beta must be > 0, got {self.beta!r}")
        if (np.asarray(self.ref) <= 0).any():
            raise InvalidMDPError("judged bandit: ref must have full support")

    @property
    def S(self) -> int:
        return int(np.shape(self.reward)[0])

    @property
    def A(self) -> int:
        return int(np.shape(self.reward)[1])

    @property
    def K(self) -> int:
        return int(np.shape(self.flags)[0])

    def gibbs(self, lams: np.ndarray) -> np.ndarray:
        """pi_lambda ∝ ref exp((r - sum_j lambda_j flags_j) / beta) ``(S, A)``."""
        penalty = np.einsum("j,jsa->sa", np.asarray(lams, float), self.flags)
        return softmax(np.log(self.ref) + (self.reward - penalty) / self.beta, axis=-1)

    def violations(self, pi: np.ndarray) -> np.ndarray:
        """E_rho <pi, flags_j> per judge ``(K,)``."""
        return np.einsum("s,sa,jsa->j", self.rho, pi, self.flags)

    def expected(self, pi: np.ndarray, values: np.ndarray) -> float:
        return float(self.rho @ np.einsum("sa,sa->s", pi, values))

    def objective(self, pi: np.ndarray) -> float:
        """E_rho [<pi, r> - beta KL(pi || ref)]."""
        return self.expected(pi, self.reward) - self.beta * float(self.rho @ kl_rows(pi, self.ref))


def judged_bandit(
    S: int = 4,
    A: int = 6,
    K: int = 3,
    beta: float = 0.2,
    eps: float = 0.02,
    hack: float = 1.5,
    seed: int = 0,
) -> JudgedBandit:
    """The random instance of the module docstring."""
    for key, v, lo in (("S", S, 1), ("A", A, 3), ("K", K, 1)):
        if isinstance(v, bool) or int(v) != v or v < lo:
            raise InvalidMDPError(f"judged-bandit: {key} must be an integer >= {lo}, got {v!r}")
    if not (isinstance(beta, int | float) and beta > 0):
        raise InvalidMDPError(f"judged-bandit: beta must be > 0, got {beta!r}")
    if not (isinstance(eps, int | float) and 0 < eps < 1):
        raise InvalidMDPError(f"judged-bandit: eps must lie in (0, 1), got {eps!r}")
    if not (isinstance(hack, int | float) and hack > 1):
        raise InvalidMDPError(f"judged-bandit: hack must be > 1 (above every reward), got {hack!r}")
    S, A, K = int(S), int(A), int(K)
    rng = np.random.default_rng(seed)
    reward = rng.uniform(size=(S, A))
    reward[:, -1] = hack
    ref = rng.dirichlet(np.ones(A), size=S)
    flags = (rng.uniform(size=(K, S, A)) < 0.15).astype(float)
    flags[:, :, 0] = 0.0  # response 0 is safe for every judge: strictly feasible
    flags[:, :, -1] = 0.0
    flags[np.arange(S) % K, np.arange(S), -1] = 1.0  # the hack, caught by judge s mod K
    return JudgedBandit(
        np.full(S, 1.0 / S), reward, ref, flags, float(beta), np.full(K, float(eps))
    )
