"""Off-policy eligibility traces (seed row 001#6, Daley, White, Amato & Machado, ICML 2023;
``algorithms/policy_optimization/trajectory_traces.py``).

``trace-operators-fixed-point``: on random discounted MDPs, for per-decision IS, Retrace,
Truncated IS and RBIS at several lambda, (1) the forward propagation of W agrees with the
closed form (I - gamma P_c)^{-1} written out here for the per-decision traces; (2) the exact
modulus ||I - W (I - gamma P^pi)||_inf is <= gamma (the paper's convergence conditions make M a
gamma-contraction); (3) iterating M from 0 reaches Q^pi (a linear solve) to 1e-10; (4) control
through ``tl.run("trajectory-traces")`` reaches Q* (value iteration) to 1e-8. Control
``rbis-without-is`` (RBIS's trace lambda^t with the IS ratios dropped: Q(lambda)) fails (2).

``rbis-robust-across-lambda``: the sampled learner's final RMS error to Q^pi over lambda in
{0, .2, .., 1}. Regime "noise" (random MDP, many episodes, step 0.1): RBIS's worst error over
lambda is within 2x the best of any trace at any lambda, and its max/min ratio over lambda is
below per-decision IS's,
which blows up at lambda = 1 (>= 3x its best); regime "bias" (a chain with a distant reward, few
episodes): at lambda = 1 RBIS's error is below Retrace's (the traces Retrace cuts for good, RBIS
keeps). Reported, not gated: Retrace and Truncated IS are as flat as RBIS in the noise regime, and
per-decision IS beats RBIS at lambda = 0.8 in the bias regime. Control
``rbis-without-recency-bound`` (beta_t = rho_t beta_{t-1}: IS at lambda = 1 whatever lambda) fails.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from theorylab.validations.claim import Check, ScaledClaim, save_claim_figure
from theorylab.validations.claims.policy_optimization import (
    random_discounted_mdp as random_mdp,
)
from theorylab.validations.registry import register_validation

PAPERS = ("001#6",)


def chain_mdp(S: int, gamma: float):
    """A chain: action 0 moves right w.p. 0.9 (else stays), action 1 moves left; reward 1 at
    the right end (a distant reward: credit must travel S steps)."""
    from theorylab.mdps import TabularMDP

    P = np.zeros((S, 2, S))
    R = np.zeros((S, 2))
    for s in range(S):
        P[s, 0, min(s + 1, S - 1)] += 0.9
        P[s, 0, s] += 0.1
        P[s, 1, max(s - 1, 0)] = 1.0
    R[S - 1] = 1.0
    return TabularMDP(P, R, np.ones(S) / S, gamma=gamma, name="chain")


def eps_greedy(rng: np.random.Generator, S: int, A: int, eps: float) -> np.ndarray:
    """(S, A) eps-greedy in a random preferred action per state."""
    pi = np.full((S, A), eps / A)
    pi[np.arange(S), rng.integers(A, size=S)] += 1 - eps
    return pi


def closed_form_weights(mdp, pi, mu, c):
    """(I - gamma P_c)^{-1}, P_c((s,a),(s',a')) = P(s'|s,a) mu(a'|s') c(s',a'), written out
    here (not imported) for the per-decision traces."""
    S, A = mdp.S, mdp.A
    P = mdp.dense_P()
    Pc = np.einsum("sat,tb->satb", P, mu * c).reshape(S * A, S * A)
    return np.linalg.inv(np.eye(S * A) - mdp.gamma * Pc)


@dataclass(frozen=True)
class TraceFixedPoint(ScaledClaim):
    name: str = "trace-operators-fixed-point"
    statement: str = (
        "The multistep trace operator M Q = Q + W (T^pi Q - Q) (Daley et al. 2023) with "
        "per-decision IS, Retrace, Truncated IS and RBIS traces, on random discounted MDPs "
        "(S = 3, A = 2, gamma = 0.8; uniform behaviour, eps-greedy target, eps = 0.1), lambda in "
        "{1} (quick) or {0.5, 1} (full): W by forward propagation equals the closed form for "
        "the per-decision traces "
        "(unpruned, to 1e-8); the exact modulus ||I - W (I - gamma P^pi)||_inf <= gamma; "
        "iterating M from 0 reaches Q^pi (linear solve) to 1e-10; control (greedy target, "
        "tl.run('trajectory-traces')) reaches Q* (value iteration) to 1e-8. Quick: 1 MDP; full: "
        "3 MDPs."
    )
    scales: dict[str, dict[str, Any]] = field(
        default_factory=lambda: {
            "quick": {"mdps": 1, "lams": (1.0,)},
            "full": {"mdps": 3, "lams": (0.5, 1.0)},
        }
    )

    def _run(self, cfg: dict, seed: int, plot: str | None, rep) -> None:
        import theorylab as tl
        from theorylab.algorithms.policy_optimization import trajectory_traces as tt

        rng = np.random.default_rng(seed + 61)
        g, lams = 0.8, cfg["lams"]
        w_err, worst_mod, fp_err, ctl_err = 0.0, 0.0, 0.0, 0.0
        mods: dict[str, list[float]] = {t: [] for t in tt.TRACES}
        for _ in range(cfg["mdps"]):
            mdp = random_mdp(rng, 3, 2, g)
            pi = eps_greedy(rng, 3, 2, 0.1)
            mu = np.full((3, 2), 0.5)
            q_pi = tt.q_of_policy(mdp, pi)
            rho = pi / mu
            for trace in tt.TRACES:
                for lam in lams:
                    exact = trace in tt.PER_DECISION  # unpruned where cheap
                    W = tt.trace_weights(
                        mdp, pi, mu, trace, lam, tol=1e-12 if exact else 1e-10,
                        prune=0.0 if exact else 1e-9,
                    )  # fmt: skip
                    if trace in tt.PER_DECISION:
                        c = lam * (rho if trace == "pdis" else np.minimum(1.0, rho))
                        w_err = max(
                            w_err, float(np.abs(W - closed_form_weights(mdp, pi, mu, c)).max())
                        )
                    mod = tt.contraction_modulus(mdp, pi, W)
                    mods[trace].append(mod)
                    worst_mod = max(worst_mod, mod)
                    Q = np.zeros((3, 2))
                    for _k in range(300):
                        Q = tt.apply_operator(mdp, Q, pi, W)
                    fp_err = max(fp_err, float(np.abs(Q - q_pi).max()))
                    run = tl.run("trajectory-traces", mdp, iterations=100, trace=trace, lam=lam)
                    ctl_err = max(ctl_err, float(run.config["q_error"][-1]))
        rep.checks.extend(
            [
                Check(
                    "propagated W = closed form (per-decision traces)",
                    w_err <= 1e-8,
                    f"max |W_prop - (I - gamma P_c)^-1| = {w_err:.2e} (unpruned propagation, "
                    "trace states quantised to 1e-9; tolerance 1e-8)",
                    {"w_error": w_err},
                ),
                Check(
                    "M is a gamma-contraction around Q^pi",
                    worst_mod <= g + 1e-9,
                    f"max ||I - W (I - gamma P^pi)||_inf = {worst_mod:.4f} (gamma = {g}); per "
                    "trace: " + ", ".join(f"{t} {max(v):.3f}" for t, v in mods.items()),
                    {"modulus": worst_mod},
                ),
                Check(
                    "fixed point = Q^pi",
                    fp_err <= 1e-10,
                    f"max ||M^300 0 - Q^pi||_inf = {fp_err:.1e} (tolerance 1e-10)",
                    {"fixed_point_error": fp_err},
                ),
                Check(
                    "control fixed point = Q*",
                    ctl_err <= 1e-8,
                    f"max ||Q_100 - Q*||_inf over traces and lambda = {ctl_err:.1e} "
                    "(tolerance 1e-8)",
                    {"control_error": ctl_err},
                ),
            ]
        )


register_validation(TraceFixedPoint(), controls=("rbis-without-is",), papers=PAPERS)


LAMBDAS = np.linspace(0.0, 1.0, 6)
REGIMES = {
    # name: (mdp maker, target eps, episodes, step, episode length)
    "noise": ("random", 0.1, 1000, 0.1, 30),
    "bias": ("chain", 0.2, 200, 0.05, 60),
}


def regime_errors(regime: str, seeds: int, rng) -> dict[str, np.ndarray]:
    """Mean final RMS error over seeds per trace and lambda: {trace: (len(LAMBDAS),)}."""
    from theorylab.algorithms.policy_optimization import trajectory_traces as tt

    kind, eps, episodes, alpha, length = REGIMES[regime]
    if kind == "random":
        mdp, A = random_mdp(rng, 5, 3, 0.9), 3
        pi = eps_greedy(rng, 5, 3, eps)
    else:
        mdp, A = chain_mdp(8, 0.95), 2
        pi = np.full((8, 2), eps / 2)
        pi[:, 0] += 1 - eps
    mu = np.full((mdp.S, A), 1.0 / A)
    out = {}
    for trace in tt.TRACES:
        errs = []
        for lam in LAMBDAS:
            e = tt.sampled_evaluation(
                mdp, pi, mu, trace, float(lam), episodes=episodes, length=length, alpha=alpha,
                seeds=range(seeds), record_every=episodes,
            )[:, -1]  # fmt: skip
            errs.append(float(np.mean(np.where(np.isfinite(e), e, 1e12))))
        out[trace] = np.array(errs)
    return out


@dataclass(frozen=True)
class RBISRobust(ScaledClaim):
    name: str = "rbis-robust-across-lambda"
    statement: str = (
        "Sampled off-policy evaluation with eligibility traces (Daley et al. 2023), final RMS "
        "error to Q^pi for lambda in {0, 0.2, .., 1}. Noise regime (random MDP S = 5, A = 3, "
        "gamma = 0.9, uniform behaviour, eps-greedy target eps = 0.1, 1000 episodes of 30 steps, "
        "step 0.1): RBIS's worst error over lambda <= 2 x the best of any trace at any lambda; "
        "its max/min over lambda < per-decision IS's, whose lambda = 1 error is >= 3 x its best "
        "(the IS variance "
        "RBIS bounds). Bias regime (8-state chain, gamma = 0.95, eps = 0.2, 200 episodes of 60 "
        "steps, step 0.05): RBIS's error at lambda = 1 < Retrace's. Quick: 8 seeds; full: 32."
    )
    scales: dict[str, dict[str, Any]] = field(
        default_factory=lambda: {"quick": {"seeds": 8}, "full": {"seeds": 32}}
    )

    def _run(self, cfg: dict, seed: int, plot: str | None, rep) -> None:
        rng = np.random.default_rng(seed + 11)
        noise = regime_errors("noise", cfg["seeds"], rng)
        bias = regime_errors("bias", cfg["seeds"], rng)
        flat = {t: float(e.max() / e.min()) for t, e in noise.items()}
        rb, pd = noise["rbis"], noise["pdis"]
        best = float(min(e.min() for e in noise.values()))

        def row(errs):
            return ", ".join(f"{t} [{' '.join(f'{x:.3g}' for x in e)}]" for t, e in errs.items())

        rep.checks.extend(
            [
                Check(
                    "RBIS is good at every lambda",
                    bool(rb.max() <= 2.0 * best),
                    f"noise regime: RBIS's worst error over lambda {rb.max():.3g} vs the best of "
                    f"any trace at any lambda {best:.3g} (ratio {rb.max() / best:.2f}, limit 2)",
                    {"rbis": rb.tolist(), "best": best},
                ),
                Check(
                    "per-decision IS blows up at lambda = 1 (the baseline's failure)",
                    bool(pd[-1] >= 3.0 * pd.min()),
                    f"noise regime: IS error at lambda = 1 {pd[-1]:.3g}, best {pd.min():.3g} "
                    f"(ratio {pd[-1] / pd.min():.2f}, needs >= 3)",
                    {"pdis": pd.tolist()},
                ),
                Check(
                    "RBIS flatter across lambda than per-decision IS",
                    flat["rbis"] < flat["pdis"],
                    "noise regime, max/min error over lambda: "
                    + ", ".join(f"{t} {v:.2f}" for t, v in flat.items()),
                    {"flatness": flat},
                ),
                Check(
                    "RBIS keeps the traces Retrace cuts (lambda = 1)",
                    bool(bias["rbis"][-1] < bias["retrace"][-1]),
                    f"bias regime at lambda = 1: RBIS {bias['rbis'][-1]:.3g}, Retrace "
                    f"{bias['retrace'][-1]:.3g}, Truncated IS {bias['truncated-is'][-1]:.3g}, IS "
                    f"{bias['pdis'][-1]:.3g}",
                    {"bias": {t: e.tolist() for t, e in bias.items()}},
                ),
                Check(
                    "all errors (reported)",
                    True,
                    f"noise: {row(noise)}; bias: {row(bias)}",
                    status="INFO",
                ),
            ]
        )
        if plot:
            from theorylab.plotting import plot_lines

            curves = {f"{t} (noise)": e for t, e in noise.items()}
            curves.update({f"{t} (bias)": e for t, e in bias.items()})
            ax = plot_lines(
                LAMBDAS,
                curves,
                xlabel="lambda",
                ylabel="final RMS error to Q^pi",
                title="Off-policy traces across lambda",
                logy=True,
            )
            save_claim_figure(ax, plot)


register_validation(RBISRobust(), controls=("rbis-without-recency-bound",), papers=PAPERS)
