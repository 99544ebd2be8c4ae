r"""CGPO with a mixture of judges (seed 002-004#F8, tier B): a behaviour and identity claim.

``cgpo-judges-constrained-optimum`` -- on ``judged-bandit`` instances (K binary judges, one
reward-hacking response per prompt: the highest reward, flagged by one judge), the registered
``cgpo-moj`` (primal-dual over the judges' multipliers, exact expectations; card
docs/algorithms/cgpo.md), run through ``tl.run``:

* ``equals-exact-optimum``: its last iterate equals the constrained KL-regularised optimum that
  cvxpy finds from the primal program written out here (max E_rho[<pi, r> - beta KL(pi || ref)]
  s.t. E_rho <pi, c_j> <= eps_j; exponential cone, Clarabel): max |pi - pi_cvx| <= 1e-5, the
  regularised objectives agree to 1e-6 and each judge's multiplier equals cvxpy's dual value of
  its constraint to 1e-4 (relative, or 1e-6 absolute);
* ``every-judge-satisfied``: each judge's violation rate E_rho <pi, c_j> <= eps_j + 1e-9 at the
  last iterate, and binds (>= eps_j - 1e-6) where the multiplier is positive;
* ``converges``: the KL to the stated limit pi_{lambda*} is below 1e-10 at the last iterate;
* ``hack-suppressed``: the mass on the reward hacks is <= sum_j eps_j under CGPO (each judge
  catches the hacks of its own prompts);
* negative control (in the claim): plain RLHF (the Gibbs policy of r: no judges) through the
  every-judge test must FAIL it -- it reward-hacks. Registered mutation: ``cgpo-judges-ignored``
  (every multiplier frozen at 0, so the iteration is plain RLHF).
"""

from __future__ import annotations

import numpy as np

from theorylab.validations.claim import Check, ScaledClaim, save_claim_figure
from theorylab.validations.registry import register_validation


def _cvxpy_constrained(bandit) -> tuple[np.ndarray, float, np.ndarray]:
    """The constrained optimum from the primal program, written out: pi ``(S, A)``, objective,
    the constraints' dual values ``(K,)``."""
    import cvxpy as cp

    S, A = bandit.reward.shape
    pi = cp.Variable((S, A), nonneg=True)
    kl = cp.sum(cp.multiply(bandit.rho[:, None], cp.rel_entr(pi, bandit.ref)))
    obj = cp.sum(cp.multiply(bandit.rho[:, None] * bandit.reward, pi)) - bandit.beta * kl
    judges = [
        cp.sum(cp.multiply(bandit.rho[:, None] * bandit.flags[j], pi)) <= bandit.eps[j]
        for j in range(bandit.flags.shape[0])
    ]
    prob = cp.Problem(cp.Maximize(obj), [cp.sum(pi, axis=1) == 1, *judges])
    prob.solve(solver=cp.CLARABEL, tol_gap_abs=1e-10, tol_gap_rel=1e-10, tol_feas=1e-10)
    return np.asarray(pi.value), float(prob.value), np.array([float(c.dual_value) for c in judges])


