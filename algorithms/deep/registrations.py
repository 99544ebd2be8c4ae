"""The tabular twins in the one algorithm registry (``kind="deep"``, ``problem="token-tree"``).

Each factory takes the task (supplied by the runner) and the twin's parameters and returns a
:class:`TwinConfig`; the runner (``theorylab.runners.deep``) trains it for the ``steps`` budget with
:func:`theorylab.algorithms.deep.twins.train_twin`. Importing this module does not import torch
(``theorylab list algorithms`` works without it); running a twin does.

Default step sizes are those of the claims (validations/claims/deep.py): stable for exact
training at beta = 0.5; sampled training needs smaller ones (about 1).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from theorylab.algorithms.registry import register


@dataclass(frozen=True)
class TwinConfig:
    """A twin to train: its name in ``twins.TWINS``, the task and its parameters."""

    twin: str
    task: Any
    params: dict[str, Any] = field(default_factory=dict)


def _config(twin: str, task, **params) -> TwinConfig:
    return TwinConfig(twin, task, params)


@register("dpo-twin", kind="deep", problem="token-tree")
def dpo_twin(task, beta: float = 0.5, lr: float = 25.0) -> TwinConfig:
    """DPO (Rafailov et al. 2023) on a logit table; fixed point pi*_beta = ref e^{r/beta}/Z."""
    return _config("dpo", task, beta=beta, lr=lr)


@register("ipo-twin", kind="deep", problem="token-tree")
def ipo_twin(task, tau: float = 0.5, lr: float = 1.25) -> TwinConfig:
    """IPO (Azar et al. 2024) on a logit table; fixed point ref e^{p(y > ref)/tau}/Z."""
    return _config("ipo", task, beta=tau, lr=lr)


@register("chipo-twin", kind="deep", problem="token-tree")
def chipo_twin(task, beta: float = 0.5, lr: float = 7.5) -> TwinConfig:
    """chi-PO (Huang et al. 2025) on a logit table; fixed point beta(z + log z) = r - lambda."""
    return _config("chipo", task, beta=beta, lr=lr)


@register("rloo-twin", kind="deep", problem="token-tree")
def rloo_twin(task, beta: float = 0.5, group_size: int = 4, lr: float = 2.5) -> TwinConfig:
    """RLOO with the KL in the reward (Ahmadian et al. 2024); fixed point pi*_beta."""
    return _config("rloo", task, beta=beta, group_size=group_size, lr=lr)


@register("grpo-twin", kind="deep", problem="token-tree")
def grpo_twin(task, beta: float = 0.5, group_size: int = 4, lr: float = 2.5) -> TwinConfig:
    """GRPO, std advantage, k3 in the loss (Shao et al. 2024); a forward-KL fixed point."""
    return _config("grpo", task, beta=beta, group_size=group_size, lr=lr)


@register("dr-grpo-twin", kind="deep", problem="token-tree")
def dr_grpo_twin(task, beta: float = 0.5, group_size: int = 4, lr: float = 2.5) -> TwinConfig:
    """Dr. GRPO with k3 in the loss (Liu et al. 2025); forward-KL point at kappa = (G-1)/G."""
    return _config("dr-grpo", task, beta=beta, group_size=group_size, lr=lr)


@register("dr-grpo-k2-twin", kind="deep", problem="token-tree")
def dr_grpo_k2_twin(task, beta: float = 0.5, group_size: int = 4, lr: float = 2.5) -> TwinConfig:
    """Dr. GRPO with k2 in the loss; per-node KL optimum at beta G/(G-1) (pi* when L = 1)."""
    return _config("dr-grpo-k2", task, beta=beta, group_size=group_size, lr=lr)


@register("cvar-grpo-twin", kind="deep", problem="token-tree")
def cvar_grpo_twin(task, alpha: float = 0.25, group_size: int = 8, lr: float = 20.0) -> TwinConfig:
    """CVaR-GRPO (lower-tail group advantage, Tamar et al. 2015); ends on the CVaR optimum."""
    return _config("cvar-grpo", task, alpha=alpha, group_size=group_size, lr=lr)


# The exact twins of issue 28 (algorithms/deep/regression_runs.py says what ``steps`` counts).
@register("qsharp-twin", kind="deep", problem="token-tree", papers=("000#18",))
def qsharp_twin(task, beta: float = 0.5) -> TwinConfig:
    """Q# (Zhou et al. 2025): ref guided by the certainty equivalent of its return distribution;
    sampled mode: from steps x batch reference roll-outs per (h, a). Predicted: pi*_beta."""
    return _config("qsharp", task, beta=beta)


@register("rto-twin", kind="deep", problem="token-tree", papers=("002-004#E6",))
def rto_twin(task, beta: float = 0.5, beta2: float = 0.25, lr: float = 25.0) -> TwinConfig:
    """RTO (Zhong et al. 2024): DPO twin (beta, lr) for steps, then the token-level soft optimum
    with rewards beta log pi_DPO/ref and KL beta2. Predicted: pi*_beta2."""
    return _config("rto", task, beta=beta, beta2=beta2, lr=lr)


@register("refuel-twin", kind="deep", problem="token-tree", papers=("002-004#E5",))
def refuel_twin(task, eta: float = 1.0, beta: float = 0.5, iters: int = 200) -> TwinConfig:
    """REFUEL (Gao et al. 2024): steps iterations, each minimising the exact REFUEL loss on the
    current policy's roll-outs. Predicted: per-node NPG iterates; kl_optimum to pi*_beta."""
    return _config("refuel", task, eta=eta, beta=beta, iters=iters)


