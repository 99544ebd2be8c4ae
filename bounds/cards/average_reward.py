"""Average reward (non-episodic, communicating MDPs): UCRL2 (Jaksch, Ortner & Auer 2010)."""

from __future__ import annotations

from ..bound import Bound, Source

COMMUNICATING = (
    "communicating MDP with S states, A actions and diameter D; rewards in [0, 1]; one "
    "trajectory of T steps without resets; regret T g* - sum_t r_t against the optimal gain g*"
)

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
)
