"""Claim on Inverse Preference Learning (seed 000#21, Hejna & Sadigh 2023, arXiv:2305.15363; card
docs/algorithms/ipl.md): on tabular discounted MDPs with population BTL preferences over segments,
IPL's Q fit through the inverse soft Bellman operator gives a reward equal to the true one up to a
constant and the soft-optimal policy of soft value iteration. Control ``ipl-bellman-term-dropped``
is in validations/dichotomy_mutations.py.
"""

from __future__ import annotations

import numpy as np

from theorylab.validations.claim import Check, ScaledClaim, save_claim_figure
from theorylab.validations.registry import register_validation


def _reward_model_pipeline(mdp, M, w, tau: float) -> np.ndarray:
    """The two-stage answer: the BTL reward MLE on the same segment preferences (a convex fit of r
    itself, by BFGS on a loss written here), then soft value iteration; the policy (S, A)."""
    from scipy.optimize import minimize
    from scipy.special import expit, log_expit

    from theorylab.algorithms.planning.soft_value_iteration import soft_value_iteration
    from theorylab.mdps.tabular import TabularMDP

    R_star = M @ np.asarray(mdp.reward(0)).reshape(-1)
    p = expit(R_star[:, None] - R_star[None, :])
    W = w[:, None] * w[None, :]

    def loss(r):
        R = M @ r
        D = R[:, None] - R[None, :]
        G = W * (expit(D) - p)
        return float(-(W * p * log_expit(D)).sum()), M.T @ G.sum(1)  # G antisymmetric

    r = minimize(loss, np.zeros(M.shape[1]), jac=True, method="BFGS", options={"gtol": 1e-12}).x
    r = np.clip(r - r.min(), 0.0, 1.0)  # a constant shift (no policy changes) into [0, 1]
    fitted = TabularMDP(mdp.P, r.reshape(mdp.S, mdp.A), mdp.mu0, gamma=mdp.gamma)
    return soft_value_iteration(fitted, tau).policy


class IPLIdentity(ScaledClaim):
    def _run(self, cfg, seed, plot, rep):
        from theorylab.algorithms.planning.soft_value_iteration import soft_value_iteration
        from theorylab.algorithms.preference import ipl as I
        from theorylab.experiment import run
        from theorylab.mdps import make
        from theorylab.runners.problems import discounted_problem

        gaps, rerr, perr, pipe, rank, myopic, paths = [], [], [], [], [], [], {}
        for spec in cfg["mdps"]:
            mdp = discounted_problem(make(spec), "ipl")
            for tau in cfg["tau"]:
                for L in cfg["L"]:
                    Q, _, val, floor = I.fit_ipl(mdp, tau, L)
                    gaps.append(val - floor)
                    r = I.implied_reward(Q, mdp.P, mdp.gamma, tau)
                    rerr.append(float(np.ptp(r - mdp.reward(0))))
                    star = soft_value_iteration(mdp, tau).policy
                    pi = I.soft_values(Q, tau)[1]
                    perr.append(float(np.abs(pi - star).max()))
                    myopic.append(float(np.abs(I.soft_values(mdp.reward(0), tau)[1] - star).max()))
                    M, w = I.segments(mdp, L)
                    pipe.append(float(np.abs(_reward_model_pipeline(mdp, M, w, tau) - pi).max()))
                    Rs, Rq = M @ mdp.reward(0).reshape(-1), M @ r.reshape(-1)
                    dS, dQ = Rs[:, None] - Rs[None, :], Rq[:, None] - Rq[None, :]
                    strict = np.abs(dS) > 1e-6
                    rank.append(float(np.mean(np.sign(dS[strict]) == np.sign(dQ[strict]))))
            res = run("ipl", spec, iterations=cfg["iterations"], tau=cfg["tau"][0])
            paths[spec] = np.maximum(np.asarray(res.target_gap), 1e-16)
        n = len(gaps)
        rep.checks.append(
            Check(
                "ipl-reaches-the-preference-entropy",
                max(gaps) < 1e-9,
                f"IPL's population loss minus the true preferences' entropy (its minimum) <= "
                f"{max(gaps):.1e} on {n} (MDP, tau, L)",
            )
        )
        rep.checks.append(
            Check(
                "implied-reward-is-r-up-to-a-constant",
                max(rerr) < 1e-5 and min(rank) == 1.0,
                f"r_Q = Q - gamma P V_Q minus r*: spread <= {max(rerr):.1e} over all (s, a); the "
                f"implied segment returns order every strictly ordered pair as R* does "
                f"(agreement {min(rank):.6f})",
            )
        )
        final = max(float(p[-1]) for p in paths.values())
        rep.checks.append(
            Check(
                "ipl-policy-is-the-soft-optimum",
                max(perr) < 1e-6 and final < 1e-10,
                f"softmax(Q / tau) against soft value iteration's pi*_tau on r*: max difference "
                f"{max(perr):.1e} (< 1e-6); through tl.run('ipl') the last iterate's KL to pi*_tau "
                f"<= {final:.1e}; the myopic softmax(r* / tau) is {min(myopic):.3f} .. "
                f"{max(myopic):.3f} away",
            )
        )
        rep.checks.append(
            Check(
                "same-as-reward-model-then-rl",
                max(pipe) < 1e-6,
                f"the BTL reward MLE on the same segments followed by soft value iteration gives "
                f"IPL's policy to {max(pipe):.1e}",
            )
        )
        if plot:
            from theorylab.plotting import plot_regret

            ax = plot_regret(
                {k: v[None] for k, v in paths.items()},
                xlabel="L-BFGS iterate k of IPL's Q fit",
                ylabel="KL(pi_k || pi*_tau) (mean over states)",
                title=f"{self.name} [{rep.scale}]",
            )
            ax.set_yscale("log")
            save_claim_figure(ax, plot)


register_validation(
    IPLIdentity(
        name="ipl-inverse-bellman-identity",
        statement=(
            "IPL's Q-function fitted to population BTL segment preferences through the inverse "
            "soft Bellman operator r_Q = Q - gamma P V_Q implies the true reward up to a constant "
            "(it ranks segments as the true reward does), its softmax policy equals soft value "
            "iteration's soft optimum of the true reward, and it agrees with the two-stage "
            "reward-model-then-RL pipeline"
        ),
        scales={
            "quick": {
                "mdps": ["random:S=4,A=2,gamma=0.9,seed=0", "random:S=3,A=3,gamma=0.8,seed=1"],
                "tau": [0.5, 0.2],
                "L": [1, 2],
                "iterations": 60,
            },
            "full": {
                "mdps": [
                    "random:S=4,A=2,gamma=0.9,seed=0",
                    "random:S=3,A=3,gamma=0.8,seed=1",
                    "random:S=5,A=2,gamma=0.95,seed=2",
                    "random:S=4,A=3,gamma=0.7,seed=3",
                ],
                "tau": [0.5, 0.2, 1.0],
                "L": [1, 2],
                "iterations": 100,
            },
        },
    ),
    controls=("ipl-bellman-term-dropped",),
    papers=("000#21",),
)
