r"""A worst case for approximate value iteration: the AVI-tight comb (``avi-tight``).

Built for the horizon claim ``md-vi-horizon-slope`` (seed row ``seed-catalogue-000.md#30``,
Vieillard et al. 2020). Approximate value iteration (AVI), q_{k+1} = r + gamma P max q_k +
eps_{k+1} with ||eps_k||_inf <= eps, has the classical asymptotic loss bound

    limsup_k ||q* - q^{pi_k}||_inf <= 2 gamma eps / (1 - gamma)^2,     pi_{k+1} greedy in q_k,

(Bertsekas & Tsitsiklis 1996, Prop. 6.1 / Example 6.4 [M]; Scherrer & Lesner, NIPS 2012, whose
abstract [V] states that value and policy iteration with errors eps compute stationary policies
that are 2 gamma eps / (1 - gamma)^2-optimal and argues that this guarantee is tight). Their tight
instance was not read; this one is reconstructed [M] from the bound's proof (the greedy step
loses 2 ||q* - q_k|| / (1 - gamma), and errors of one sign accumulated along a path make
||q* - q_k|| reach eps / (1 - gamma)):

* state 0: absorbing (both actions loop, reward 1); states j = 1..n (the *spine*): action 0
  ("left") moves to j - 1 with reward 1, action 1 ("stay") loops with reward 1 + r_j < 1; state
  n + 1 (the *branch*): left moves to 0 with reward 1, stay loops with reward 1 - c eps
  (``branch_cost = c``). Always left is optimal: v* = 1 / (1 - gamma) everywhere,
  q*(j, stay) = r_j + v*.
* the adversary's errors alternate along the diagonals of (state depth j, iteration t):
  eps_t(j, left) = +eps, eps_t(j, stay) = -eps when t - j is even, and the signs swap when
  t - j is odd (state 0: (-1)^t eps on both actions). In the 2-cycle AVI reaches, q_t's left
  values at even diagonals carry U_j = eps + gamma U_{j-1} (U_0 = eps / (1 + gamma)), at odd
  ones L_j = -eps + xi + gamma L_{j-1} (L_0 = -U_0) -- each sum of one sign along the path to 0.
* r_j = -2 eps + gamma (L_{j-1} - U_j) + xi (``margin`` xi = margin * eps > 0) makes "stay" beat
  "left" by exactly xi at every odd-diagonal state, whose q then equals the low path's value,
  so the cycle above is self-consistent. The greedy policy stays at every odd-diagonal spine state;
  staying at j loses q*(j, stay) - q^pi(j, stay) = -gamma r_j / (1 - gamma), which tends to
  gamma (2 eps + 2 gamma eps / (1 - gamma)) / (1 - gamma) = 2 gamma eps / (1 - gamma)^2 as
  j -> infinity: the bound, attained up to O(gamma^n + xi).
* closed form (xi = 0): U_j = eps / (1 - gamma) - 2 gamma^{j+1} eps / (1 - gamma^2) and
  r_j = -2 eps (1 - gamma^{j+1}) / (1 - gamma); with xi, r_j gains xi (1 - gamma^j) / (1 - gamma).
* eps = (1 - gamma) / 4 by default, so rewards lie in [1/2, 1] and the bound 2 gamma eps /
  (1 - gamma)^2 = gamma / (2 (1 - gamma)) is half the trivial gamma / (1 - gamma) of rewards in
  [0, 1]; eps may go up to (1 - gamma) / 2, where -r_j tends to 1 and the bound is trivial. Every
  loss here is homogeneous of degree one in (r - 1, eps), so loss / eps is the scale-free
  quantity; the instance depends on (gamma, eps), as any worst case for a bound of this form must.
* the branch (c in (0, 2)): a stationary error pattern (+eps on stay, -eps on left and at 0)
  makes staying there optimal for the perturbed reward, at a true q-loss of gamma c eps /
  (1 - gamma) -- a linear-horizon worst case, which averaging (MD-VI) cannot average away.

``n = 0`` picks n = ceil(10 / (1 - gamma)) (gamma^n < e^-10). Transitions are CSR (sparse).
"""

