"""A global agent with many local agents: the optimality gap of SUBSAMPLE-Q (Anand & Qu 2024;
seed row 001#3)."""

from __future__ import annotations

from ..bound import Bound, Source

CARDS = (
    Bound(
        name="anand-qu2024-subsample-q",
        printed="C*(1/sqrt(k_sub) + noise_sup)",
        order_printed="1/sqrt(k_sub) + noise_sup",
        kind="upper",
        quantity="suboptimality",
        probability="with high probability (log factors hidden in O~)",
        setting=(
            "a global agent and n_agents homogeneous local agents; the global agent learns a "
            "Q-function on k_sub sub-sampled agents with m generative samples per update "
            "(Bellman noise noise_sup = eps_{k,m}) and is deployed by re-sampling k_sub agents "
            "every step; the gap V*(s) - V^{pi_k}(s) on the n-agent system"
        ),
        source=Source(
            authors="Anand, Qu",
            title="Efficient Reinforcement Learning for Global Decision Making in the Presence "
            "of Local Agents at Scale",
            venue="arXiv:2403.00222",
            year=2024,
            theorem="main theorem (abstract)",
        ),
        provenance="A",
        version="the abstract's O~(1/sqrt(k) + eps_{k,m}); the theorem's constant, log factor "
        "and assumptions were not read",
        notes=(
            "Only the abstract was read [A]; C stands for the unread constant (which carries "
            "1/(1-gamma) factors and a log).",
            "The proof goes through a DKW inequality for sampling without replacement, so a "
            "finite-population factor sqrt((n - k + 1)/n) <= 1 is expected [M]; the bound does "
            "not grow with n_agents.",
            "Checked by the claim subsample-q-gap-vs-k (validations/claims/multiagent.py): the "
            "exponent in k_sub, not C.",
        ),
    ),
)
