r"""RPO: the max-min (adversarial-reward) policy of Liu et al. and its DPO + SFT reformulation on a
finite-response KL bandit, exactly.

Seed reference: ``seed-catalogue-002-004.md#E8``. Paper: Liu, Lu, Zhang, Liu, Guo, Yang,
Blanchet, Wang, "Provably Mitigating Overoptimization in RLHF: Your SFT Loss is Implicitly an
Adversarial Regularizer", NeurIPS 2024, arXiv:2405.16436. Card: docs/algorithms/rpo.md.

What was read [V]: the abstract and the section titles of the HTML version (section 3 "A
theory-motivated objective", section 4 "An equivalent and implementation-friendly objective",
section 5 theory): the theoretical algorithm "chooses the best policy for an adversarially chosen
reward model; one that simultaneously minimizes the maximum likelihood estimation of the loss and a
reward penalty term"; the practical objective fuses the DPO loss with an SFT loss on a baseline
distribution (the chosen responses in the experiments); the loss form eq. (4.8) is the one in the
loss registry (``rpo`` in ``algorithms/deep/preference_losses.py``). The exact weight convention
of the max-min objective and Theorem 5.x's constants were not read [A]. Reconstructed [A]:

    max_pi min_{r in [-R, R]^A}  L_n(r) + eta ( E_pi[r] - E_base[r] - beta KL(pi || ref) ),

L_n the BTL negative log-likelihood of the data (mean over the n comparisons), pi_base the
baseline. The bracket is linear in r and concave in pi, L_n convex in r, the box compact: by Sion
the max-min equals the min-max, and the inner max over pi is the Gibbs policy with value
beta log Z(r). The min-max is therefore VPO's pessimistic objective with pi_cal = pi_base and
alpha = eta (:mod:`theorylab.algorithms.preference.vpo`), and, where the minimiser is inside the
box, r = beta log(pi / ref) + const turns it into L_DPO(pi) + eta beta E_base[-log pi] + const --
the registered ``rpo`` loss with the same eta. eta = 0 is DPO (in the bounded reward class).

Registered ``rpo-offline`` (kind ``preference-offline``): the min-max solution per context (the
shared projected-Newton solve), baseline ``"chosen"`` (the empirical chosen responses, the
paper's practice) or ``"reference"``; ``eta`` is fixed (the practical weight, not scaled with n).
The claim ``rpo-maxmin-equivalence`` solves the max-min directly (outer maximisation over the
simplex, inner minimisation by cvxpy) and minimises the torch ``rpo`` loss, and compares both with
this solution.
"""

from __future__ import annotations

from theorylab.algorithms.preference.vpo import (
    RegularisedFit,
    check_bound,
    check_problem,
    check_weight,
    fit_regularised,
)
from theorylab.algorithms.registry import register


@register(
    "rpo-offline",
    kind="preference-offline",
    problem="pref-bandit",
    bounds=(),
    feedback=("btl",),
    feedback_note="the adversarial reward is fitted on pairs",
    papers=("002-004#E8",),
)
def rpo_offline(
    bandit, data, eta: float = 0.5, R: float = 4.0, baseline: str = "chosen"
) -> RegularisedFit:
    """RPO (Liu et al. 2024): the max-min policy against an adversarial reward (MLE loss + eta
    times the reward penalty against ``baseline``), solved as its min-max; eta = 0 is DPO."""
    bandit = check_problem(bandit, data, "rpo-offline")
    eta = check_weight("rpo-offline", "eta", eta)
    R = check_bound("rpo-offline", R)
    return fit_regularised(bandit, data, eta, baseline, R)
