"""Stochastic multi-armed bandits: UCB1's gap-dependent bound, which DUMP's UCB curriculum over
training distributions inherits (Wang et al. 2025, seed row 002-004#B3); GP bandits on a finite
grid: CONFIG's cumulative regret and violation (Xu et al. 2023, seed row 000#39)."""

from __future__ import annotations

from ..bound import Bound, Source

CARDS = (
    Bound(
        name="auer2002-ucb1-thm1",
        printed="8*inv_gap_sum*log(K) + (1 + pi**2/3)*gap_sum",
        order_printed="inv_gap_sum*log(K)",
        kind="upper",
        quantity="regret",
        probability="in expectation (pseudo-regret sum_i Delta_i E[n_i(K)])",
        setting=(
            "stochastic bandit, rewards in [0, 1], K pulls (the vocabulary's K; the paper's n), "
            "UCB1: each arm once, then the arm maximising mean_i + sqrt(2 ln t / n_i); here the "
            "arms are DUMP's training distributions with the mean absolute advantage as reward"
        ),
        source=Source(
            authors="Auer, Cesa-Bianchi, Fischer",
            title="Finite-time Analysis of the Multiarmed Bandit Problem",
            venue="Machine Learning",
            year=2002,
            theorem="Theorem 1",
        ),
        provenance="M",
        version=(
            "Theorem 1 as standardly quoted: E[regret after n plays] <= "
            "[8 sum_{i: mu_i < mu*} (ln n / Delta_i)] + (1 + pi^2/3) (sum_j Delta_j)"
        ),
        notes=(
            "Written from memory of the paper's statement [M], not re-read here; the constants 8 "
            "and 1 + pi^2/3 are pinned in tests/test_curriculum.py.",
            "DUMP's abstract claims a 'theoretically grounded' schedule without a theorem; this "
            "is the standard guarantee of the UCB rule it names.",
            "Informative (below the trivial K max_i Delta_i) from the K where "
            "8 inv_gap_sum ln K + (1 + pi^2/3) gap_sum < K max Delta (the claim states it).",
        ),
    ),
)

# ----------------------------------------------------------------------------- 000#39 CONFIG
CARDS = (
    *CARDS,
    Bound(
        name="xu2023-config-regret",
        printed="sqrt(8*T*beta*gamma_T/log(1 + sigma_n**(-2)))",
        definitions={"beta": "2*log(2*A*T**2*pi**2/(6*delta))"},
        order_printed="sqrt(T*gamma_T)",
        kind="upper",
        quantity="regret",
        probability="1 - delta, simultaneously for all T (Bayesian: f and g drawn from the prior)",
        setting=(
            "min f(x) s.t. g(x) <= 0 over a finite grid D of A points, f and g drawn from a GP "
            "prior with kernel variance <= 1 known to the learner, observations with N(0, "
            "sigma_n^2) noise; CONFIG (LCB of f over the points where the LCB of g is <= 0) with "
            "beta_t = 2 log(2 A t^2 pi^2 / (6 delta)); cumulative regret sum_t [f(x_t) - f*]^+; "
            "the same expression bounds the cumulative violation sum_t [g(x_t)]^+"
        ),
        source=Source(
            authors="Xu, Jiang, Svetozarevic, Jones",
            title="Constrained Efficient Global Optimization of Expensive Black-box Functions",
            venue="ICML",
            year=2023,
            arxiv="2211.00162",
            theorem="main regret and violation theorems (abstract)",
        ),
        provenance="A",
        version=(
            "arXiv:2211.00162 abstract: CONFIG 'enjoys the same cumulative regret bound as that "
            "in the unconstrained case and similar cumulative constraint violation upper "
            "bounds'; the unconstrained bound written here is GP-UCB's on a finite domain "
            "(Srinivas, Krause, Kakade, Seeger 2010, Theorem 1 [M]: R_T <= sqrt(C1 T beta_T "
            "gamma_T), C1 = 8 / log(1 + sigma^-2)) with a union bound over f and g (the 2 in "
            "beta_T); the paper's own RKHS-form constants were not read"
        ),
        notes=(
            "Seed row 000#39; the claim config-gp-grid checks regret and violation against it "
            "with gamma_T replaced by an upper bound computed on the grid (the greedy "
            "information gain divided by 1 - 1/e; theorylab.kernels.gp), VACUOUS where the "
            "bound is at or above the trivial T (max f - f*).",
            "gamma_T grows like (log T)^(d+1) for the squared-exponential kernel and like "
            "T^(d/(2 nu + d)) (log factors aside) for Matern nu: the bound's T exponent is 1/2 "
            "(SE) and (1 + d/(2 nu + d)) / 2 (Matern), 3/4 for nu = 1/2 in d = 1.",
        ),
    ),
)
