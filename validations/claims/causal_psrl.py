"""Claim of C-PSRL (seed row 001#72, Mutti et al. 2024; ``algorithms/online/c_psrl.py``).

``c-psrl-known-edges``: (i) the exact per-variable graph posterior of C-PSRL equals the marginal
of a brute-force posterior over *whole* graphs whose likelihoods are computed one transition at
a time by the Polya urn of every CPT cell (no gamma functions, no factorisation over variables)
on tiny factored models with random counts and partial priors; (ii) Bayesian regret -- the mean
over factored MDPs drawn from C-PSRL's own prior (``mdps/factored.random_factored_mdp``) and
over seeds, the same seeds for every learner -- falls with the number of known edges: with all
Z parents of every variable known (C-PSRL is then factored PSRL with the true graph) it is
below C-PSRL with none known, paired 95% interval above 0, and no added known parent raises it
significantly; (iii) the uninformative end: PSRL with a flat Dirichlet prior over the 2^n
states has higher Bayesian regret than C-PSRL with no edge known (paired 95% interval).

Control: ``c-psrl-ignore-known-edges`` (the candidate parent sets ignore G_0): the posterior
no longer matches the brute force restricted to G_0 and the known-edge levels give the same
regret, so (i) and (ii) FAIL.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from theorylab.validations.claim import Check, ScaledClaim, save_claim_figure
from theorylab.validations.registry import register_validation


def brute_force_graph_posterior(
    counts: np.ndarray, n: int, Z: int, known: str, beta: float
) -> list[np.ndarray]:
    """Per variable, the posterior over its Z-subset parent sets containing the known parents
    (``known`` = "j-i,..."), as the marginal of the normalised joint over whole graphs.

    counts: ``(S, A, S)`` transition counts; a graph's likelihood is the product over the
    transitions, taken one at a time, of the Polya-urn predictive (beta + n1) / (2 beta + n) of
    each variable's cell (u, a) given the transitions before it.
    """
    pairs = [tuple(map(int, e.split("-"))) for e in known.split(",") if e]
    per_var = [
        [
            W
            for W in itertools.combinations(range(n), Z)
            if {j for j, c in pairs if c == i} <= set(W)
        ]
        for i in range(n)
    ]
    triples = [(s, a, t) for s, a, t in zip(*np.nonzero(counts), strict=True)
               for _ in range(int(counts[s, a, t]))]  # fmt: skip
    joint = {}
    for G in itertools.product(*per_var):
        logp, seen = 0.0, {}
        for s, a, t in triples:
            for i in range(n):
                u = sum(((s >> j) & 1) << k for k, j in enumerate(G[i]))
                n1, tot = seen.get((i, u, a), (0, 0))
                p1 = (beta + n1) / (2 * beta + tot)
                x = (t >> i) & 1
                logp += math.log(p1 if x else 1.0 - p1)
                seen[(i, u, a)] = (n1 + x, tot + 1)
        joint[G] = logp
    top = max(joint.values())
    weights = {G: math.exp(v - top) for G, v in joint.items()}
    total = sum(weights.values())
    return [
        np.array([sum(w for G, w in weights.items() if G[i] == W) / total for W in per_var[i]])
        for i in range(n)
    ]


def posterior_gap(n_cases: int, seed: int) -> tuple[float, int]:
    """max |C-PSRL's posterior - brute force| over tiny models (n = 3, Z = 1, 2; n = 4, Z = 1)
    with random counts (about 40 transitions) and partial priors; the number of cases."""
    from theorylab.agent import env_spec
    from theorylab.algorithms.online.c_psrl import CPSRL
    from theorylab.mdps.factored import random_factored_mdp

    rng = np.random.default_rng([seed, 72])
    worst = 0.0
    for c in range(n_cases):
        n, Z = ((3, 2), (3, 1), (3, 2), (4, 1))[c % 4]
        mdp, parents = random_factored_mdp(n, 2, Z, 3, rng, beta=1.0)
        beta = float(rng.uniform(0.3, 2.0))
        known = ",".join(f"{W[0]}-{i}" for i, W in enumerate(parents) if rng.random() < 0.5)
        agent = CPSRL(env_spec(mdp), 1, [np.random.default_rng(0)], degree=Z,
                      known_edges=known, beta=beta)  # fmt: skip
        shape = (mdp.S, mdp.A, mdp.S)
        N = rng.integers(0, 3, size=shape) * (rng.random(shape) < 40 / (2 * mdp.S * mdp.S))
        agent.model.N_sas[0] = N
        mine = agent.graph_posterior()
        ref = brute_force_graph_posterior(N, n, Z, known, beta)
        for i in range(n):
            if mine[i].shape[1] != ref[i].shape[0]:
                worst = max(worst, 1.0)  # a different candidate set: the largest possible gap
                continue
            worst = max(worst, float(np.abs(mine[i][0] - ref[i]).max()))
    return worst, n_cases


def bayesian_regrets(cfg: dict, seed: int) -> dict[str, np.ndarray]:
    """Cumulative regret at K ``(instances * seeds,)`` of C-PSRL with k = 0..Z known parents per
    variable ("known k") and of flat PSRL ("psrl"), on instances drawn from the prior; every
    learner runs with the same seeds on the same instances."""
    import theorylab as tl
    from theorylab.mdps.factored import random_factored_mdp

    n, A, Z, H, K, B, beta = (cfg[k] for k in ("n", "A", "Z", "H", "K", "seeds", "beta"))
    out: dict[str, list[np.ndarray]] = {}
    for inst in range(cfg["instances"]):
        mdp, parents = random_factored_mdp(n, A, Z, H, np.random.default_rng([seed, 72, inst]),
                                           beta=beta)  # fmt: skip
        for k in range(Z + 1):
            known = ",".join(f"{j}-{i}" for i, W in enumerate(parents) for j in W[:k])
            r = tl.run("c-psrl", mdp, K, B, seed=seed + inst, degree=Z, known_edges=known,
                       beta=beta)  # fmt: skip
            out.setdefault(f"known {k}", []).append(r.cumulative_regret)
        r = tl.run("psrl", mdp, K, B, seed=seed + inst)
        out.setdefault("psrl", []).append(r.cumulative_regret)
    return {key: np.concatenate(v) for key, v in out.items()}  # (instances * B, K) each


def paired(x: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    """Mean and standard error of the paired differences x - y."""
    d = x - y
    return float(d.mean()), float(d.std(ddof=1) / np.sqrt(d.size))


@dataclass(frozen=True)
class CPSRLKnownEdges(ScaledClaim):
    name: str = "c-psrl-known-edges"
    statement: str = (
        "C-PSRL (Mutti et al. 2024; seed row 001#72; reconstructed: per-variable exact posterior "
        "over Z-subset parent sets containing the known parents, Beta-Bernoulli CPTs): (i) its "
        "graph posterior equals brute-force enumeration of whole graphs with sequential Polya-"
        "urn likelihoods (tiny models, random counts, partial priors; to 1e-9); (ii) Bayesian "
        "regret over factored MDPs drawn from the prior (n binary variables, Z = 2 parents each, "
        "Beta(1, 1) CPTs, reward = fraction of variables on), same seeds for every learner: with "
        "all parents known (factored PSRL with the true graph) it is below no known edge, paired "
        "95% interval above 0, and adding one known parent per variable never raises it by more "
        "than 1.96 standard errors; (iii) flat PSRL (uninformative Dirichlet prior over the 2^n "
        "states) has higher Bayesian regret than C-PSRL with no known edge (paired 95% "
        "interval). Quick: 3 posterior cases, n = 5, H = 8, K = 40, 8 instances x 2 seeds, the "
        "drop in (ii) reported, not tested (measured 0.39 +- 0.25 SE at K = 60 with 48 runs: "
        "too few); full: 16 posterior cases, n = 6, H = 10, K = 150, 32 instances x 4 seeds."
    )
    scales: dict[str, dict[str, Any]] = field(
        default_factory=lambda: {
            "quick": dict(
                cases=3, n=5, A=2, Z=2, H=8, K=40, beta=1.0, instances=8, seeds=2, test_drop=False
            ),
            "full": dict(
                cases=16,
                n=6,
                A=2,
                Z=2,
                H=10,
                K=150,
                beta=1.0,
                instances=32,
                seeds=4,
                test_drop=True,
            ),
        }  # fmt: skip
    )

    def _run(self, cfg: dict, seed: int, plot: str | None, rep) -> None:
        gap, cases = posterior_gap(cfg["cases"], seed)
        rep.checks.append(
            Check(
                "graph posterior = brute-force enumeration of whole graphs (Polya urn)",
                gap <= 1e-9,
                f"max |p_C-PSRL(W_i | D) - p_brute(W_i | D)| {gap:.2e} over {cases} tiny models",
                {"max_gap": gap, "cases": cases},
            )
        )
        R = bayesian_regrets(cfg, seed)
        Z = cfg["Z"]
        final = {k: v[:, -1] for k, v in R.items()}  # (runs,)
        means = {k: float(v.mean()) for k, v in final.items()}
        drop, se = paired(final["known 0"], final[f"known {Z}"])
        text = ", ".join(f"{k} {means[k]:.2f}" for k in final)
        tested = cfg["test_drop"]
        rep.checks.append(
            Check(
                "Bayesian regret: all parents known < none known (paired 95% interval > 0)",
                drop - 1.96 * se > 0 or not tested,
                (
                    ""
                    if tested
                    else "INFO (too few runs at this scale to resolve it; tested at full scale): "
                )
                + f"R_K: {text}; drop none -> all {drop:.3f} +- {1.96 * se:.3f} (95%), "
                f"{final['psrl'].size} paired runs",
                {"means": means, "drop": drop, "se": se},
                status=None if tested else "INFO",
            )
        )
        steps = [paired(final[f"known {k + 1}"], final[f"known {k}"]) for k in range(Z)]
        worst = max(m / s if s > 0 else (np.inf if m > 0 else 0.0) for m, s in steps)
        rep.checks.append(
            Check(
                "no added known parent raises the Bayesian regret (each step < 1.96 SE up)",
                worst < 1.96,
                "steps k -> k+1: "
                + ", ".join(f"{m:+.3f} (SE {s:.3f})" for m, s in steps)
                + f"; worst {worst:.2f} SE",
                {"steps": steps},
            )
        )
        gain, se_u = paired(final["psrl"], final["known 0"])
        rep.checks.append(
            Check(
                "uninformative end: flat PSRL's Bayesian regret > C-PSRL with no known edge",
                gain - 1.96 * se_u > 0,
                f"flat PSRL - C-PSRL(0 known) {gain:.3f} +- {1.96 * se_u:.3f} (95%)",
                {"gain": gain, "se": se_u},
            )
        )
        if plot:
            from theorylab.plotting import plot_regret

            curves = {f"C-PSRL, {k[6:]} of {Z} parents known" if k != "psrl" else
                      "PSRL, flat prior": v for k, v in R.items()}  # fmt: skip
            title = f"Bayesian regret, factored MDPs n = {cfg['n']}, Z = {Z}"
            ax = plot_regret(curves, x=np.arange(1, cfg["K"] + 1), title=title)
            save_claim_figure(ax, plot)


register_validation(CPSRLKnownEdges(), controls=("c-psrl-ignore-known-edges",), papers=("001#72",))
