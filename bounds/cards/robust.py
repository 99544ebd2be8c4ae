"""Robust RL: the adversarial-bandit bound that the test-time defence of Liu et al. (2024)
inherits (EXP3 over the finite non-dominated policy class)."""

from __future__ import annotations

from ..bound import Bound, Source

AUER = dict(
    authors="Auer, Cesa-Bianchi, Freund, Schapire",
    title="The Nonstochastic Multiarmed Bandit Problem",
    venue="SIAM J. Computing",
    year=2002,
)

CARDS = (
    Bound(
        name="auer2002-exp3-cor3.2",
        printed="2*sqrt(exp(1) - 1)*sqrt(K*A*log(A))",
        order_printed="sqrt(K*A*log(A))",
        kind="upper",
        quantity="regret",
        probability="in expectation (over EXP3's draws), against an oblivious adversary",
        setting=(
            "adversarial bandit with A arms (here: the A = |Pi~| non-dominated policies of Liu, "
            "Deng, Sun, Liang & Huang 2024, seed row 002-004#D3), rewards in [0, 1], K rounds "
            "(test-time episodes: the K of the vocabulary); EXP3 with gamma = "
            "min(1, sqrt(A ln A / ((e - 1) K))); regret against the best fixed arm"
        ),
        source=Source(**AUER, theorem="Corollary 3.2"),
        provenance="M",
        version=(
            "Corollary 3.2 as standardly quoted: G_max - E[G_Exp3] <= 2 sqrt(e - 1) sqrt(g K ln K) "
            "<= 2.63 sqrt(g K ln K) for g >= G_max (g = T here), K arms"
        ),
        notes=(
            "Written from memory of the paper's statement [M], not re-read here; the constant "
            "2 sqrt(e - 1) is pinned in tests/test_robust.py.",
            "Liu et al. state only that the finite class 'can resort to an adversarial bandit "
            "subroutine'; the catalogue row's O(sqrt(T |Pi| log |Pi|)) is this bound.",
            "Informative (below the trivial K) from K > 4 (e - 1) A ln A. The paper writes T "
            "rounds and K arms; here K is the rounds and A the arms (the vocabulary's names).",
        ),
    ),
)
