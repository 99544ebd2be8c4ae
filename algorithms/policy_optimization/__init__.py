"""KL-regularised policy optimisation on models solved exactly (seed-coverage family 7).

Kind ``"policy-optimization"`` (:data:`~theorylab.algorithms.registry.KINDS`): an algorithm is
``factory(problem, iterations, **params) -> PolicyPath`` (:mod:`.path`), a deterministic
iteration scored exactly at every iterate; the runner ``theorylab.runners.policy_optimization``
records it. Registered:

* ``kl-pg`` (:mod:`.kl_bayesian_inference`): exact KL-regularised policy gradient on a token
  tree (Korbak, Perez & Buckley 2022; seed rows 000#53, 002-004#F3).
"""

from theorylab.algorithms.policy_optimization import kl_bayesian_inference  # noqa: F401
