"""Inverse RL with a generative model: the feasible reward set (Metelli, Lazzati & Restelli,
ICML 2023; seed row 001#2)."""

from __future__ import annotations

from ..bound import Bound, Source

FEASIBLE_SET = (
    "finite-horizon MDP with S states, A actions, horizon H and time-inhomogeneous transitions; "
    "a deterministic expert; rewards in [-1, 1]; a generative model; samples counted over all "
    "(h, s, a); the estimated feasible set within Hausdorff distance eps (L-infinity between "
    "rewards) of the true one with probability 1 - delta"
)
METELLI = {
    "authors": "Metelli, Lazzati, Restelli",
    "title": "Towards Theoretical Understanding of Inverse Reinforcement Learning",
    "venue": "ICML",
    "year": 2023,
    "arxiv": "2304.12966",
}

CARDS = (
    Bound(
        name="metelli2023-us-irl",
        printed="2*(H - 1)**2*S*A*H*(S*log(2) + log(S*A*H/delta))/eps**2",
        order_printed="H**3*S*A*(S + log(S*A*H/delta))/eps**2",
        kind="upper",
        quantity="sample_complexity",
        probability="1 - delta",
        setting=FEASIBLE_SET,
        source=Source(
            **METELLI,
            theorem="US-IRL upper bound (abstract: matches the lower bound "
            "up to logarithmic factors)",
        ),  # fmt: skip
        provenance="A",
        version=(
            "arXiv:2304.12966 abstract states only that US-IRL matches the lower bound up to "
            "logs; the printed constant is derived here (algorithms/feasible_rewards/us_irl.py: "
            "Weissman L1 concentration, a union over the S A H triples, value range H - 1), not "
            "read"
        ),
        notes=(
            "The reward set's trivial Hausdorff error is 1 (the zero reward is always feasible):"
            " a radius eps(n, delta) >= 1 is vacuous.",
            "The claim us-irl-feasible-set measures the H exponent of the samples-to-eps on "
            "irl-trap (2 per triple, 3 in total).",
        ),
    ),
    Bound(
        name="metelli2023-irl-lower",
        printed="c*H**3*S*A*(log(1/delta) + S)/eps**2",
        order_printed="H**3*S*A*(log(1/delta) + S)/eps**2",
        kind="lower",
        quantity="sample_complexity",
        probability="1 - delta",
        setting=FEASIBLE_SET,
        source=Source(**METELLI, theorem="minimax lower bound (abstract)"),
        provenance="A",
        version=(
            "arXiv:2304.12966 abstract: Omega(H^3 S A / eps^2 (log(1/delta) + S)) for every "
            "(eps, delta)-PAC algorithm estimating the feasible reward set; constant unspecified"
        ),
    ),
)
