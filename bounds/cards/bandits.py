"""Stochastic multi-armed bandits: UCB1's gap-dependent bound, which DUMP's UCB curriculum over
training distributions inherits (Wang et al. 2025, seed row 002-004#B3)."""

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
