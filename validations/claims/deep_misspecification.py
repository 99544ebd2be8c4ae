"""Claims about LLM-alignment losses when the policy class cannot represent pi*: EXO (000#11,
issue 28) against DPO on a finite-response bandit, each population minimiser found from the
registered loss's exact expectation and compared with the reverse-KL projection computed
independently (scipy on the closed-form KL). Control: the registered mutation ``exo-forward-kl``."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from theorylab.validations.claim import Check, Report
from theorylab.validations.claim import finished_report as _report
from theorylab.validations.claims.deep import register_validation


@dataclass(frozen=True)
class ExoMisspecified:
    name: str = "exo-misspecified-reverse-kl"
    statement: str = (
        "EXO (Ji et al. 2024) under misspecification: on a 4-response bandit (uniform reference, "
        "rewards 2, 0, 0, 1.7, beta 0.5: pi*_beta bimodal) with the log-linear class pi_theta ∝ "
        "ref exp(theta (y - 1.5) / 1.5) (monotone in y: pi* is not in it, min_theta KL(pi_theta "
        "|| pi*) >= 0.1), the minimiser of the exact expectation of the registered exo loss over K "
        "i.i.d. reference responses (every K-tuple; L-BFGS from 3 starts) moves with K to the "
        "reverse-KL projection argmin KL(pi_theta || pi*) found by scipy on the closed form: its "
        "KL(pi_theta || pi*) falls strictly in K (quick K = 2, 4, 6; full 2, 4, 6, 8) to within "
        "10% (quick) / 2% (full) of the projection's. The population minimiser of the registered "
        "dpo loss (every ordered pair, Bradley-Terry labels) is not mode-seeking: its reverse KL "
        "is >= 2x the projection's and >= 2x EXO's at the largest K, while its forward KL(pi* || "
        "pi_theta) is below EXO's (mass-covering). Since KL(pi || pi*) = (J_beta(pi*) - "
        "J_beta(pi)) / beta (checked to 1e-12 with J_beta written out), EXO's solution has the "
        "higher KL-regularised return. Control: EXO with the forward KL (DPO's direction) fails."
    )
    beta: float = 0.5
    scales: dict[str, tuple[tuple[int, ...], float]] = field(
        default_factory=lambda: {"quick": ((2, 4, 6), 0.10), "full": ((2, 4, 6, 8), 0.02)}
    )

    def run(self, scale="quick", *, plot=None, progress=False, seed=0) -> Report:
        import torch

        threads = torch.get_num_threads()
        torch.set_num_threads(1)  # tiny problems: one thread is the fastest
        try:
            return self._run(scale, plot)
        finally:
            torch.set_num_threads(threads)

    def _run(self, scale, plot) -> Report:
        from theorylab.algorithms.deep import exo

        t0 = time.perf_counter()
        Ks, slack = self.scales[scale]
        beta = self.beta
        log_ref, r, phi = exo.misspecified_bandit()
        d = phi.shape[1]
        log_star = log_ref + r / beta
        log_star = log_star - np.log(np.exp(log_star).sum())

        def reverse(th):
            lp = exo.log_linear(np.asarray(th), log_ref, phi)
            return float(np.exp(lp) @ (lp - log_star))

        def forward(th):
            lp = exo.log_linear(np.asarray(th), log_ref, phi)
            return float(np.exp(log_star) @ (log_star - lp))

        def j_beta(lp):  # E_pi r - beta KL(pi || ref), written out
            p = np.exp(lp)
            return float(p @ r - beta * (p @ (lp - log_ref)))

        proj = exo.reverse_kl_projection(log_ref, r, phi, beta)
        thetas = {"projection": proj}
        thetas["dpo"] = exo.fit_log_linear(exo.dpo_bandit_objective(log_ref, r, phi, beta), d)
        for K in Ks:
            obj = exo.exo_bandit_objective(log_ref, r, phi, K, beta)
            thetas[f"exo K={K}"] = exo.fit_log_linear(obj, d)
        rkl = {k: reverse(t) for k, t in thetas.items()}
        fkl = {k: forward(t) for k, t in thetas.items()}
        j_star = j_beta(log_star)
        identity = max(
            abs((j_star - j_beta(exo.log_linear(t, log_ref, phi))) / beta - rkl[k])
            for k, t in thetas.items()
        )
        exo_r = [rkl[f"exo K={K}"] for K in Ks]
        last = f"exo K={Ks[-1]}"
        falling = all(b < a for a, b in zip(exo_r, exo_r[1:], strict=False))
        near = rkl[last] <= (1 + slack) * rkl["projection"]

        checks = [
            Check(
                "the class is misspecified (pi* not in it)",
                rkl["projection"] >= 0.1,
                f"min_theta KL(pi_theta || pi*) = {rkl['projection']:.4f} >= 0.1 "
                f"(theta {proj[0]:.3f})",
                {"min_kl": rkl["projection"]},
            ),
            Check(
                "EXO's minimiser -> the reverse-KL projection as K grows",
                falling and near,
                "KL(pi_exo || pi*) "
                + ", ".join(f"K={K}: {v:.4f}" for K, v in zip(Ks, exo_r, strict=True))  # fmt: skip
                + f" ({'falling' if falling else 'not falling'}); largest K "
                f"{rkl[last] / rkl['projection']:.3f}x the projection's (<= {1 + slack:g})",
                {"reverse_kl": rkl, "theta": {k: float(t[0]) for k, t in thetas.items()}},
            ),
            Check(
                "DPO's minimiser is not mode-seeking: reverse KL >= 2x, forward KL lower",
                rkl["dpo"] >= 2 * rkl["projection"]
                and rkl["dpo"] >= 2 * rkl[last]
                and fkl["dpo"] < fkl[last],
                f"KL(pi_dpo || pi*) {rkl['dpo']:.4f} vs projection {rkl['projection']:.4f}, EXO "
                f"{rkl[last]:.4f}; KL(pi* || pi) DPO {fkl['dpo']:.4f} < EXO {fkl[last]:.4f}",
                {"forward_kl": fkl},
            ),
            Check(
                "KL(pi || pi*) = (J_beta(pi*) - J_beta(pi)) / beta (EXO's higher return)",
                identity <= 1e-12,
                f"max gap {identity:.1e} <= 1e-12; J_beta: EXO (K={Ks[-1]}) "
                f"{j_star - beta * rkl[last]:.4f}, DPO {j_star - beta * rkl['dpo']:.4f}, "
                f"pi* {j_star:.4f}",
                {"gap": identity},
            ),
        ]
        figure = None
        if plot:
            from theorylab.plotting import plot_lines

            plot_lines(
                list(Ks),
                {"EXO minimiser": np.array(exo_r),
                 "reverse-KL projection": np.full(len(Ks), rkl["projection"]),
                 "DPO minimiser": np.full(len(Ks), rkl["dpo"])},
                xlabel="K (reference responses per prompt)", ylabel="KL(pi_theta || pi*)",
                title=f"{self.name} ({scale})", path=plot,
            )  # fmt: skip
            figure = plot
        cfg = {"Ks": list(Ks), "slack": slack, "beta": beta}
        return _report(self.name, self.statement, scale, checks, t0, cfg, figure)


register_validation(ExoMisspecified(), controls=("exo-forward-kl",), papers=("000#11",))
