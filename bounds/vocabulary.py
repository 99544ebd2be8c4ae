"""The fixed vocabulary of symbols a bound may use.

Every bound in ``theorylab.bounds`` is written in these names, so that one set of values
(``S=6, A=2, H=20, K=..., delta=0.1``) evaluates any bound that applies, and so that a claim can
ask any bound for its exponent in ``"K"``.

Each name has a *role*:

* ``quantity`` -- a problem or run parameter the user supplies when evaluating (S, A, H, K, ...).
* ``abbreviation`` -- a name a paper introduces for a sub-expression (``L = ln(5HSAT/delta)``,
  ``iota``, ``zeta``, ``beta``). A bound must define each abbreviation it uses; the definitions are
  substituted before evaluation and kept in the printed form.
* ``constant`` -- an unspecified absolute constant (``c``, ``C``, ``c_prime``): an
  Omega/O/Otilde statement, or a theorem that says "there is an absolute constant C". It must be
  given a value to evaluate the bound (``c=1`` draws the shape) and never changes an exponent.

Each quantity also has the *limit* in which its exponent is taken (see ``exponent.py``): sizes and
counts grow (``x -> oo``); failure probabilities, accuracies, risk levels and visitation
probabilities shrink (``x -> 0+``); the discount factor approaches one and its exponent is taken
in ``1 - gamma`` (so ``(1 - gamma)^-5`` has exponent -5 in ``gamma``).

All symbols are plain sympy ``Symbol(name)`` (no assumptions), so that an expression keeps the
shape the paper prints (``sqrt(S*A*K)`` is not split into ``sqrt(A)*sqrt(K)*sqrt(S)``); the exponent
computation replaces them by positive symbols first (every vocabulary quantity is positive).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import sympy as sp

ROLES = ("quantity", "abbreviation", "constant")
LIMITS = ("oo", "0", "1")  # x -> oo, x -> 0+, x -> 1- (exponent taken in 1 - x)


@dataclass(frozen=True)
class Variable:
    """One name of the vocabulary."""

    name: str
    description: str
    role: str = "quantity"
    limit: str = "oo"
    low: float = 0.0  # domain: low < x (or low <= x when low_closed)
    high: float = math.inf  # x < high (or x <= high when high_closed)
    low_closed: bool = False
    high_closed: bool = False
    latex: str | None = None

    @property
    def symbol(self) -> sp.Symbol:
        return _SYMBOLS[self.name]

    def domain_text(self) -> str:
        lo = "[" if self.low_closed else "("
        hi = "]" if self.high_closed else ")"
        high = "oo" if math.isinf(self.high) else f"{self.high:g}"
        return f"{lo}{self.low:g}, {high}{hi}"

    def contains(self, value: float) -> bool:
        if not math.isfinite(value):
            return False
        above = value >= self.low if self.low_closed else value > self.low
        below = value <= self.high if self.high_closed else value < self.high
        return above and below


_ENTRIES = [
    # problem sizes and run lengths
    Variable("S", "number of states"),
    Variable("A", "number of actions"),
    Variable("H", "horizon (steps per episode)"),
    Variable("K", "number of episodes (for offline bounds: trajectories in the dataset)"),
    Variable(
        "T",
        "number of steps, T = K*H in episodic bounds (substituted); rounds in bandit bounds",
    ),
    Variable("d", "feature / representation dimension"),
    Variable("N", "offline sample size"),
    # coverage and data-dependent quantities
    Variable(
        "C_star",
        "single-policy concentrability C* = max_{s,a} d^{pi*}(s,a) / mu(s,a)",
        low=1.0,
        low_closed=True,
        latex=r"C^{\star}",
    ),
    Variable(
        "C_star_clipped",
        "clipped single-policy concentrability, max_{s,a} min{d^{pi*}(s,a), 1/S} / mu(s,a)",
        latex=r"C^{\star}_{\mathrm{clipped}}",
    ),
    Variable(
        "phi_norm_sum",
        "sum_h E_{pi*}[ ||phi(s_h, a_h)||_{Lambda_h^{-1}} | s_1 = x ] (PEVI's data-dependent term)",
        low_closed=True,
        latex=r"\sum_{h} \mathbb{E}_{\pi^{\star}} \lVert \phi \rVert_{\Lambda_h^{-1}}",
    ),
    Variable(
        "phi_norm_sum_var",
        "sum_h E_{pi*}[ ||phi(s_h, a_h)||_{Sigma*_h^{-1}} | s_1 = x ], Sigma*_h = E_D[phi phi^T / "
        "max{1, Var_h V*_{h+1}}] (the variance-weighted term of LinPEVI-ADV+)",
        low_closed=True,
        latex=r"\sum_{h} \mathbb{E}_{\pi^{\star}} \lVert \phi \rVert_{\Sigma_h^{\star -1}}",
    ),
    Variable(
        "wp_sum",
        "MaxWP's instance term: sum over (s, a) of 1 / (min_pi v_pi(s, a) * min_{s' in supp "
        "p(.|s,a)} p(s'|s, a)), v_pi(s, a) the probability that pi visits (s, a)",
        low_closed=True,
        latex=r"\sum_{(s,a)} \frac{1}{v_{\min}(s,a)\, p_{\min}(s,a)}",
    ),
    # stochastic multi-armed bandits: the gaps Delta_i = mu* - mu_i of the arms' means
    Variable(
        "inv_gap_sum",
        "sum over the suboptimal arms of 1 / Delta_i, Delta_i = mu* - mu_i (UCB1's instance term)",
        latex=r"\sum_{i:\Delta_i > 0} \frac{1}{\Delta_i}",
    ),
    Variable(
        "gap_sum",
        "sum over the arms of the gap Delta_i = mu* - mu_i",
        low_closed=True,
        latex=r"\sum_{i} \Delta_i",
    ),
    # average reward (non-episodic): diameter and mixing time of a communicating MDP
    Variable(
        "D",
        "diameter: max over s != s' of the least expected number of steps from s to s'",
        low=1.0,
        low_closed=True,
    ),
    Variable(
        "t_mix",
        "mixing time max_pi t_mix(pi) (TV threshold 1/4)",
        low=1.0,
        low_closed=True,
        latex=r"t_{\mathrm{mix}}",
    ),
    # preference-based RL (Zhu, Jordan, Jiao 2023)
    Variable(
        "lam",
        "ridge regularisation lambda added to a Gram matrix (Sigma_D + lambda I)",
        low_closed=True,
        latex=r"\lambda",
    ),
    Variable("B_theta", "norm bound B of the reward parameter, ||theta||_2 <= B", latex="B"),
    Variable("L_phi", "feature norm bound L, ||phi(s, a)||_2 <= L", latex="L"),
    Variable(
        "zjj_coverage",
        "||(Sigma_D + lambda I)^{-1/2} E_{s~rho}[phi(s, pi*(s)) - v]||_2 (Zhu-Jordan-Jiao's "
        "coverage term)",
        low_closed=True,
        latex=r"\lVert (\Sigma_D + \lambda I)^{-1/2} \mathbb{E}[\phi(s,\pi^{\star}(s)) - v] \rVert",
    ),
    # KL-regularised value iteration (Vieillard et al. 2020)
    Variable(
        "noise_avg",
        "||E_K / K||_inf, the sup norm of the average of the K evaluation errors eps_j (MD-VI)",
        low_closed=True,
        latex=r"\lVert E_K / K \rVert_\infty",
    ),
    # a global agent with many local agents (Anand & Qu 2024, SUBSAMPLE-Q)
    Variable("k_sub", "number of local agents sub-sampled (k <= n_agents)", latex="k"),
    Variable("n_agents", "number of local agents", latex="n"),
    Variable(
        "noise_sup",
        "max_j ||eps_j||_inf, a bound on every evaluation error eps_j (approximate VI)",
        low_closed=True,
        latex=r"\max_j \lVert \epsilon_j \rVert_\infty",
    ),
    Variable(
        "lam_kl",
        "weight lambda of the KL(pi || pi_k) regulariser (MD-VI)",
        low_closed=True,
        latex=r"\lambda",
    ),
    Variable("r_max", "largest absolute mean reward", latex=r"r_{\max}"),
    # Gaussian-process bandits on a grid (CONFIG, seed row 000#39)
    Variable(
        "gamma_T",
        "maximum information gain of T noisy evaluations under the kernel, max over T points of "
        "1/2 log det(I + sigma_n^-2 K_T) (a number of the instance, evaluated at T)",
        low_closed=True,
        latex=r"\gamma_T",
    ),
    Variable("sigma_n", "standard deviation of the observation noise", latex=r"\sigma_n"),
    # factored MDPs with a causal-graph prior (C-PSRL, Mutti et al. 2024, seed row 001#72)
    Variable("d_X", "number of factors of the state-action space X (candidate parents)"),
    Variable("d_Y", "number of factors of the state space Y (variables with a CPT)"),
    Variable("N_val", "largest number of values of one factor", latex="N"),
    Variable("Z", "largest number of parents of a factor (the graph's sparseness)"),
    Variable(
        "eta",
        "degree of prior knowledge: number of parents of every factor known in the prior graph",
        low_closed=True,
        latex=r"\eta",
    ),
    # small parameters (exponent as x -> 0+)
    Variable("delta", "failure probability (printed delta, p or xi)", limit="0", high=1.0),
    Variable("eps", "target accuracy", limit="0", latex=r"\varepsilon"),
    Variable("tau", "static CVaR risk level", limit="0", high=1.0, high_closed=True),
    Variable("alpha", "iterated-CVaR risk level", limit="0", high=1.0, high_closed=True),
    Variable(
        "w_min",
        "min over (pi, h, s) with w_{pi,h}(s) > 0 of the visitation probability w_{pi,h}(s)",
        limit="0",
        high=1.0,
        high_closed=True,
        latex=r"w_{\min}",
    ),
    # discount factor (exponent in 1 - gamma as gamma -> 1-)
    Variable("gamma", "discount factor", limit="1", low_closed=True, high=1.0),
    # abbreviations a paper introduces (defined per bound)
    Variable(
        "L",
        "logarithmic factor, defined by the bound (Azar et al.: ln(5HSAT/delta))",
        role="abbreviation",
    ),
    Variable("iota", "logarithmic factor, defined by the bound", role="abbreviation"),
    Variable("zeta", "logarithmic factor, defined by the bound (PEVI)", role="abbreviation"),
    Variable("beta", "bonus / penalty scale, defined by the bound (PEVI)", role="abbreviation"),
    Variable(
        "kappa_link",
        "min of the link's slope sigma' on the reachable range (Zhu-Jordan-Jiao's gamma), "
        "defined by the bound",
        role="abbreviation",
        latex=r"\gamma",
    ),
    # unspecified absolute constants
    Variable("c", "unspecified absolute constant", role="constant"),
    Variable("C", "unspecified absolute constant", role="constant"),
    Variable("c_prime", "unspecified absolute constant", role="constant", latex="c'"),
]

VOCABULARY: dict[str, Variable] = {v.name: v for v in _ENTRIES}
_SYMBOLS: dict[str, sp.Symbol] = {v.name: sp.Symbol(v.name) for v in _ENTRIES}
_ORDER = {name: i for i, name in enumerate(VOCABULARY)}

#: name -> sympy Symbol, for every name of the vocabulary
SYMBOLS: dict[str, sp.Symbol] = dict(_SYMBOLS)

#: symbol -> LaTeX, for names whose sympy rendering is not what a paper prints
LATEX_NAMES: dict[sp.Symbol, str] = {
    _SYMBOLS[v.name]: v.latex for v in _ENTRIES if v.latex is not None
}


def symbol(name: str) -> sp.Symbol:
    """The vocabulary's Symbol for ``name``; ``KeyError`` listing the vocabulary otherwise."""
    try:
        return _SYMBOLS[name]
    except KeyError:
        raise KeyError(
            f"{name!r} is not in the bound vocabulary; names: {', '.join(VOCABULARY)}"
        ) from None


def variable(name: str) -> Variable:
    symbol(name)
    return VOCABULARY[name]


def sort_names(names) -> tuple[str, ...]:
    """Names in vocabulary order (S, A, H, K, T, d, N, ...), unknown names last."""
    return tuple(sorted(names, key=lambda n: (_ORDER.get(n, len(_ORDER)), n)))