class CGPOJudges(ScaledClaim):
    def _run(self, cfg, seed, plot, rep):
        from theorylab.experiment import run
        from theorylab.mdps import make

        rows, plain_ok, hack_plain = [], [], []
        ok_exact = ok_judges = ok_conv = ok_hack = True
        curves = {}
        for spec in cfg["bandits"]:
            bandit = make(spec)
            res = run("cgpo-moj", spec, iterations=cfg["iterations"])
            pi = np.exp(res.policies[-1])
            lam = np.asarray(res.config["multipliers"][-1])
            pi_c, val_c, dual_c = _cvxpy_constrained(bandit)
            d_pi = float(np.abs(pi - pi_c).max())
            d_val = abs(bandit.objective(pi) - val_c)
            d_lam = float(np.max(np.abs(lam - dual_c) / np.maximum(np.abs(dual_c), 1e-2)))
            ok_exact &= d_pi <= 1e-5 and d_val <= 1e-6 and d_lam <= 1e-4
            viol = np.einsum("s,sa,jsa->j", bandit.rho, pi, bandit.flags)
            binds = np.all(viol[lam > 1e-8] >= bandit.eps[lam > 1e-8] - 1e-6)
            ok_judges &= bool(np.all(viol <= bandit.eps + 1e-9) and binds)
            ok_conv &= float(res.target_gap[-1]) < 1e-10
            hack = float(bandit.rho @ pi[:, -1])
            ok_hack &= hack <= bandit.eps.sum() + 1e-9
            # plain RLHF: the Gibbs policy of r, written out
            z = np.log(bandit.ref) + bandit.reward / bandit.beta
            plain = np.exp(z - z.max(1, keepdims=True))
            plain /= plain.sum(1, keepdims=True)
            pv = np.einsum("s,sa,jsa->j", bandit.rho, plain, bandit.flags)
            plain_ok.append(bool(np.all(pv <= bandit.eps + 1e-9)))
            hack_plain.append(float(bandit.rho @ plain[:, -1]))
            rows.append(
                f"{spec}: |pi - cvx| {d_pi:.1e}, objective {d_val:.1e}, multipliers {d_lam:.1e}; "
                f"violations {np.round(viol, 6).tolist()} (eps {bandit.eps[0]}); hack mass "
                f"{hack:.4f} vs plain RLHF {hack_plain[-1]:.3f} (violations "
                f"{np.round(pv, 3).tolist()})"
            )
            curves[spec] = np.asarray(res.target_gap)
        detail = "; ".join(rows)
        rep.checks.append(Check("equals-exact-optimum", ok_exact, detail))
        rep.checks.append(
            Check(
                "every-judge-satisfied",
                ok_judges,
                "every judge's violation rate <= eps_j (+1e-9) at the last iterate, binding where "
                "its multiplier is positive",
            )
        )
        rep.checks.append(
            Check(
                "converges",
                ok_conv,
                "KL(pi_T || pi_{lambda*}) < 1e-10 on every instance: "
                + ", ".join(f"{v[-1]:.1e}" for v in curves.values()),
            )
        )
        rep.checks.append(
            Check(
                "hack-suppressed",
                ok_hack,
                "mass on the reward hacks <= sum_j eps_j under CGPO (each judge catches the hacks "
                "of its own prompts); plain RLHF puts "
                f"{np.round(hack_plain, 3).tolist()} on them",
            )
        )
        rep.checks.append(
            Check(
                "negative-control: plain RLHF (no judges) through the every-judge test",
                not any(plain_ok),
                f"satisfies every judge on {sum(plain_ok)} of {len(plain_ok)} instances "
                "(must FAIL the test)",
            )
        )
        if plot:
            import matplotlib.pyplot as plt

            fig, ax = plt.subplots(figsize=(6, 4))
            for spec, v in curves.items():
                ax.semilogy(np.maximum(v, 1e-17), label=spec)
            ax.set_xlabel("iteration")
            ax.set_ylabel("KL(pi_k || constrained optimum)")
            ax.set_title(f"{self.name} [{rep.scale}]")
            ax.legend(fontsize=7)
            save_claim_figure(ax, plot)


register_validation(
    CGPOJudges(
        name="cgpo-judges-constrained-optimum",
        statement=(
            "CGPO's primal-dual update over a mixture of judges converges to the exact "
            "constrained KL-regularised optimum (cvxpy), satisfies every judge's constraint and "
            "suppresses the reward hack that plain RLHF (no judges) takes"
        ),
        scales={
            "quick": {
                "bandits": ["judged-bandit", "judged-bandit:S=3,A=8,K=2,beta=0.5,seed=1"],
                "iterations": 3000,
            },
            "full": {
                "bandits": [
                    "judged-bandit",
                    "judged-bandit:S=3,A=8,K=2,beta=0.5,seed=1",
                    "judged-bandit:S=6,A=10,K=4,beta=0.1,eps=0.01,seed=2",
                    "judged-bandit:S=5,A=5,K=5,beta=1.0,eps=0.05,hack=3,seed=3",
                ],
                "iterations": 20000,
            },
        },
    ),
    controls=("cgpo-judges-ignored",),
    papers=("002-004#F8",),
)
