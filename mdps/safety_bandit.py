r"""The KL-regularised, safety-constrained contextual bandit of constrained RLHF.

Setting (Huang, Li, Dobriban, Bastani, Hassani, Ding, "One-Shot Safety Alignment for Large
Language Models via Optimal Dualization", NeurIPS 2024; seed row 000#62): prompts s ~ rho,
responses a (finite), a reward r(s, a) (helpfulness), a safety score g(s, a), a reference policy
``ref (S, A)`` and a KL weight beta. The problem is

    max_pi  E_rho [ <pi, r> - beta KL(pi(.|s) || ref(.|s)) ]   s.t.   E_rho <pi, g> >= b.

``safety-bandit:S=3,A=8,beta=0.5,slack=0.5,seed=0`` draws r and g uniform on [0, 1] and ref from
a Dirichlet(1) per prompt (full support), and sets b = s_0 + slack (s_max - s_0), with s_0 the
safety of the unconstrained optimum (the Gibbs policy of r) and s_max = E_rho max_a g(s, a) the
largest achievable: slack in (0, 1) makes the constraint bind, slack <= 0 leaves it inactive.
The algorithms on it (MoCAN's one-shot dual, the primal-dual baseline) are in
:mod:`theorylab.algorithms.dual.safety_dualization`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.special import softmax

from theorylab.errors import InvalidMDPError
from theorylab.mdps.kl_bandit import kl_rows


@dataclass
class SafetyBandit:
    """rho ``(S,)``; reward, safety, ref ``(S, A)``; beta > 0; threshold b on E_rho <pi, g>."""

    rho: np.ndarray
    reward: np.ndarray
    safety: np.ndarray
    ref: np.ndarray
    beta: float
    threshold: float
    name: str = ""

    def __post_init__(self) -> None:
        shape = np.shape(self.reward)
        for key in ("safety", "ref"):
            if np.shape(getattr(self, key)) != shape:
                raise InvalidMDPError(
                    f"safety bandit: {key} must have the reward's shape {shape}, got "
                    f"{np.shape(getattr(self, key))}"
                )
        if not self.beta > 0:
            raise InvalidMDPError(f"safety bandit: beta must be > 0, got {self.beta!r}")
        if (np.asarray(self.ref) <= 0).any():
            raise InvalidMDPError("safety bandit: ref must have full support")

    @property
    def S(self) -> int:
        return int(np.shape(self.reward)[0])

    @property
    def A(self) -> int:
        return int(np.shape(self.reward)[1])

    def gibbs(self, lam: float) -> np.ndarray:
        """pi_lambda ∝ ref exp((r + lambda g) / beta) ``(S, A)``: the Lagrangian's maximiser."""
        return softmax(np.log(self.ref) + (self.reward + lam * self.safety) / self.beta, axis=-1)

    def expected(self, pi: np.ndarray, values: np.ndarray) -> float:
        """``E_rho <pi(.|s), values(s, .)>``."""
        return float(self.rho @ np.einsum("sa,sa->s", pi, values))

    def kl(self, pi: np.ndarray) -> float:
        """``E_rho KL(pi(.|s) || ref(.|s))`` (0 log 0 = 0)."""
        return float(self.rho @ kl_rows(pi, self.ref))

    def objective(self, pi: np.ndarray) -> float:
        """The regularised objective ``E_rho [<pi, r> - beta KL(pi || ref)]``."""
        return self.expected(pi, self.reward) - self.beta * self.kl(pi)


def safety_bandit(
    S: int = 3, A: int = 8, beta: float = 0.5, slack: float = 0.5, seed: int = 0
) -> SafetyBandit:
    """The random instance of the module docstring (slack < 1: b below the largest safety)."""
    if isinstance(S, bool) or int(S) != S or S < 1 or isinstance(A, bool) or int(A) != A or A < 2:
        raise InvalidMDPError(f"safety-bandit: S >= 1 and A >= 2 integers, got S={S!r}, A={A!r}")
    if not slack < 1:
        raise InvalidMDPError(
            f"safety-bandit: slack must be < 1 (b below the largest achievable safety), got {slack}"
        )
    if not beta > 0:
        raise InvalidMDPError(f"safety-bandit: beta must be > 0, got {beta!r}")
    rng = np.random.default_rng(seed)
    S, A = int(S), int(A)
    reward = rng.uniform(size=(S, A))
    safety = rng.uniform(size=(S, A))
    ref = rng.dirichlet(np.ones(A), size=S)
    rho = np.full(S, 1.0 / S)
    base = SafetyBandit(rho, reward, safety, ref, float(beta), 0.0)
    s0 = base.expected(base.gibbs(0.0), safety)
    s_max = float(rho @ safety.max(axis=1))
    base.threshold = s0 + float(slack) * (s_max - s0)
    return base
