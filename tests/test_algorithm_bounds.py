"""Every registered algorithm exposes the bound cards it carries through the registry
(issue 14, item 7), and ``theorylab list algorithms`` shows them."""

from __future__ import annotations

import pytest

from theorylab.algorithms.registry import get_algorithm, list_algorithms
from theorylab.bounds import get_bound, list_bounds
from theorylab.cli import main

# Contrasts without a theorem of their own: greedy planners, behaviour cloning, greedy-on-MLE, and
# the Hoeffding baseline of pessimistic VI (its bound is [M] and has no card); and P2R, whose
# paper's theorem (numbers, exponents) was not recovered (docs/algorithms/p2r.md).
NO_THEOREM = {
    "greedy",
    "epsilon-greedy",
    # issue 31 (expl31): JSRL's rate is "exponential to polynomial in H", no printed constant
    # (docs/algorithms/jsrl.md; claim in validations/claims/exploration.py)
    "jsrl",
    # 000#43 (irlreset): IRL without RL; the paper's theorem constants were not read, only
    # "an exponential speedup in theory" (docs/algorithms/irl-expert-resets.md; claim in
    # validations/claims/inverse_rl.py)
    "irl-expert-resets",
    # 000#55 (rhip): RHIP states no rate; its claim is exact identities (horizon extremes vs
    # route enumeration, FD gradient) in validations/claims/inverse_rl_rhip.py
    "rhip",
    # issue 31 (expl31b): CDPO's regret is "the same as PSRL", no printed rate or constant was
    # read (docs/algorithms/cdpo.md; claim in validations/claims/tabular_regret.py)
    "cdpo",
    # issue 31 (sq31): SQIRL's rate is "samples ~ exp(k), not exp(H)" with no constant read
    # (docs/algorithms/sqirl.md; claim in validations/claims/exploration.py)
    "sqirl",
    # issue 31 (rep31): Contrastive UCB's O~(1/eps^2) sample complexity was read only from
    # summaries (no constants, no polynomial factors; docs/algorithms/contrastive-ucb.md; claim in
    # validations/claims/representation.py)
    "contrastive-ucb",
    # issue 31 (rep31): MusIK's rate (1/eps^2 in the accuracy) read from the abstract only
    # (docs/algorithms/musik.md; claim in validations/claims/representation.py)
    "musik",
    # issue 31 (repr31): TD-JEPA's theorems are qualitative (no collapse, low-rank
    # factorisation, successor features); no rate (docs/algorithms/td-jepa.md; claim in
    # validations/claims/representation.py)
    "td-jepa",
    # issue 31 (repr31): representation from videos, qualitative (iid vs exogenous noise; no
    # rate read; docs/algorithms/video-representation.md)
    "video-representation",
    # issue 31 (repr31): offline RL with observation histories, no formula read
    # (docs/algorithms/bisimulation-vi.md)
    "bisimulation-vi",
    # issue 31 (hip31): HiP-BMDP abstractions; the paper's sample complexity in the aggregate
    # samples was read from the abstract only, no formula (docs/algorithms/hip-abstraction-vi.md).
    # Searched again (task cards): no copy of arXiv:2007.07206 past its introduction was reached;
    # a talk-slide restatement of a BC-MDP transfer bound was found but is a different paper's
    # statement and not the sample-complexity bound the claim measures, so still no card.
    "hip-abstraction-vi",
    "lsvi",
    "naive-vi",
    "behaviour-cloning",
    "pessimistic-vi-hoeffding",
    # dual RL (algorithms/dual): exact solvers and tabular DICE / f-DVL; their claims are
    # identities and rates (validations/claims/dual.py), no registered bound card
    "dual-v",
    "regularized-primal",
    "optidice",
    "f-dvl",
    "reps",
    "dualdice",
    # imitation (algorithms/dual): ReCOIL, SMODICE; claims in validations/claims/dual_imitation.py
    "recoil",
    "smodice",
    "greedy-mle",
    "p2r-ucbvi",
    # issue 17 (helper h17b): PR-LSVI, ZJJ Section 5 and the self-play dynamics carry no card
    # (docs/algorithms/pr-lsvi.md, preference-mle.md, nash-preference.md say why)
    "pr-lsvi",
    "pessimistic-mle-mdp",
    "inpo",
    "hedge-selfplay",
    # issue 27 (helper klpo): KL-regularised policy optimisation on exact models; kl-pg's paper
    # states an identity and a limit, not a rate (validations/claims/policy_optimization.py)
    "kl-pg",
    "soft-vi",
    "trpo-penalty",
    "best-of-n",
    # issue 30 (helper avgrew): the uniform agent is the null baseline of the average-reward kind
    "uniform-average",
    "null-generative",
    # issue 27 tier B (helper klpoB): identity and behaviour claims; none of these papers states a
    # rate the claims could hold them to
    "rpg",
    "max-at-k-pg",
    "rlvr-md",
    "rlvr-shared-pg",
    "divergence-pg",
    "mirror-learning",
    # issue 27 (helper dualc): 002-004#E12 states findings, not a rate
    "on-policy-data",
    # issue 27 (helper klpoA): StaQ's and MDPO's papers state no rate the claims could hold them
    # to (their claims are limits and identities); demonstration-regularised RL's rate belongs to
    # its exploration phase (docs/algorithms/demo-regularised-vi.md)
    "staq",
    "mdpo",
    "demo-regularised-vi",
    # issue 27 (helper demo27): the exploration phase; the paper's rate O~(Poly(S,A,H) /
    # (eps^2 N_E)) was read without constants (docs/algorithms/demo-regularised-bpi.md), so no
    # card: its claim measures the slope in N_E
    "demo-regularised-bpi",
    # issue 31 (helper offl31): OGSRL's and trajectory weighting's claims are exact identities
    # (support-restricted LP = brute force; improvement over behaviour); no rate card is carried
    "ogsrl",
    "trajectory-weighting",
    # issue 31 (helper off31): RCSL / MBRCSL (000#5): the claim is exact identities (best data
    # return, best support-restricted value); the paper's theorems were not read
    "rcsl",
    "mbrcsl",
    # HetPEVI (000#71): the penalty's constants and the theorem were not read (het_pevi.py)
    "het-pevi",
    # robust MDPs (issue 30): exact planners; their claims are validations
    "iwocs",
    "dr-rpo",
    "substate-dp",
    "tc-rmdp",
    # issue 30 (helper rob30b): H-infinity LQ game, an exact identity against scipy's GARE
    "hinf-lq",
    # issue 30 (helper risk30): policy smoothing's certificate is a bound on a probability, checked
    # by its claim (validations/claims/robust.py), not a rate
    "policy-smoothing",
    # issue 29 (helper pref): the iterative / hybrid rounds, HyPO, DNO and MaxMin-RLHF carry no
    # card (their papers' rates were not read; docs/algorithms/gshf.md, hypo.md, dno.md,
    # maxmin-rlhf.md, rlhs.md say what their claims test instead)
    "gshf-iterative",
    "hypo",
    "dno",
    "maxmin-rlhf",
    "rlhs",
    # issue 28 (helper guar28): VPO offline, RPO, XPO's bandit twin and RLCR carry no card (the
    # theorems' constants were not read; docs/algorithms/vpo.md, rpo.md, xpo-bandit.md and
    # rlcr.md say what their claims measure instead)
    "vpo-offline",
    "rpo-offline",
    "xpo-bandit",
    "rlcr-pg",
    # issue 28 (llm28b): online VPO, no regret constants read (docs/algorithms/vpo.md, "Online")
    "vpo-online",
    # helper curric: ROLLIN's theorem (constants, regularity condition) not read; its claim tests
    # the shape only (docs/algorithms/rollin.md)
    "rollin",
    # issue 29 (helper con29): ReLOAD states no rate (seed row 000#1: "Rate: not stated"); MoCAN's
    # claim is the dual's identities (convex, closed form, lambda* = cvxpy's = the primal-dual
    # limit); the general-utility PG's rates are sample complexities of the stochastic
    # variance-reduced method (general-utility-vr-pg below), not of this exact-gradient PG
    # (docs/algorithms/general-utilities.md)
    "reload",
    "mocan",
    "safety-primal-dual",
    "general-utility-pg",
    # issue 29 (vrpg29): N-VR-PG's O~(eps^-2) global rate was read from the abstract only (no
    # constants, no assumption constants); its claim nvr-pg-global-rate tests the exponent
    # (docs/algorithms/general-utility-vr-pg.md)
    "general-utility-vr-pg",
    # issue 28 tier B: SEC, MoPPS and SEELE state no theorem (abstracts: a TD(0) bandit
    # curriculum; posterior sampling toward a target difficulty; an IRT-sized hint); difficulty
    # filtering's KL lower bound and Guide's efficiency analysis were not read (abstracts only)
    "sec",
    "mopps",
    "difficulty-filtering",
    "seele",
    "guide-grpo",
    # issue 30 (icvar30): ICVaR-HF's bound is in eluder dimensions D_P, D_R that have no card
    # (its claim icvar-hf-preference-regret checks sublinearity by the log-log slope instead)
    "icvar-hf",
    # issue 30 (helper drrpo30): DR-RPO's online learner; the paper's regret theorem was not read
    # (abstract only), so its claim measures the regret's growth (docs/algorithms/dr-rpo-online.md)
    "dr-rpo-online",
}
# issue 29 (helper dich29): the RLHF / DPO dichotomy (000#66) states orderings and a sample gap,
# no rate constant read (docs/algorithms/rlhf-dpo-dichotomy.md: its claims measure n_eps), and
# IPL (000#21) states no rate (catalogue: "Not stated"; docs/algorithms/ipl.md)
NO_THEOREM |= {"rlhf-sparse", "dpo-loglinear", "ipl"}
# issue 29 (helper drpo29): DR-PO's guarantee is "finite sample complexity" with no rate read;
# PARL's O(1/T) constant was not read -- its claim checks the ascent lemma's
# min ||grad F||^2 <= 2 (F_T - F_0) / (alpha T) written out (docs/algorithms/dr-po.md, parl.md)
NO_THEOREM |= {"dr-po", "parl", "cal"}  # CAL (000#36): "no formal rate" (catalogue)
# issue 29 (act29): active context selection (001#18) -- the paper's "polynomial worst-case
# regret bound" was read without its exponent or constants (docs/algorithms/active-contexts.md);
# its claim checks a certified bound computed from the printed Lemma 3.1 radius instead
NO_THEOREM |= {"active-contexts"}
# CGPO (002-004#F8, tier B): "theoretical guarantees" claimed, no rate stated
# (docs/algorithms/cgpo.md); its claim is the exact constrained optimum (cvxpy)
NO_THEOREM |= {"cgpo-moj"}
# CPL (002-004#E10, tier B): a derivation, no theorem stated (catalogue); its claim is consistency
# against soft value iteration (docs/algorithms/cpl.md)
NO_THEOREM |= {"cpl"}
# HUBL (000#44, tier B): its theorem (a bias--regret trade-off of the reshaped MDP) was not
# read; its claim checks the reshaped MDP exactly and both sides of the trade-off (hubl.md)
NO_THEOREM |= {"hubl"}
# 001#12 (tier B): the diversity condition and its bound were not read (abstract only); its
# claim checks the single-task closed form A^H and polynomial growth with diverse tasks
NO_THEOREM |= {"multitask-epsilon-greedy"}
# PAMC (001#32, tier B): the paper's recovery theorem was not read (abstract only); its claim
# checks completion against the known truth, the conformal coverage exactly (pamc.md)
NO_THEOREM |= {"pamc"}
# density-model-vi (001#28, tier B): the paper states no rate (catalogue); its claim checks the
# occupancy recursion exactly and its growth in h (density-model-vi.md)
NO_THEOREM |= {"density-model-vi"}
# QRL (000#65, 001#73): exact recovery of shortest paths, an optimality statement with no rate
# (its claim checks it against Dijkstra); the embedding is its relaxation
NO_THEOREM |= {"qrl", "qrl-embedding"}
NO_THEOREM |= {"mbtl"}  # 002-004#B1 (gp31): "sublinear regret" without a rate in the abstract
# traces (001#6, 001#5, tier B): both papers state convergence with no rate (catalogue: "no
# rate"); their claims check the fixed points Q^pi / Q* against a linear solve and value iteration
NO_THEOREM |= {"trajectory-traces", "orchestrated-q"}
# issue 31 (advlin31): adversarial linear-Q MDPs (002-004#A1) -- the paper's O~(sqrt K) and the
# baseline's O~(K^(2/3)) were read from the abstract only, without constants or the omitted
# dependencies (docs/algorithms/ftrl-log-barrier-linear-q.md); the claim checks the K-exponent
NO_THEOREM |= {
    "ftrl-log-barrier-linear-q",
    "exp-weights-exploration-mix",
    "exp-weights-magnitude-reduced-linear-q",
    "ftrl-log-barrier-linear-q-simulator-free",
}
# issue 31 tier B (struct31): cascading RL (001#13) -- the regret O~(H sqrt(H S N K)) was read from
# a summary without constants or the paper's bonuses (docs/algorithms/cascading-vi.md); the claim
# checks BestPerm against brute force and the K-exponent of the regret
NO_THEOREM |= {"cascading-vi"}
# issue 31 (helper hybrid31): HNPG (000#20) -- the paper's rates were not read (abstract, a
# review and the authors' code only); its claim compares it with NPG and the offline-only critic
# against the exact optimum (docs/algorithms/hnpg.md)
NO_THEOREM |= {"hnpg"}
# PRDC (002-004#C3): "a bounded performance gap" is stated, its constants were not read; its
# claim measures the over-estimation and the gap against exact values (docs/algorithms/prdc.md)
NO_THEOREM |= {"prdc"}
# issue 28 tier B (llm28b): CoPG (000#56), OPRL (001#56), Clip/Delta, RAPO, RL-PLUS (002-004#G6,
# F9, G8): derivations or design invariants, no rate stated; claims in claims/llm_tier_b.py
NO_THEOREM |= {"copg", "oprl", "reward-refinement", "rapo", "rl-plus"}
# issue 31 (games31): 001#25 is a lower bound (no upper-bound card; the learners illustrate the
# K-batch mechanism, docs/algorithms/multi-batch-pe.md); 001#43's rate was not read (the
# pessimistic-nash card is the claim's certificate, docs/algorithms/pessimistic-nash.md)
NO_THEOREM |= {"multi-batch-pe", "batch-exhaustive-pe", "pessimistic-nash"}
# issue 31 tier B (mtbandit31): DouExpDes (001#19) and GFUCB (001#20) -- only the O~ rates of
# the abstracts/summaries were read, no constants; the claims measure the scaling in M and d
# against the per-task baselines (docs/algorithms/douexpdes.md, gfucb.md). Searched again (task
# cards): the stored copies of arXiv:2302.04441 and arXiv:2205.15701 reach only the abstracts and
# introductions, so neither theorem (constants, log factors) was read; still no card.
NO_THEOREM |= {"douexpdes", "independent-elimination", "gfucb", "gfucb-independent"}
# issue 31 tier B (offline31b): WSRL (002-004#C8) states no theorem (catalogue: "none stated");
# its claim measures the dip and the final value exactly (docs/algorithms/wsrl.md)
NO_THEOREM |= {"wsrl"}
# GORL (000#9): "rational and near-optimal" guidance, no rate (abstract); its claim compares it
# with every fixed constraint weight by exact values (docs/algorithms/gorl.md)
NO_THEOREM |= {"gorl"}
# H2O (002-004#C5): the paper's theory was not read (abstract only); its claim compares exact
# values on the bridge instance (docs/algorithms/h2o.md)
NO_THEOREM |= {"h2o"}
# CFGRL (000#68): Theorems 1-2 are improvement statements (J(pi_w) >= J(pi_beta)), no rate; its
# claim checks them by exact values (docs/algorithms/cfgrl.md)
NO_THEOREM |= {"cfgrl"}
NO_THEOREM |= {"ssp-ac", "ssp-ca", "ssp-q-learning"}  # 000#51: a.s. convergence, no rate
# submodular RL (helper submod; 000#13, 001#14, 002-004#A5): an approximation constant (greedy
# 1 - 1/e on submodular bandits), not a rate; checked by validations/claims/submodular.py
NO_THEOREM |= {"subpo"}
# 001#60 (helper mobj): the paper was not read, so no rate is stated here; the claim checks
# unbiasedness and variance, not a sample complexity (docs/algorithms/mo-vr-pg.md)
NO_THEOREM |= {"mo-vr-pg"}
# Tabular twins of deep losses (kind "deep"): no regret or sub-optimality theorem; each is held to
# its predicted fixed point by the claims of validations/claims/deep.py.
DEEP_TWINS = {
    "dpo-twin",
    "ipo-twin",
    "chipo-twin",
    "rloo-twin",
    "grpo-twin",
    "dr-grpo-twin",
    "dr-grpo-k2-twin",
    "cvar-grpo-twin",
    # issue 28's exact twins on tokentree-eos (algorithms/deep/regression_runs.py)
    "qsharp-twin",
    "rto-twin",
    "refuel-twin",
    "exo-twin",
    "rover-twin",
    "c-rlft-twin",
    "brorl-twin",
    "prefixrl-twin",
}
# The algorithm -> main theorem of the papers each implements (issue 14's list and the rest).
MAIN_THEOREM = {
    "ucbvi-hoeffding": "azar2017-thm1",
    "ucbvi-bernstein": "azar2017-thm2",
    "ucbvi-ajks": "ajks-thm7.1",
    "optimistic-q-hoeffding": "jin2018-ucb-hoeffding",
    "optimistic-q-bernstein": "jin2018-ucb-bernstein",
    "psrl": "psrl-osband2013",
    "lsvi-ucb": "jin2020-lsvi-ucb",
    "lmc-lsvi": "lmc-lsvi",
    "linucb": "oful-abbasi2011",
    "rep-ucb": "rep-ucb-arxiv",
    "icvar-rm": "du2023-icvar-thm1",
    "maxwp": "du2023-maxwp",
    "cvar-ucbvi": "wang2023-cvar-general",
    "vi-lcb": "vi-lcb-upper",
    "pessimistic-vi-bernstein": "li2022-offline-finite-horizon",
    "pevi": "pevi-linear",
    "pevi-tabular": "pevi-linear",
    "vw-pevi": "xiong2023-linpevi-adv-plus",
    "pessimistic-mle": "zjj-thm3.2",
    "dueling-rl": "psl-dueling-known",
    "regime": "zhan2024-regime-queries",
    "ucrl2": "jaksch2010-ucrl2-thm2",
    "plugin-average": "wang2023-avg-sample-complexity",
    "loop": "he2024-loop-regret",  # 000#37 (avg30)
    "loop-mixture": "he2024-loop-regret",
    "neorl": "sukhija2024-neorl-regret",  # 000#38 (avg30)
    "md-vi": "md-vi-thm1",
    "gshf-offline": "gshf-offline-pessimism",
    "nondominated-exp3": "auer2002-exp3-cor3.2",
    "cvar-ela": "zhao2024-cvar-lowrank-h7",
    "dump": "auer2002-ucb1-thm1",
    # issue 30 (icvar30): seed 001#48, ICVaR-L
    "icvar-l": "chen2024-icvar-l-thm1",
    # issue 31 (gp31): seed 000#39, CONFIG
    "config": "xu2023-config-regret",
    # task cards: seed 001#72, C-PSRL (Theorem 1 as restated by a review [S]; vacuous at the
    # claim's sizes, the claim tests the ordering in eta)
    "c-psrl": "mutti2024-c-psrl-thm1",
    # irlset: seed 001#2, US-IRL (card derived from the abstract's rate, [A])
    "us-irl": "metelli2023-us-irl",
}
# SUBSAMPLE-Q (001#3): the abstract's O~(1/sqrt(k) + eps_{k,m}) [A]; the claim checks the exponent
MAIN_THEOREM["subsample-q"] = "anand-qu2024-subsample-q"


