r"""The behaviour-KL-regularised MDP on the occupancy polytope, by cvxpy: f-DVL's reference answer.

f-DVL's reverse-KL value loss (XQL's Gumbel loss; :mod:`~theorylab.algorithms.dual.f_dvl`) has the
population V-step ``V(s) = lam log sum_a pi_b(a|s) exp(Q(s, a) / lam)``, the soft Bellman backup
of the MDP whose every step pays ``lam KL(pi(.|s) || pi_b(.|s))`` (the Donsker-Varadhan /
Gibbs variational formula: ``max_pi E_pi[Q] - lam KL(pi || pi_b) = lam log E_{pi_b} e^{Q/lam}``).
Its optimal value is therefore, in occupancy form (Sikchi et al., ICLR 2024, section 4.2 read
with a *policy*-level KL, Garg et al. 2023 (XQL) section 3 [M for the section numbers]; the
identity itself is the one the claim ``f-dvl-soft-fixed-point`` checks):

    V_lam(mu) = 1/(1 - gamma) max_{d in flow polytope}  E_d[r] - lam sum_{s,a} d(s, a)
                    log( d(s, a) / (d(s) pi_b(a|s)) ),         d(s) = sum_a d(s, a),

a conditional relative entropy, jointly convex in d (``rel_entr(d(s, a), d(s) pi_b(a|s))`` with
an affine second argument), solved here on the exponential cone by cvxpy (CLARABEL). This is an
answer computed independently of f-DVL's fixed-point iteration: no Bellman backup, no
log-sum-exp. Pairs with ``pi_b(a|s) = 0`` carry no occupancy (the KL is infinite there).
"""

from __future__ import annotations

import cvxpy as cp
import numpy as np
import scipy.sparse as sp

from theorylab.algorithms.dual.inputs import DualInputError, check_alpha
from theorylab.algorithms.planning.lp import (
    _discount,
    _solve,
    _weights,
    discounted_lp_matrix,
    flow_residual,
)


def solve_behaviour_kl(
    mdp,
    behaviour: np.ndarray,
    lam: float,
    *,
    gamma: float | None = None,
    mu: np.ndarray | None = None,
    solver: str = "CLARABEL",
) -> dict:
    """``V_lam(mu)`` of the module docstring and its optimal occupancy.

    mdp: a stationary TabularMDP; behaviour ``(S, A)`` a policy (rows sum to 1); lam > 0.
    Returns ``{"value": V_lam(mu), "occupancy": d (S, A), "flow_residual": float,
    "status": str}``.
    """
    lam = check_alpha(lam, "lam")
    g, mu = _discount(mdp, gamma), _weights(mdp, mu)
    pi_b = np.asarray(behaviour, dtype=np.float64)
    if pi_b.shape != (mdp.S, mdp.A) or np.any(pi_b < 0):
        raise DualInputError(f"behaviour must be a policy of shape {(mdp.S, mdp.A)}")
    bad = np.flatnonzero(np.abs(pi_b.sum(axis=1) - 1.0) > 1e-9)
    if bad.size:
        raise DualInputError(
            f"behaviour row s={int(bad[0])} sums to {pi_b[bad[0]].sum():.12g}, expected 1"
        )
    S, A = mdp.S, mdp.A
    on = np.flatnonzero(pi_b.ravel() > 0)
    Mt = discounted_lp_matrix(mdp, g)[on].T.tocsr()  # (S, n)
    state_of = on // A
    x = cp.Variable(on.size, nonneg=True)
    # d(s) pi_b(a|s) for every supported pair: an affine map of x
    to_state = sp.csr_array((np.ones(on.size), (state_of, np.arange(on.size))), shape=(S, on.size))
    prior = cp.multiply(pi_b.ravel()[on], (to_state.T @ to_state) @ x)
    r = np.asarray(mdp.reward(0), dtype=np.float64).ravel()[on]
    objective = r @ x - lam * cp.sum(cp.rel_entr(x, prior))
    problem = cp.Problem(cp.Maximize(objective), [Mt @ x == (1.0 - g) * mu])
    _solve(problem, solver, None, f"behaviour-KL regularised MDP of {mdp!r}")
    d = np.zeros(S * A)
    d[on] = np.clip(np.asarray(x.value, dtype=np.float64), 0.0, None)
    d = d.reshape(S, A)
    return {
        "value": float(problem.value) / (1.0 - g),
        "occupancy": d,
        "flow_residual": float(np.max(np.abs(flow_residual(mdp, d, gamma=g, mu=mu)))),
        "status": problem.status,
    }
