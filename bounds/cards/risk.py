"""Risk-sensitive RL: static CVaR (Wang, Kallus, Sun) and iterated CVaR (Du, Wang, Huang)."""

from __future__ import annotations

from ..bound import Bound, Source

WKS = dict(
    authors="Wang, Kallus, Sun",
    title="Near-Minimax-Optimal Risk-Sensitive Reinforcement Learning with CVaR",
    venue="ICML",
    year=2023,
    arxiv="2302.03201",
    url="https://hf.g-215.ru/papers/2302.03201.md",
)
WKS_SETTING = (
    "episodic tabular MDP, static CVaR_tau of the return normalised to [0,1] "
    "(CVaR_tau(X) = sup_b {b - E[(b - X)^+]/tau}); bonus-driven value iteration on the "
    "budget-augmented MDP; K episodes"
)
WKS_NOTES = (
    "Abstract-level statement (O~ / Omega): log factors are not carried; C / c are unspecified "
    "constants; the exact H-dependence (returns normalised to [0,1]) and the probability must be "
    "checked in the paper (full text not found, theory.md 11).",
    "Authors are Kaiwen Wang, Nathan Kallus, Wen Sun (sometimes miscited as 'Wang, Yang et al.').",
    "[S] A secondary ledger of the full text (ar5iv HTML; the primary text was not read) names "
    "the algorithm CVaR-UCBVI and gives rewards in [0,1], returns normalised to [0,1] almost "
    "surely, the reward distribution known and P unknown; the theorem numbers on these cards "
    "are from it.",
)

DU = dict(
    authors="Du, Wang, Huang",
    title="Provably Efficient Risk-Sensitive Reinforcement Learning: Iterated CVaR and Worst Path",
    venue="ICLR",
    year=2023,
    arxiv="2206.02678",
)
DU_SETTING = (
    "episodic tabular MDP, iterated CVaR_alpha objective (per-step CVaR recursion), fixed "
    "initial state, stationary transitions, deterministic rewards in [0,1], alpha in (0,1]; "
    "w_min = min over (pi, h, s) with w_{pi,h}(s) > 0 of the visitation probability; K episodes"
)
DU_VERSION_NOTE = (
    "Full ICLR submission markdown (public file id 62442047762) read in full for theory.md [V]; "
    "the O / Omega constants are not given (C, c). The paper title is from memory."
)

ZHAO = dict(
    authors="Zhao, Zhan, Hu, Leung, Farnia, Sun, Lee",
    title="Provably Efficient CVaR RL in Low-rank MDPs",
    venue="ICLR",
    year=2024,
    arxiv="2311.11965",
    url="https://huggingface.datasetlab.ai/papers/2311.11965.md",
)
ZHAO_SETTING = (
    "episodic low-rank MDP with unknown phi, mu (MLE oracle), static CVaR_tau; ELA / ELLA "
    "(representation learning + UCB bonus on the budget-augmented MDP); episodes needed for "
    "an eps-optimal CVaR policy"
)
ZHAO_NOTES = (
    "Two printed versions of the bound: H^7 (arXiv abstract) and H^2 (another version, possibly "
    "camera-ready). Reviewers attribute the H^7 to value scaling in [0, H] and "
    "time-inhomogeneity; check which normalisation (returns in [0,H] or [0,1]) a test assumes.",
    "O~ statement: log factors not carried; C unspecified. No lower bound is given.",
    "The title is from memory; theory.md gives the arXiv id and authors.",
    "The 1/tau^2 is a worst case over instances: claim cvar-ela-inverse-tau-squared measures it "
    "(log-log slope of samples-to-eps in tau near -2) where the failure probability is 2 tau; "
    "with a fixed failure probability (the CVaR gap also constant) ELA needs FEWER episodes as "
    "tau shrinks, so the factor is loose there.",
)

