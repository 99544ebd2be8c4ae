"""Preference-based RL: Zhu-Jordan-Jiao's pessimistic-MLE bound (Theorem 3.2)."""

from __future__ import annotations

from ..bound import Bound, Source

ZJJ_SOURCE = dict(
    authors="Zhu, Jordan, Jiao",
    title="Principled Reinforcement Learning with Human Feedback from Pairwise or K-wise "
    "Comparisons",
    venue="ICML",
    year=2023,
    arxiv="2301.11270",
    url="https://arxiv.org/abs/2301.11270",
)

CARDS = (
    Bound(
        name="zjj-thm3.2",
        printed="2*C*sqrt((d + log(1/delta))/(kappa_link^2*N) + lam*B_theta^2)*zjj_coverage",
        definitions={"kappa_link": "1/(2 + exp(-L_phi*B_theta) + exp(L_phi*B_theta))"},
        order_printed="sqrt(d/N)*zjj_coverage",
        kind="upper",
        quantity="suboptimality",
        probability="1 - delta",
        setting=(
            "contextual bandit with known features phi(s, a), ||phi|| <= L, reward "
            "<theta*, phi>, theta* in Theta_B = {1^T theta = 0, ||theta|| <= B}; n BTL "
            "comparisons; pessimistic MLE (Algorithm 1) with the Lemma 3.1 radius "
            "f = C sqrt((d + log(1/delta)) / (gamma^2 n) + lambda B^2)"
        ),
        source=Source(**ZJJ_SOURCE, theorem="Theorem 3.2 (with Lemma 3.1's radius)"),
        provenance="M",
        version=(
            "SubOpt(pi_PE) <= 2 f ||(Sigma_D + lambda I)^{-1/2} E_rho[phi(s, pi*(s)) - v]||, "
            "f = C sqrt((d + log(1/delta))/(gamma^2 n) + lambda B^2), gamma = 1/(2 + e^{-LB} + "
            "e^{LB}); the factor 2 is the pessimism argument's (the paper states C * (...) with "
            "its own C); N is the number of comparisons n"
        ),
        notes=(
            "[M]: the theorem text could not be read (only the abstract [A] and a secondary "
            "theorem map [S]); searched the stored pages and code corpora on 2026-11-24 without "
            "finding the statement. C is an unspecified absolute constant; claims take C = 1.",
            "gamma = 1/(2 + e^{-LB} + e^{LB}) is [S] (verbatim in a third-party reproduction); "
            "L bounds ||phi||, so <theta, x_i> can reach 2LB for differences x_i: which one the "
            "paper's assumption bounds is unchecked.",
            "Implementation: the ellipsoid confidence set without the intersection with Theta_B "
            "(a lower bound on the paper's J_hat); the proof's inequality chain holds unchanged.",
            "Minimax lower bound (Theorem 3.10, [M]): c Lambda sqrt(d/n) over CB(Lambda); not a "
            "card.",
        ),
    ),
)
