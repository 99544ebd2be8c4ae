r"""RLHS: RLHF from hindsight simulation, against RLHF from foresight feedback, exactly.

Seed reference: ``seed-catalogue-002-004.md#E14``. Paper: Liang, Hu, Fisac et al., "RLHS:
Mitigating Misalignment in RLHF with Hindsight Simulation", arXiv:2501.08617, 2025. Card:
docs/algorithms/rlhs.md.

What was read [V]: the abstract and the catalogue row (evaluators rating on their foresight
estimate of downstream consequences induce Goodhart dynamics; RLHS first simulates plausible
consequences, then elicits feedback in hindsight; conditioning on downstream observations, even
simulated ones, improves true utility). The two-step model below is ours [M].

Model (:class:`theorylab.mdps.kl_bandit.RLHSBandit`, a KL bandit): the context is the item's
hidden quality w in {good, bad} (prior p_good); the assistant says one of {honest, praise, hedge};
the user's belief after it is the truth (honest), "good" (praise) or the prior (hedge); the user
buys iff the belief puts probability >= 1/2 on good. True utility: +1 for buying a good item, -1
for a bad one, 0 for not buying. Ratings:

* foresight: the user's expected utility under their belief when they rate (before the outcome);
* hindsight: the realised utility;
* simulated hindsight with accuracy alpha: the simulator shows the true outcome with probability
  alpha, otherwise the outcome the user's belief expects: rating = alpha hindsight + (1 - alpha)
  foresight.

Foresight ratings make praise of a bad item the best-rated message (rating +1, true utility -1):
RLHF on them learns sycophancy. Hindsight ratings rank messages by true utility.

Registered ``rlhs`` (kind ``preference-offline``): for every pair of the dataset the evaluator is
asked again, now after seeing a simulated outcome (BTL on the simulated-hindsight rating, accuracy
``accuracy``; n fresh queries from the runner's oracle generators), and the policy is DPO's on
those labels (the Gibbs policy of their BTL MLE, as ``gshf-offline`` with C = 0). Its
sub-optimality is measured against the *true* utility.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from theorylab.algorithms.preference.gshf import GSHFError
from theorylab.algorithms.preference.mle import btl_mle
from theorylab.algorithms.registry import register
from theorylab.mdps.kl_bandit import RLHSBandit
from theorylab.mdps.preference import LinearBTLOracle, PairwiseDataset


@dataclass
class RLHSResult:
    """Per seed: ``policy (B, S, A)``, true-utility ``suboptimality (B,)``, ``queries (B,)``
    (the re-elicited hindsight labels plus the original ones)."""

    policy: np.ndarray
    suboptimality: np.ndarray
    queries: np.ndarray


def hindsight_labels(bandit: RLHSBandit, data: PairwiseDataset, accuracy: float, rngs):
    """The dataset's pairs relabelled by BTL on the simulated-hindsight rating: ``(B, n)``."""
    theta = bandit.feedback_theta("simulated", accuracy)
    oracle = LinearBTLOracle(theta, rngs)
    s, a0, a1 = data.states, data.a0, data.a1
    return oracle.compare(bandit.phi[s, a1], bandit.phi[s, a0]), oracle.queries.copy()


@register(
    "rlhs",
    kind="preference-offline",
    problem="pref-bandit",
    bounds=(),
    feedback=("btl",),
    feedback_note="the evaluator compares two messages after a simulated outcome",
    papers=("002-004#E14",),
)
def rlhs(bandit, data, oracle=None, accuracy: float = 1.0) -> RLHSResult:
    """RLHS (Liang et al. 2025): re-elicit each pair's label in simulated hindsight (simulator
    accuracy ``accuracy``), then DPO on the new labels; true-utility sub-optimality."""
    if not isinstance(bandit, RLHSBandit):
        raise GSHFError(f"rlhs needs the hindsight problem (rlhs), got {type(bandit).__name__}")
    if not isinstance(data, PairwiseDataset):
        raise GSHFError(f"rlhs relabels pairwise comparisons, got {type(data).__name__}")
    if oracle is None:
        raise GSHFError("rlhs asks the evaluator again: it needs the runner's oracle generators")
    if not (isinstance(accuracy, (int, float)) and 0.0 <= accuracy <= 1.0):
        raise GSHFError(
            f"rlhs: accuracy (of the outcome simulator) must lie in [0, 1], got {accuracy!r}"
        )
    y, q = hindsight_labels(bandit, data, float(accuracy), oracle.rngs)
    theta = btl_mle(data.differences(bandit), y, bandit.B)
    pol = bandit.gibbs(np.einsum("sad,bd->bsa", bandit.phi, theta))
    sub = np.array([bandit.suboptimality(p) for p in pol])
    return RLHSResult(pol, sub, q + (data.queries if data.queries is not None else data.n))