CARDS = (
    Bound(
        name="wang2023-cvar-general",
        printed="C*sqrt(S*A*K)/tau",
        order_printed="sqrt(S*A*K)/tau",
        kind="upper",
        quantity="regret",
        probability="1 - delta (high probability; not stated in the abstract)",
        setting=WKS_SETTING,
        source=Source(**WKS, theorem="Theorem 5.3 [S] (upper bound, general returns)"),
        provenance="A",
        version="abstract: O~(tau^-1 sqrt(SAK)) in general; minimax-optimal for constant tau",
        notes=WKS_NOTES + ("[S] The general bound is Theorem 5.3.",),
    ),
    Bound(
        name="wang2023-cvar-continuous",
        printed="C*sqrt(S*A*K/tau)",
        order_printed="sqrt(S*A*K/tau)",
        kind="upper",
        quantity="regret",
        probability="1 - delta (high probability; not stated in the abstract)",
        setting=WKS_SETTING,
        source=Source(
            **WKS, theorem="Theorem 5.5 [S] (upper bound, continuous return distribution)"
        ),
        provenance="A",
        version="abstract: O~(sqrt(tau^-1 SAK)) under a continuity assumption on the returns",
        regime="the return distribution satisfies the paper's continuity assumption",
        notes=WKS_NOTES
        + (
            "[S] Theorem 5.5, under Assumption 5.4: the returns are continuously distributed "
            "with density >= p_min. p_min enters only a lower-order term (with tau^-1 "
            "p_min^(-1/2)), which this card does not carry.",
        ),
    ),
    Bound(
        name="wang2023-cvar-lower",
        printed="c*sqrt(S*A*K/tau)",
        order_printed="sqrt(S*A*K/tau)",
        kind="lower",
        quantity="regret",
        probability="expectation, minimax (for every algorithm some MDP of the class)",
        setting=WKS_SETTING,
        source=Source(**WKS, theorem="Corollary 3.2 [S] (tabular MDP lower bound)"),
        provenance="A",
        version="abstract: Omega(sqrt(tau^-1 SAK)) (bandits: Omega(sqrt(tau^-1 AK)))",
        notes=WKS_NOTES
        + (
            "[S] Corollary 3.2: E[Regret] >= (1/(24e)) sqrt(S(A-1)K/tau), stated for tau in "
            "(0, 1/2) only (bandits: Theorem 3.1). The card keeps the abstract's rate with an "
            "unspecified c; A-1 >= A/2 for A >= 2, so the rate is the same.",
        ),
    ),
    Bound(
        name="du2023-icvar-thm1",
        printed=(
            "C*min(1/sqrt(w_min), 1/sqrt(alpha^(H - 1)))*H*S*sqrt(K*H*A)/alpha*log(K*H*S*A/delta)"
        ),
        order_printed="min(1/sqrt(w_min), 1/sqrt(alpha^(H - 1)))*H*S*sqrt(K*H*A)/alpha",
        kind="upper",
        quantity="regret",
        probability="1 - delta",
        setting=DU_SETTING + "; ICVaR-RM (Algorithm 1)",
        source=Source(**DU, theorem="Theorem 1 (ICVaR-RM regret)"),
        provenance="V",
        version=(
            "R(K) = O(min{1/sqrt(min w), 1/sqrt(alpha^(H-1))} (H S sqrt(KHA) / alpha) "
            "log(KHSA/delta))"
        ),
        notes=(
            DU_VERSION_NOTE,
            "With alpha = 1 this is O~(HS sqrt(KHA)).",
            "Exponent in H is undefined symbolically: alpha^-(H-1)/2 grows exponentially when "
            "alpha < 1 but the min caps it at 1/sqrt(w_min); give values instead.",
        ),
    ),
    Bound(
        name="du2023-icvar-lower-visitation",
        printed="c*H*sqrt(A*K/(alpha*w_min))",
        order_printed="H*sqrt(A*K/(alpha*w_min))",
        kind="lower",
        quantity="regret",
        probability="expectation, minimax (over the instances of the regime)",
        setting=DU_SETTING,
        source=Source(**DU, theorem="Theorem 2 (lower bound, first case)"),
        provenance="V",
        version="Omega(H sqrt(AK / (alpha min w))) on instances with min w > alpha^(H-1)",
        regime="instances with w_min > alpha^(H-1)",
        notes=(
            DU_VERSION_NOTE,
            "Hard instance (Fig. 1): regular states s_1..s_n with absorbing x_1, x_2, x_3 "
            "(rewards 1, 0.8, 0.2), H >> n.",
        ),
    ),
    Bound(
        name="du2023-icvar-lower-exponential",
        printed="c*sqrt(A*K/alpha^(H - 1))",
        order_printed="sqrt(A*K/alpha^(H - 1))",
        kind="lower",
        quantity="regret",
        probability="expectation, minimax (over the instances of the regime)",
        setting=DU_SETTING,
        source=Source(**DU, theorem="Theorem 2 (lower bound, second case)"),
        provenance="V",
        version="Omega(sqrt(AK / alpha^(H-1))) otherwise (w_min <= alpha^(H-1))",
        regime="instances with w_min <= alpha^(H-1)",
        notes=(
            DU_VERSION_NOTE,
            "Exponential in H for alpha < 1: the exponent in H is oo only once alpha < 1 is "
            "known; symbolically ExponentError is raised.",
        ),
    ),
    Bound(
        name="du2023-maxwp",
        printed="C*H*log(S*A/delta)*wp_sum",
        order_printed="H*wp_sum",
        kind="upper",
        quantity="regret",
        probability="1 - delta",
        setting=(
            "episodic tabular MDP, worst-path objective (iterated CVaR as alpha -> 0: max over "
            "policies of the minimum return over the paths of positive probability), fixed "
            "initial state, stationary transitions, deterministic rewards in [0,1]; MaxWP "
            "(Algorithm 2)"
        ),
        source=Source(**DU, theorem="Theorem 4 (MaxWP regret)"),
        provenance="V",
        version=(
            "theory.md 4.3 [V]: R(K) = O(sum_{(s,a)} H log(SA/delta) / (min_pi v_pi(s,a) "
            "min_{s' in supp p(.|s,a)} p(s'|s,a))), constant in K"
        ),
        notes=(
            DU_VERSION_NOTE,
            "No K in the bound: regret stops growing once every (s, a) on a worst path has been "
            "seen with all its successors; exponent 0 in K.",
            "wp_sum is an instance quantity (a sum over the pairs); compute it from the true MDP "
            "(min over policies of the visitation probability of (s, a), smallest positive "
            "successor probability). It is infinite when some policy can never visit a pair: "
            "the theorem's sum then says nothing.",
        ),
    ),
    Bound(
        name="zhao2024-cvar-lowrank-h7",
        printed="C*H^7*A^2*d^4/(tau^2*eps^2)",
        order_printed="H^7*A^2*d^4/(tau^2*eps^2)",
        kind="upper",
        quantity="sample_complexity",
        probability="1 - delta (PAC; the abstract does not state it)",
        setting=ZHAO_SETTING,
        source=Source(**ZHAO, theorem="main theorem (abstract version)"),
        provenance="A",
        version="arXiv:2311.11965 abstract: O~(H^7 A^2 d^4 / (tau^2 eps^2))",
        notes=ZHAO_NOTES,
    ),
    Bound(
        name="zhao2024-cvar-lowrank-h2",
        printed="C*H^2*A^2*d^4/(tau^2*eps^2)",
        order_printed="H^2*A^2*d^4/(tau^2*eps^2)",
        kind="upper",
        quantity="sample_complexity",
        probability="1 - delta (PAC; the abstract does not state it)",
        setting=ZHAO_SETTING,
        source=Source(**ZHAO, theorem="main theorem (other printed version)"),
        provenance="A",
        version="another version of the paper prints O~(H^2 A^2 d^4 / (tau^2 eps^2))",
        notes=ZHAO_NOTES,
    ),
)

