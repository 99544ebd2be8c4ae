"""Demonstration-regularised RL's online phase (seed row 001#24 = 002-004#A2): samples-to-eps
falls with the number of expert demonstrations N_E.

The learner is ``demo-regularised-bpi`` (BC from N_E expert episodes, then KL-regularised
optimistic exploration toward the clone with lambda = eps / (2 K(N_E)) and a fast-rate stopping
rule; :mod:`theorylab.algorithms.online.demo_regularised_bpi`). Samples-to-eps is its stopping
episode tau, and every output is checked against independent answers: the exact value of the
output policy (backward recursion on the true model) against V* by backward induction, and the
exact trajectory KL(pi* || pi_BC) of the optimal policy (so the regularisation bias lambda KL is
computed, not assumed). The instance is a combination lock (sparse reward at the end, every
mistake absorbing): a learner without demonstrations must rule out every wrong action.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from theorylab.validations.claim import Check, ScaledClaim, save_claim_figure
from theorylab.validations.registry import register_validation

PAPERS = ("001#24", "002-004#A2")


def trajectory_kl(mdp, expert: np.ndarray, bc: np.ndarray) -> np.ndarray:
    """KL_traj(pi* || pi_BC) = E_{pi*} sum_h -ln pi_BC_h(a*_h | s_h), exactly, for a deterministic
    ``expert (H, S)`` and clones ``bc (B, H, S, A)``: ``(B,)`` (forward state distribution)."""
    H, S = expert.shape
    d = np.asarray(mdp.mu0, dtype=float)  # (S,) state distribution at step h
    P = mdp.dense_P()  # (S, A, S)
    kl = np.zeros(bc.shape[0])
    for h in range(H):
        a = expert[h]  # (S,)
        kl += -np.log(bc[:, h, np.arange(S), a]) @ d  # (B,)
        d = d @ P[np.arange(S), a]  # (S,)
    return kl


def stop_times(mdp, demos: int, seeds: int, seed: int, cap: int, **params):
    """Run ``demo-regularised-bpi`` with ``demos`` expert episodes per seed until every seed
    stops (or ``cap`` episodes): (tau (B,), output policies (B, H, S, A), agent)."""
    from theorylab.agent import env_spec
    from theorylab.algorithms.policy_optimization.demonstration_regularised import (
        expert_demonstrations,
    )
    from theorylab.algorithms.registry import make_agent

    drawn = [
        expert_demonstrations(mdp, demos, np.random.default_rng([seed, i, 7])) for i in range(seeds)
    ]
    states = np.stack([s for s, _ in drawn])  # (B, N_E, H)
    actions = np.stack([a for _, a in drawn])  # (B, N_E, H)
    rngs = [np.random.default_rng([seed, i, 1]) for i in range(seeds)]
    agent = make_agent(
        "demo-regularised-bpi",
        env_spec(mdp),
        seeds,
        rngs,
        demonstrations=(states, actions),
        **params,
    )
    env_rngs = [np.random.default_rng([seed, i, 2]) for i in range(seeds)]
    for _ in range(cap):
        agent.update(mdp.rollout(agent.policy(), rng=env_rngs))
        if (agent.stopped_at >= 0).all():
            break
    tau = np.where(agent.stopped_at < 0, cap, agent.stopped_at)
    return tau, agent.recommendation(), agent


@dataclass(frozen=True)
class DemoRegularisedSamples(ScaledClaim):
    name: str = "demo-regularised-bpi-samples"
    statement: str = (
        "Demonstration-regularised RL (Tiapkin et al. 2024), online phase: BC from N_E expert "
        "episodes, then KL-regularised optimistic exploration toward pi_BC with lambda = eps / "
        "(2 K), K = H min(S A / N_E, ln A), stopped by the fast-rate certificate "
        "(demo-regularised-bpi, bonus_scale 0.25, delta 0.1), on a combination lock "
        "(H = 3, A = 3). (i) When it stops, its output is eps-optimal in the original MDP (exact "
        "evaluation against V* by backward induction) on >= 1 - delta of the seeds, none "
        "censored; (ii) the regularisation bias lambda KL_traj(pi* || pi_BC), computed exactly, "
        "is <= eps / 2 on >= 1 - delta of the seeds; (iii) samples-to-eps (the stopping episode) "
        "falls with N_E: log-log slope <= -0.5 (the paper's rate 1 / (eps^2 N_E) has slope -1) "
        "and the largest N_E needs at most a third of the smallest's; (iv) at the largest N_E it "
        "needs at most half the episodes of plain optimistic BPI (lambda = 0, the baseline that "
        "ignores the demonstrations). Quick: N_E in {256, 512, 1024, 2048}, 4 seeds; full: "
        "N_E = 64 .. 4096 (doubling), 8 seeds; eps = 0.3."
    )
    scales: dict[str, dict[str, Any]] = field(
        default_factory=lambda: {
            "quick": {"demos": (256, 512, 1024, 2048), "seeds": 4, "cap": 4000},
            "full": {"demos": (64, 128, 256, 512, 1024, 2048, 4096), "seeds": 8, "cap": 8000},
        }
    )
    problem: str = "combination-lock:H=3,A=3,code_seed=3"
    eps: float = 0.3
    delta: float = 0.1
    bonus_scale: float = 0.25

    def _run(self, cfg: dict, seed: int, plot: str | None, rep) -> None:
        from theorylab.algorithms.planning.evaluation import evaluate_policies
        from theorylab.algorithms.planning.finite_horizon import backward_induction
        from theorylab.mdps import make

        mdp = make(self.problem)
        opt = backward_induction(mdp)
        v_star, expert = float(opt.value), np.asarray(opt.policy)  # V*(mu0), (H, S)
        demos, B, cap = np.asarray(cfg["demos"]), int(cfg["seeds"]), int(cfg["cap"])
        params = {"eps": self.eps, "delta": self.delta, "bonus_scale": self.bonus_scale}
        taus, optimal, bias, lams, censored, bc_gap = [], [], [], [], 0, []
        for n in demos:
            tau, out, agent = stop_times(mdp, int(n), B, seed, cap, **params)
            values = evaluate_policies(mdp, out, batched=True)[:, 0] @ mdp.mu0  # (B,)
            taus.append(tau)
            censored += int((agent.stopped_at < 0).sum())
            optimal.append(v_star - values <= self.eps + 1e-12)
            bias.append(agent.lam * trajectory_kl(mdp, expert, agent.bc))
            lams.append(agent.lam)
            bc_values = evaluate_policies(mdp, agent.bc, batched=True)[:, 0] @ mdp.mu0  # (B,)
            bc_gap.append(float(np.mean(v_star - bc_values)))  # information: BC alone
        base_tau, _, base = stop_times(mdp, int(demos[-1]), B, seed, cap, **params, lam=0.0)
        censored_base = int((base.stopped_at < 0).sum())
        tau = np.asarray(taus, dtype=float)  # (n_demos, B)
        mean_tau = tau.mean(axis=1)
        slope = float(np.polyfit(np.log(demos), np.log(mean_tau), 1)[0])
        ok, bias = np.asarray(optimal), np.asarray(bias)  # (n_demos, B)
        base_mean = float(np.mean(base_tau))
        level = 1.0 - self.delta
        checks = [
            Check(
                "the output is eps-optimal when it stops",
                ok.mean() >= level and censored == 0,
                f"eps-optimal (exact V* - V^out <= {self.eps}) on {ok.mean():.3f} of the "
                f"{ok.size} runs (>= {level}); censored runs {censored} (cap {cap})",
                {"fraction": float(ok.mean()), "censored": censored},
            ),
            Check(
                "the regularisation bias is within eps / 2",
                float((bias <= self.eps / 2).mean()) >= level,
                f"lambda KL_traj(pi* || pi_BC) (exact) at most {bias.max():.4f}, median "
                f"{np.median(bias):.4f}; <= eps / 2 = {self.eps / 2} on "
                f"{(bias <= self.eps / 2).mean():.3f} of the runs; lambda = "
                f"{np.round(lams, 3).tolist()}",
                {"max_bias": float(bias.max()), "lam": [float(x) for x in lams]},
            ),
            Check(
                "samples-to-eps falls with the number of demonstrations",
                slope <= -0.5 and mean_tau[-1] <= mean_tau[0] / 3,
                f"mean stopping episode {np.round(mean_tau, 1).tolist()} at N_E = "
                f"{demos.tolist()}; log-log slope {slope:.2f} (<= -0.5; the paper's rate: -1); "
                f"ratio first / last {mean_tau[0] / mean_tau[-1]:.1f} (>= 3); information: "
                f"V* - V^pi_BC (BC alone, exact) {np.round(bc_gap, 4).tolist()}",
                {
                    "tau": mean_tau.tolist(),
                    "slope": slope,
                    "demos": demos.tolist(),
                    "bc_gap": bc_gap,
                },
            ),
            Check(
                "demonstrations beat plain optimistic exploration",
                mean_tau[-1] <= base_mean / 2 and censored_base == 0,
                f"at N_E = {demos[-1]}: {mean_tau[-1]:.1f} episodes vs {base_mean:.1f} for "
                f"lambda = 0 (<= half); baseline censored runs {censored_base}",
                {"baseline_tau": base_mean},
            ),
        ]
        if plot:
            from theorylab.plotting import plot_lines

            ax = plot_lines(
                demos,
                {
                    f"demo-regularised-bpi (mean of {B} seeds)": mean_tau,
                    "plain optimistic BPI (lambda = 0)": np.full(demos.size, base_mean),
                    "slope -1 through the first point": mean_tau[0] * demos[0] / demos,
                },
                xlabel="expert demonstrations N_E",
                ylabel=f"episodes to stop (eps = {self.eps})",
                title=f"Demonstration-regularised BPI on {self.problem}",
                logx=True,
                logy=True,
            )
            save_claim_figure(ax, plot)
        rep.checks.extend(checks)


register_validation(
    DemoRegularisedSamples(),
    controls=("demo-bpi-ignore-demos", "demo-bpi-uniform-reference"),
    papers=PAPERS,
)
