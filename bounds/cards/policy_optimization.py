"""Approximate dynamic programming: MD-VI's error-averaging bound and AVI's error propagation."""

from __future__ import annotations

from ..bound import Bound, Source

CARDS = (
    Bound(
        name="md-vi-thm1",
        printed=(
            "2*noise_avg/(1 - gamma) + 4*r_max/(K*(1 - gamma)^3) "
            "+ 4*gamma*lam_kl*log(A)/(K*(1 - gamma)^2)"
        ),
        order_printed="noise_avg/(1 - gamma) + 1/((1 - gamma)^3*K)",
        kind="upper",
        quantity="suboptimality",
        probability="1",
        setting=(
            "discounted tabular MDP, rewards |r| <= r_max; MD-VI with KL weight lambda > 0 and no "
            "entropy (tau = 0) from the uniform pi_0 and q_0 = 0; "
            "q_{k+1} = T_{pi_{k+1}|pi_k} q_k + eps_{k+1} with any errors eps_j; "
            "E_K = sum_{j<=K} eps_j; the quantity is "
            "||q* - q^{pi_K}||_inf (deterministic: the errors are given)"
        ),
        source=Source(
            authors="Vieillard, Kozuno, Scherrer, Pietquin, Munos, Geist",
            title=(
                "Leverage the Average: an Analysis of KL Regularization in Reinforcement Learning"
            ),
            venue="NeurIPS",
            year=2020,
            arxiv="2003.14089",
            theorem="Theorem 1 [M]",
        ),
        provenance="M",
        version=(
            "||q* - q_{pi_k}||_inf <= 2/(1-gamma) ||E_k/k||_inf + 4/(1-gamma)^2 (v_max + gamma "
            "lambda ln|A|)/k with v_max = r_max/(1-gamma), as remembered; the stored text of the "
            "paper is its abstract and introduction only"
        ),
        notes=(
            "[M]: the constants 2 and 4 and the v_max + gamma lambda ln|A| term are from memory; "
            "the claim md-vi-averages-errors checks the measured error against this expression at "
            "every iterate (no violation in any run) but cannot confirm the constants are the "
            "paper's.",
            "AVI's classical counterpart (not a card): 2 gamma/(1-gamma)^2 max_j ||eps_j||_inf -- "
            "the errors accumulate and the horizon enters squared.",
            "K counts iterations here (the vocabulary's K is 'episodes').",
        ),
    ),
    Bound(
        name="avi-error-propagation",
        printed="2*gamma*noise_sup/(1 - gamma)^2",
        order_printed="noise_sup/(1 - gamma)^2",
        kind="upper",
        quantity="suboptimality",
        probability="1",
        setting=(
            "discounted tabular MDP; approximate value iteration q_{k+1} = r + gamma P max q_k + "
            "eps_{k+1} with ||eps_j||_inf <= noise_sup for every j, pi_{k+1} greedy in q_k; the "
            "quantity is limsup_k ||q* - q^{pi_k}||_inf (deterministic: the errors are given)"
        ),
        source=Source(
            authors="Scherrer, Lesner",
            title=(
                "On the Use of Non-Stationary Policies for Stationary Infinite-Horizon Markov "
                "Decision Processes"
            ),
            venue="NIPS",
            year=2012,
            arxiv="1211.6898",
            theorem="abstract [V] (the bound as 'well-known', and its tightness)",
        ),
        provenance="V",
        version=(
            "limsup_k ||q* - q^{pi_k}||_inf <= 2 gamma/(1-gamma)^2 max_j ||eps_j||_inf. [V] the "
            "abstract: 'Using Value and Policy Iteration with some error eps at each iteration, it "
            "is well-known that one can compute stationary policies that are 2 gamma/(1-gamma)^2 "
            "eps-optimal', and 'this guarantee is tight'. [A] the q-form here: the greedy step "
            "loses 2 gamma/(1-gamma) ||q* - q_k|| and ||q* - q_k|| tends to at most "
            "max_j ||eps_j|| / (1-gamma) (Bertsekas & Tsitsiklis 1996, Neuro-Dynamic Programming "
            "[M]); the form Vieillard et al. 2020 contrast with Theorem 1 (card md-vi-thm1)"
        ),
        notes=(
            "Scherrer & Lesner's tight instance was not read; the family avi-tight [M] attains "
            "the bound to 1 - O(gamma^n) (claim md-vi-horizon-slope: ratio >= 0.99995 at gamma "
            "0.8 .. 0.99).",
            "At finite k the bound carries 2 gamma^k/(1-gamma) ||q* - q_0||_inf more; the claim "
            "checks that form at every iterate.",
        ),
    ),
)