# ----------------------------------------------------------------- ICVaR-L (seed 001#48), issue 30
CHEN = dict(
    authors="Chen, Du, Hu, Wang, Wu, Huang",
    title=(
        "Provably Efficient Iterated CVaR Reinforcement Learning with Function Approximation "
        "and Human Feedback"
    ),
    venue="ICLR",
    year=2024,
    arxiv="2307.02842",
    url="https://huggingface.datasetlab.ai/papers/2307.02842.md",
)
CHEN_SETTING = (
    "episodic linear mixture MDP P(s'|s,a) = <phi(s'|s,a), theta> with known d-dimensional "
    "features, iterated CVaR_alpha objective (per-step CVaR recursion, Du et al. 2023), fixed "
    "initial state, rewards in [0,1], alpha in (0,1], K episodes"
)
CHEN_NOTES = (
    "[S] Read from a public review summary of the full text (theory.md 4.4); the theorem "
    "statements themselves were not read. O~ / Omega statements: log factors are not carried, "
    "C / c are unspecified constants.",
    "The upper and lower bounds match in d and K only: the alpha exponents differ by 2 "
    "(alpha^-(H+1) vs alpha^-(H-1)), a factor 1/alpha in the regret.",
)

CARDS = (
    *CARDS,
    Bound(
        name="chen2024-icvar-l-thm1",
        printed="C*sqrt(alpha^(-(H + 1))*(d^2*H^4 + d*H^6)*K)",
        order_printed="sqrt(alpha^(-(H + 1))*(d^2*H^4 + d*H^6)*K)",
        kind="upper",
        quantity="regret",
        probability="1 - delta",
        setting=CHEN_SETTING + "; ICVaR-L",
        source=Source(**CHEN, theorem="Theorem 1 (ICVaR-L regret) [S]"),
        provenance="S",
        version="[S] review summary: O~(sqrt(alpha^-(H+1) (d^2 H^4 + d H^6) K))",
        notes=CHEN_NOTES
        + (
            "At C = 1 it exceeds the trivial bound K H until K > alpha^-(H+1) (d^2 H^4 + d H^6) "
            "/ H^2 (the informative K; tests/test_icvar_l.py writes it out).",
        ),
    ),
    Bound(
        name="chen2024-icvar-l-lower",
        printed="c*d*sqrt(alpha^(-(H - 1))*K)",
        order_printed="d*sqrt(alpha^(-(H - 1))*K)",
        kind="lower",
        quantity="regret",
        probability="expectation, minimax (over linear mixture instances of dimension d)",
        setting=CHEN_SETTING,
        source=Source(**CHEN, theorem="lower bound, section 4.1 [S]"),
        provenance="S",
        version="[S] review summary: Omega(d sqrt(alpha^-(H-1) K))",
        notes=CHEN_NOTES
        + (
            "The hard instance was not read; no family here reproduces it. The claim "
            "icvar-l-linear-mixture (v) measures the d-exponent on a constructed stand-in, "
            "icvar-linear-hypercube (Zhou et al. 2021's hypercube at a fixed gap): 1.42 [1.30, "
            "1.54], inside [1 - 0.25, 2 + 0.25].",
        ),
    ),
)
