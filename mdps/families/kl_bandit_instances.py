"""KL-regularised comparison bandits as registered families (``theorylab.mdps.kl_bandit``).

* ``kl-bandit:S=3,A=6,d=5,B=1,norm=1,eta=0.5,seed=0`` -- random features, uniform reference;
* ``gshf-coverage:S=2,eps=0.005,eta=0.5,gap=3`` -- one-hot features, the best action seldom
  drawn by the reference policy (poor coverage of ref x ref data);
* ``spurious-coverage:eps=0.001,eta=0.5,gap=1`` -- three responses, the third (no better than
  the second) seldom drawn by the reference policy (VPO / RPO's over-optimisation instance);
* ``maxmin-groups:eta=0.3,minority=0.2,gap=3,per_user=10`` -- two user groups with opposed
  favourites and a shared compromise (MaxMin-RLHF);
* ``rlhs:feedback=foresight,accuracy=1,p_good=0.4,eta=0.5,scale=3`` -- the two-step hindsight
  model (RLHS): the evaluator's data follow foresight, hindsight or simulated-hindsight ratings.
"""

from __future__ import annotations

from theorylab.mdps.kl_bandit import (
    gshf_coverage,
    kl_bandit,
    maxmin_groups,
    rlhs_problem,
    spurious_coverage,
)
from theorylab.mdps.registry import register

register("kl-bandit")(kl_bandit)
register("gshf-coverage")(gshf_coverage)
register("maxmin-groups")(maxmin_groups)
register("rlhs")(rlhs_problem)
register("spurious-coverage")(spurious_coverage)

# sparse-reward:A=64,d=32,k=2,norm=2,eta=0.5,seed=0 -- a k-sparse theta* in d Gaussian features
# (the RLHF / DPO sample-complexity construction, docs/algorithms/rlhf-dpo-dichotomy.md)
from theorylab.mdps.kl_bandit import sparse_reward  # noqa: E402

register("sparse-reward")(sparse_reward)