from __future__ import annotations

import math

import numpy as np
import scipy.sparse as sp

from theorylab.errors import InvalidMDPError
from theorylab.mdps.families.chain import require_int
from theorylab.mdps.registry import register
from theorylab.mdps.tabular import TabularMDP

LEFT, STAY = 0, 1


def avi_tight_rewards(gamma: float, eps: float, n: int, xi: float) -> np.ndarray:
    """r_j (n,) for j = 1..n (the spine's stay rewards minus 1), by the cycle's recursion."""
    U_prev = eps / (1 + gamma)  # U_0
    L_prev = -U_prev  # L_0
    r = np.empty(n)
    for j in range(1, n + 1):
        U = eps + gamma * U_prev
        r[j - 1] = -2 * eps + gamma * (L_prev - U) + xi
        L_prev, U_prev = -eps + xi + gamma * L_prev, U
    return r


@register("avi-tight")
def avi_tight(
    gamma: float = 0.9,
    n: int = 0,
    eps: float = 0.0,
    branch_cost: float = 1.5,
    margin: float = 1e-6,
) -> TabularMDP:
    """AVI's worst case: a spine where alternating errors of size eps cost 2 gamma eps/(1-gamma)^2.

    ``eps = 0`` means (1 - gamma) / 4; ``n = 0`` means ceil(10 / (1 - gamma)).
    """
    fam = "avi-tight"
    g = float(gamma) if isinstance(gamma, (int, float)) and not isinstance(gamma, bool) else -1.0
    if not (0.0 < g < 1.0):
        raise InvalidMDPError(f"{fam}: parameter gamma must lie in (0, 1), got gamma={gamma!r}")
    n = require_int(fam, "n", n, 0) or math.ceil(10 / (1 - g))
    e = float(eps) if isinstance(eps, (int, float)) and not isinstance(eps, bool) else -1.0
    e = e or (1 - g) / 4
    if not (0.0 < e <= (1 - g) / 2):
        raise InvalidMDPError(
            f"{fam}: parameter eps must lie in (0, (1 - gamma)/2 = {(1 - g) / 2:g}] (0 means "
            f"(1 - gamma)/4), got eps={eps!r}"
        )
    c = float(branch_cost) if isinstance(branch_cost, (int, float)) else -1.0
    if not (0.0 < c < 2.0):
        raise InvalidMDPError(
            f"{fam}: parameter branch_cost must lie in (0, 2), got branch_cost={branch_cost!r}"
        )
    m = float(margin) if isinstance(margin, (int, float)) else -1.0
    if not (0.0 < m <= 1e-3):
        raise InvalidMDPError(
            f"{fam}: parameter margin must lie in (0, 1e-3], got margin={margin!r}"
        )
    S = n + 2
    P = np.zeros((S, 2, S))  # (S, A, S)
    R = np.ones((S, 2))  # (S, A)
    P[0, :, 0] = 1.0
    spine = np.arange(1, n + 1)
    P[spine, LEFT, spine - 1] = 1.0
    P[spine, STAY, spine] = 1.0
    R[spine, STAY] = 1.0 + avi_tight_rewards(g, e, n, m * e)
    P[n + 1, LEFT, 0] = 1.0
    P[n + 1, STAY, n + 1] = 1.0
    R[n + 1, STAY] = 1.0 - c * e
    mdp = TabularMDP(
        sp.csr_array(P.reshape(S * 2, S)),
        R,
        np.ones(S) / S,
        gamma=g,
        name=f"{fam}:gamma={g!r},n={n},eps={e!r},branch_cost={c!r},margin={m!r}",
    )
    mdp.error_level = e  # the eps the instance was built for
    return mdp
