"""Alignment and RL losses as pure tensor functions and their tabular twins.

The losses (DPO, IPO, RPO, VPO, XPO, chi-PO; GRPO, Dr. GRPO, RLOO, PPO-clip, CVaR-GRPO; CQL and
f-DVL's value loss; the KL estimators k1, k2, k3) are functions of log-probabilities, rewards,
masks and group ids with no model inside, registered by name with their hyper-parameters in
``LOSSES`` (``make_loss("dpo:beta=0.1")``). They need torch (the ``[torch]`` extra); importing
this package does not: the loss modules are imported by :func:`load_losses` on first use.

Token-level masking lives in one place, :mod:`theorylab.algorithms.deep.masking`.
"""

from theorylab.algorithms.deep.registry import (
    LOSSES,
    list_losses,
    load_losses,
    loss_parameters,
    make_loss,
)

__all__ = ["LOSSES", "list_losses", "load_losses", "loss_parameters", "make_loss"]
