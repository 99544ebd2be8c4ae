"""Average reward (non-episodic, communicating MDPs): UCRL2 (Jaksch, Ortner & Auer 2010); the
generative-model sample complexity of uniformly ergodic MDPs (Wang, Blanchet & Glynn 2023)."""

from __future__ import annotations

from ..bound import Bound, Source

COMMUNICATING = (
    "communicating MDP with S states, A actions and diameter D; rewards in [0, 1]; one "
    "trajectory of T steps without resets; regret T g* - sum_t r_t against the optimal gain g*"
)

ERGODIC = (
    "uniformly ergodic average-reward MDP with S states, A actions and t_mix a uniform bound on "
    "the total-variation mixing times of its stationary policies; a generative model; samples "
    "counted over all state-action pairs; an eps-optimal policy (gain gap <= eps)"
)
WANG = {
    "authors": "Wang, Blanchet, Glynn",
    "title": "Optimal Sample Complexity for Average Reward Markov Decision Processes",
    "venue": "ICLR",
    "year": 2024,
    "arxiv": "2310.08833",
}

CARDS = (
    Bound(
        name="jaksch2010-ucrl2-thm2",
        printed="34*D*S*sqrt(A*T*log(T/delta))",
        order_printed="D*S*sqrt(A*T)",
        kind="upper",
        quantity="regret",
        probability="1 - delta",
        setting=COMMUNICATING,
        source=Source(
            authors="Jaksch, Ortner, Auer",
            title="Near-optimal Regret Bounds for Reinforcement Learning",
            venue="JMLR",
            year=2010,
            theorem="Theorem 2 (UCRL2)",
        ),
        provenance="S",
        version=(
            "JMLR 11 (2010) 1563-1600, Theorem 2 as the issue (issue 30) and later papers restate "
            "it: with probability at least 1 - delta, for every T > 1, the regret of UCRL2 run "
            "with confidence delta is at most 34 D S sqrt(A T log(T / delta)); the paper's text "
            "was not read here"
        ),
        notes=(
            "The trivial bound is T g* <= T: the card is vacuous until 34 D S sqrt(A T "
            "log(T/delta)) < T g*, from T ~ 5e7 on RiverSwim S=3 (D = 4.76, g* = 0.447) and "
            "~3e8 on S=4 (D = 8.06).",
            "Diameter D from theorylab.algorithms.planning.average_reward.diameter.",
        ),
    ),
    Bound(
        name="wang2023-avg-sample-complexity",
        printed="C*S*A*t_mix/eps^2",
        order_printed="S*A*t_mix/eps^2",
        kind="upper",
        quantity="sample_complexity",
        probability="1 - delta (logarithmic factors not carried)",
        setting=ERGODIC,
        source=Source(**WANG, theorem="main result (abstract)"),
        provenance="A",
        version=(
            "arXiv:2310.08833 abstract: an estimator with sample complexity O~(|S||A| t_mix "
            "eps^-2), matching the lower bound Omega(|S||A| t_mix eps^-2)"
        ),
        notes=(
            "Seed row 001#1; the claim plugin-average-tmix-linear measures the t_mix exponent "
            "(slope ~1) of the reconstructed estimator on lazy chains.",
        ),
    ),
    Bound(
        name="wang2023-avg-earlier-upper",
        printed="C*S*A*t_mix^2/eps^2",
        order_printed="S*A*t_mix^2/eps^2",
        kind="upper",
        quantity="sample_complexity",
        probability="1 - delta (logarithmic factors not carried)",
        setting=ERGODIC,
        source=Source(**WANG, theorem="the earlier upper bound the abstract cites"),
        provenance="A",
        version="arXiv:2310.08833 abstract: the literature's O~(|S||A| t_mix^2 eps^-2)",
        notes=("The baseline rate 001#1 improves on: exponent 2 in t_mix.",),
    ),
)

# ----------------------------------------------------------------------------- 000#37 LOOP
CARDS = (
    *CARDS,
    Bound(
        name="he2024-loop-regret",
        printed="C*sqrt(T)",
        order_printed="sqrt(T)",
        kind="upper",
        quantity="regret",
        probability="1 - delta (logarithmic factors not carried)",
        setting=(
            "infinite-horizon average-reward MDP (a linear, linear-mixture or tabular AMDP among "
            "them) with finite AGEC d, hypothesis class of log-covering number beta and optimal "
            "bias span sp(V*); one trajectory of T steps without resets; regret T J* - sum_t r_t"
        ),
        source=Source(
            authors="He, Zhong, Yang",
            title="Sample-efficient Learning of Infinite-horizon Average-reward MDPs with "
            "General Function Approximation",
            venue="ICLR",
            year=2024,
            arxiv="2404.12648",
            theorem="main regret theorem (abstract)",
        ),
        provenance="A",
        version=(
            "arXiv:2404.12648 abstract: LOOP achieves O~(poly(d, sp(V*)) sqrt(T beta)) regret; "
            "the polynomial in d and sp(V*) is not printed in the abstract, so C absorbs "
            "poly(d, sp(V*)) sqrt(beta) and the card carries the T exponent 1/2 only"
        ),
        notes=(
            "Seed row 000#37; the claims loop-regret-span-switches and loop-mixture-regret "
            "measure the T slope (<= 0.75 required; 0.2-0.45 measured: the gap-dependent regime "
            "of small chains) and the growth with sp(V*) on RiverSwim chains.",
        ),
    ),
)

# ----------------------------------------------------------------------------- 000#38 NeoRL
CARDS = (
    *CARDS,
    Bound(
        name="sukhija2024-neorl-regret",
        printed="C*sqrt(T)",
        order_printed="sqrt(T)",
        kind="upper",
        quantity="regret",
        probability="1 - delta (logarithmic factors and Gamma_T not carried)",
        setting=(
            "nonepisodic control of a system with dynamics f in an RKHS / drawn from a GP, "
            "well-calibrated model, continuity and bounded-energy assumptions; one trajectory of "
            "T steps; regret sum_t c(x_t, u_t) - T A(pi*) against the optimal average cost"
        ),
        source=Source(
            authors="Sukhija, Treven, Dorfler, Coros, Krause",
            title="NeoRL: Efficient Exploration for Nonepisodic RL",
            venue="NeurIPS",
            year=2024,
            arxiv="2406.01175",
            theorem="main regret theorem (abstract)",
        ),
        provenance="A",
        version=(
            "arXiv:2406.01175 abstract: regret O(Gamma_T sqrt(T)) (an earlier version: "
            "O(beta_T sqrt(T Gamma_T))) for GP dynamics; Gamma_T, the maximum information gain, "
            "is polylogarithmic in T for the RBF kernel, so C absorbs it and the card carries "
            "the T exponent 1/2 only"
        ),
        notes=(
            "Seed row 000#38; the claim neorl-gp-average-cost checks sublinear regret and the "
            "average cost's convergence to the optimum on the grid system gp-dynamics.",
        ),
    ),
)
