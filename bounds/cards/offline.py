"""Offline RL with pessimism: PEVI, VI-LCB and its lower bounds, Li et al.'s settled rates."""

from __future__ import annotations

from ..bound import Bound, Source

PEVI_SOURCE = dict(
    authors="Jin, Yang, Wang",
    title="Is Pessimism Provably Efficient for Offline RL?",
    venue="ICML",
    year=2021,
    arxiv="2012.15085",
    url="https://ar5iv.labs.arxiv.org/html/2012.15085",
)
PEVI_SETTING = (
    "offline episodic linear MDP; dataset of K trajectories compliant with the MDP (any "
    "behaviour process, no coverage assumption for the data-dependent bound); PEVI with "
    "lambda = 1, Gamma_h = beta ||phi||_{Lambda_h^-1}, beta = c d H sqrt(zeta), "
    "zeta = log(2dHK/xi)"
)
PEVI_MEMORY = (
    "theory.md has the PEVI full text as not found: every formula here is [M]; the theorem "
    "numbers are not recorded. Check arXiv:2012.15085 before a test hard-codes it."
)

RASHIDINEJAD = dict(
    authors="Rashidinejad, Zhu, Ma, Jiao, Russell",
    title="Bridging Offline Reinforcement Learning and Imitation Learning: A Tale of Pessimism",
    venue="NeurIPS",
    year=2021,
    arxiv="2103.12021",
)
VILCB_SETTING = (
    "offline discounted tabular MDP; N samples from a data distribution mu; single-policy "
    "concentrability C* = max_{s,a} d^{pi*}(s,a)/mu(s,a); VI-LCB (Algorithm 3) with data "
    "splitting"
)
VILCB_MEMORY = (
    "[M] (theory.md 3.2: 'verify against the paper's MDP theorems'): the min with 1/(1-gamma), "
    "the log N factor and the exponents of (1 - gamma) are from memory, and the theorem numbers "
    "are not recorded. C / c are unspecified constants (the paper states <~ / >~)."
)

LI2022 = dict(
    authors="Li, Shi, Chen, Chi, Wei",
    title="Settling the Sample Complexity of Model-Based Offline Reinforcement Learning",
    venue="Annals of Statistics",
    year=2024,
    arxiv="2204.05275",
    url="https://core.ac.uk/works/140137702",
)
LI2022_NOTES = (
    "O~ statement (abstract [A]): log factors are not carried by this card; C is unspecified.",
    "C*_clipped = max_{s,a} min{d^{pi*}(s,a), 1/S} / mu(s,a) is [M] for the exact clipping.",
    "The arXiv id and the journal (Annals of Statistics 2024) are from memory; theory.md cites "
    "the core.ac.uk landing page.",
    "Minimax optimal for every eps, no burn-in (abstract).",
)