# The deep trainer's entries (kind "transformer"): no bound card; their claims are validations
# (validations/claims/deep_training.py).
TRANSFORMERS = {
    f"{loss}-transformer"
    for loss in ("grpo", "dr-grpo", "cvar-grpo", "rloo", "ppo-clip", "astar-po", "rebel", "refuel",
                 "tbrm", "exo", "pacs", "p3o", "dpo", "ipo", "rpo", "vpo", "xpo", "chipo")
}  # fmt: skip
TRANSFORMERS |= {"laser-transformer"}  # LaSeR (issue 28, llm28)
TRANSFORMERS |= {"c-rlft-transformer"}  # C-RLFT on offline class-tagged data (issue 28, llm28a)
TRANSFORMERS |= {"rover-transformer"}  # ROVER's practical loss (issue 28, rover28)


def test_every_algorithm_is_accounted_for():
    everything = NO_THEOREM | set(MAIN_THEOREM) | DEEP_TWINS | TRANSFORMERS
    assert set(list_algorithms()) == everything


@pytest.mark.parametrize("name", sorted(MAIN_THEOREM))
def test_algorithm_carries_its_theorem_first(name):
    entry = get_algorithm(name)
    assert entry.bounds and entry.bounds[0] == MAIN_THEOREM[name]
    for card in entry.bounds:
        assert card in list_bounds()
        get_bound(card)


@pytest.mark.parametrize("name", sorted(NO_THEOREM | DEEP_TWINS | TRANSFORMERS))
def test_contrasts_carry_no_bound(name):
    assert get_algorithm(name).bounds == ()


def test_no_agent_class_keeps_a_second_bound_attribute():
    """One way to say which bound an algorithm carries: the registration's bounds=."""
    for name in list_algorithms():
        assert not hasattr(get_algorithm(name).factory, "bound"), name


def test_list_algorithms_shows_the_bounds(capsys):
    """``theorylab list algorithms --json`` carries every card (the plain table may shorten
    long cells to the terminal width)."""
    import json

    assert main(["list", "algorithms", "--json"]) == 0
    rows = {row["name"]: row for row in json.loads(capsys.readouterr().out)}
    for name in list_algorithms():
        cards = get_algorithm(name).bounds
        assert rows[name]["bounds"] == (",".join(cards) if cards else "-"), name
    for name, card in MAIN_THEOREM.items():
        assert rows[name]["bounds"].split(",")[0] == card