@register("exo-twin", kind="deep", problem="token-tree", papers=("000#11",))
def exo_twin(task, beta: float = 0.5, group_size: int = 2, lr: float = 5.0) -> TwinConfig:
    """EXO (Ji et al. 2024): gradient steps on the exact exo loss over K = group_size reference
    responses per prompt. Predicted: pi*_beta (a zero of the loss for every K)."""
    return _config("exo", task, beta=beta, group_size=group_size, lr=lr)


@register("rover-twin", kind="deep", problem="token-tree", papers=("000#17", "002-004#G1"))
def rover_twin(task, rho: float = 0.05, beta: float = 0.5) -> TwinConfig:
    """ROVER (He et al. 2025): softmax of the uniform policy's Q at temperature rho (exact, or
    from steps x batch uniform roll-outs per (h, a) in sampled mode). Predicted: the exact-Q
    softmax, optimal as rho -> 0 under binary rewards; kl_optimum to pi*_beta."""
    return _config("rover", task, rho=rho, beta=beta)


@register("c-rlft-twin", kind="deep", problem="token-tree", papers=("002-004#F7",))
def c_rlft_twin(
    task, beta: float = 0.5, lr: float = 5.0, expert_share: float = 0.25, alpha: float = 0.1
) -> TwinConfig:
    """C-RLFT (OpenChat, Wang et al. 2023): gradient steps on the exact class-reward-weighted,
    class-conditioned NLL over two sources (expert pi*_0.2 with reward 1, a random table with
    reward alpha). Predicted: the expert-conditioned pi* ∝ pi_expert exp(1/beta)."""
    return _config("c-rlft", task, beta=beta, lr=lr, expert_share=expert_share, alpha=alpha)


@register("brorl-twin", kind="deep", problem="token-tree", papers=("002-004#G2",))
def brorl_twin(task, eta: float = 1.0, beta: float = 0.5) -> TwinConfig:
    """BroRL (Hu et al. 2025): one-step updates dz_i = (eta/N) p_i (R_i 1[i in S] - S_R) of each
    prompt's sequence-level logits, S the distinct responses among N = batch rollouts (sampled
    mode) or all of them (exact mode, the N -> oo limit). Predicted: the exact-mode iterate."""
    return _config("brorl", task, eta=eta, beta=beta)


@register("prefixrl-twin", kind="deep", problem="token-tree", papers=("002-004#G4",))
def prefixrl_twin(task, lr: float = 50.0, beta: float = 0.5) -> TwinConfig:
    """PrefixRL (Setlur et al. 2026): exact gradient ascent on the success of on-policy completion
    from the prefixes of each prompt's longest correct response (lengths uniform, 0 included).
    Predicted: the root-optimal greedy policy (argmax Q*)."""
    return _config("prefixrl", task, lr=lr, beta=beta)