CARDS = (
    Bound(
        name="pevi-linear",
        printed="2*beta*phi_norm_sum",
        definitions={"beta": "c*d*H*sqrt(zeta)", "zeta": "log(2*d*H*K/delta)"},
        order_printed="d*H*phi_norm_sum",
        kind="upper",
        quantity="suboptimality",
        probability="1 - delta",
        setting=PEVI_SETTING,
        source=Source(**PEVI_SOURCE, theorem="linear-MDP theorem (data-dependent bound)"),
        provenance="M",
        version=(
            "SubOpt(pi_hat; x) <= 2 beta sum_h E_{pi*}[(phi^T Lambda_h^-1 phi)^(1/2) | s_1 = x], "
            "beta = c d H sqrt(zeta), zeta = log(2dHK/xi); xi written delta here"
        ),
        notes=(
            PEVI_MEMORY,
            "phi_norm_sum is the data-dependent term sum_h E_{pi*}||phi(s_h,a_h)||_{Lambda_h^-1}, "
            "computed from the dataset and the true MDP (exactly, in a tabular or linear test).",
            "The general-MDP meta-theorem is SubOpt <= 2 sum_h E_{pi*}[Gamma_h]; this card is its "
            "linear instance. Tabular PEVI: phi = one-hot(s,a), Gamma_h = beta/sqrt(N_h(s,a)+1).",
            "Lower bound (not a card): E[SubOpt / phi_norm_sum] >= c on a class of linear MDPs, "
            "so PEVI is minimax optimal up to beta = O~(dH).",
        ),
    ),
    Bound(
        name="pevi-well-explored",
        printed="c_prime*d^(3/2)*H^2*sqrt(zeta/K)",
        definitions={"zeta": "log(2*d*H*K/delta)"},
        order_printed="d^(3/2)*H^2/sqrt(K)",
        kind="upper",
        quantity="suboptimality",
        probability="1 - delta",
        setting=PEVI_SETTING + "; well-explored data: lambda_min(E_{pi_bar}[phi phi^T]) >= c_bar/d",
        source=Source(**PEVI_SOURCE, theorem="corollary (well-explored dataset)"),
        provenance="M",
        version="SubOpt <= c' d^(3/2) H^2 sqrt(zeta / K), zeta = log(2dHK/xi)",
        regime="the behaviour policy pi_bar explores well: lambda_min(E[phi phi^T]) >= c_bar / d",
        notes=(PEVI_MEMORY, "c_prime (c') is an unspecified absolute constant."),
    ),
    Bound(
        name="xiong2023-linpevi-adv-plus",
        printed="C*sqrt(d)*phi_norm_sum_var",
        order_printed="sqrt(d)*phi_norm_sum_var",
        kind="upper",
        quantity="suboptimality",
        probability="1 - delta",
        setting=(
            "episodic linear MDP with known features phi (d dimensions), rewards in [0,1]; "
            "offline dataset of K trajectories (compliant); LinPEVI-ADV+ (variance-weighted "
            "pessimistic LSVI with the reference-advantage decomposition), lambda = 1/H^2, "
            "beta = O~(sqrt(d)); needs K > Omega~(d^2 H^6) [S]"
        ),
        source=Source(
            authors="Xiong, Zhong, Shi, Shen, Wang, Zhang",
            title=(
                "Nearly Minimax Optimal Offline Reinforcement Learning with Linear Function "
                "Approximation: Single-Agent MDP and Markov Game"
            ),
            venue="ICLR",
            year=2023,
            arxiv="2205.15512",
            theorem="Theorem 2 (LinPEVI-ADV+) [S]",
        ),
        provenance="S",
        version=(
            "as restated by a later paper that invokes it (Hybrid RL in linear MDPs, its "
            "proof sketch of Theorem 1): 'invoking Theorem 2 from Xiong et al. with "
            "N > Omega(d^2 H^6), lambda = 1/H^2, beta = O(sqrt(d))' gives V*_1 - V^pi_hat_1 "
            "<~ sqrt(d) sum_h E_{pi*}||phi(s_h,a_h)||_{Sigma*_h^-1}; the paper itself was not read"
        ),
        notes=(
            "C is unspecified and logs are hidden (<~): evaluate with C = 1 for the shape only.",
            "phi_norm_sum_var uses the variance-weighted Sigma*_h, not PEVI's Lambda_h: with the "
            "weights floored at 1 it is at most H times PEVI's term and can be sqrt(H) smaller.",
            "Carried by vw-pevi, which implements the variance-weighted structure with its own "
            "[M] choices (docs/algorithms/pevi.md); Di et al.'s PNLSVI (nonlinear) has the same "
            "linear specialisation but its bound was not read either.",
        ),
    ),
    Bound(
        name="vi-lcb-upper",
        printed="C*min(1/(1 - gamma), sqrt(S*C_star*log(N)/((1 - gamma)^5*N)))",
        order_printed="sqrt(S*C_star/((1 - gamma)^5*N))",
        kind="upper",
        quantity="suboptimality",
        probability="expectation",
        setting=VILCB_SETTING,
        source=Source(**RASHIDINEJAD, theorem="VI-LCB theorem (MDP)"),
        provenance="M",
        version="E[J(pi*) - J(pi_hat)] <~ min{1/(1-gamma), sqrt(S C* log N / ((1-gamma)^5 N))}",
        notes=(
            VILCB_MEMORY,
            "Off by one effective-horizon factor 1/(1-gamma) from the lower bound; Li et al. "
            "close the gap (li2022-offline-discounted).",
        ),
    ),
    Bound(
        name="vi-lcb-lower",
        printed="c*min(1/(1 - gamma), sqrt(S*C_star/((1 - gamma)^3*N)))",
        order_printed="sqrt(S*C_star/((1 - gamma)^3*N))",
        kind="lower",
        quantity="suboptimality",
        probability="expectation, minimax (over instances with concentrability <= C*)",
        setting=VILCB_SETTING,
        source=Source(**RASHIDINEJAD, theorem="lower bound (MDP, C* >= 2)"),
        provenance="M",
        version=">~ min{1/(1-gamma), sqrt(S C* / ((1-gamma)^3 N))} for C* >= 2",
        regime="C* >= 2",
        notes=(VILCB_MEMORY,),
    ),
    Bound(
        name="vi-lcb-lower-near-expert",
        printed="c*min(1/(1 - gamma), S*(C_star - 1)/((1 - gamma)^2*N))",
        order_printed="S*(C_star - 1)/((1 - gamma)^2*N)",
        kind="lower",
        quantity="suboptimality",
        probability="expectation, minimax (over instances with concentrability <= C*)",
        setting=VILCB_SETTING,
        source=Source(**RASHIDINEJAD, theorem="lower bound (MDP, 1 <= C* < 2)"),
        provenance="M",
        version=">~ min{1/(1-gamma), S (C* - 1) / ((1-gamma)^2 N)} for C* in [1, 2)",
        regime="1 <= C* < 2 (nearly expert data: the 1/N imitation-learning rate)",
        notes=(VILCB_MEMORY, "Zero at C* = 1 (expert data)."),
    ),
    Bound(
        name="li2022-offline-finite-horizon",
        printed="C*H^4*S*C_star_clipped/eps^2",
        order_printed="H^4*S*C_star_clipped/eps^2",
        kind="upper",
        quantity="sample_complexity",
        probability="1 - delta (PAC; the abstract does not state it)",
        setting=(
            "offline finite-horizon non-stationary tabular MDP; pessimistic model-based VI with "
            "Bernstein penalties; samples needed for an eps-optimal policy, any eps, no burn-in"
        ),
        source=Source(**LI2022, theorem="finite-horizon result"),
        provenance="A",
        version="abstract: O~(H^4 S C*_clipped / eps^2)",
        notes=(
            *LI2022_NOTES,
            "Whether N counts sample transitions or trajectories is not recorded [M].",
        ),
    ),
    Bound(
        name="li2022-offline-discounted",
        printed="C*S*C_star_clipped/((1 - gamma)^3*eps^2)",
        order_printed="S*C_star_clipped/((1 - gamma)^3*eps^2)",
        kind="upper",
        quantity="sample_complexity",
        probability="1 - delta (PAC; the abstract does not state it)",
        setting=(
            "offline discounted tabular MDP; pessimistic model-based VI with Bernstein "
            "penalties; samples needed for an eps-optimal policy, any eps, no burn-in"
        ),
        source=Source(**LI2022, theorem="discounted result"),
        provenance="A",
        version="abstract: O~(S C*_clipped / ((1 - gamma)^3 eps^2))",
        notes=LI2022_NOTES,
    ),
)
