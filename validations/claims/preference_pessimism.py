"""Claims on the value-regularised preference optimisers VPO (offline, pessimism) and RPO on the
spurious-response instance ``spurious-coverage`` (a response the data seldom compare, no better than
a covered one), and XPO (online, optimism) on ``gshf-coverage`` (the reference gives the best
response a tiny mass), against independent answers. Cards docs/algorithms/vpo.md, rpo.md,
xpo-bandit.md; the controls ``pessimism-dropped`` (the plain MLE / DPO) and ``xpo-bonus-dropped``
(online DPO) are in validations/alignment_mutations.py.
"""

from __future__ import annotations

import numpy as np

from theorylab.validations.claim import Check, ScaledClaim, save_claim_figure
from theorylab.validations.registry import register_validation


def _sizes_run(name: str, cfg, seed: int, **params) -> np.ndarray:
    """Sub-optimality ``(B, M)`` of ``name`` on spurious-coverage with eps_n = c / n (the spurious
    response is compared Poisson(~2c) times whatever n), one fresh data set per n."""
    from theorylab.experiment import run

    cols = []
    for k, n in enumerate(cfg["n"]):
        res = run(
            name,
            f"spurious-coverage:eps={cfg['c'] / n}",
            dataset_size=n,
            design="reference",
            seeds=cfg["seeds"],
            seed=seed + k,
            **params,
        )
        cols.append(res.values[:, 0])
    return np.stack(cols, axis=1)


def _cvxpy_rewards(ref, cal, wins, beta: float, alpha: float, R: float) -> np.ndarray:
    """The pessimistic value-regularised MLE written out for cvxpy (an independent solver):
    min sum wins_ij log(1 + e^{-(r_i - r_j)}) + alpha (beta log sum ref e^{r / beta} - cal r)."""
    import cvxpy as cp

    A = len(ref)
    r = cp.Variable(A)
    i, j = np.nonzero(wins)
    nll = cp.sum(cp.multiply(wins[i, j], cp.logistic(-(r[i] - r[j]))))
    val = beta * cp.log_sum_exp(r / beta + np.log(ref)) - cal @ r
    prob = cp.Problem(cp.Minimize(nll + alpha * val), [r <= R, r >= -R, cp.sum(r) == 0])
    prob.solve(solver=cp.CLARABEL, tol_gap_abs=1e-11, tol_gap_rel=1e-11, tol_feas=1e-11)
    return np.asarray(r.value)


def _gibbs(ref, r, beta: float) -> np.ndarray:
    w = np.log(ref) + r / beta
    w = np.exp(w - w.max())
    return w / w.sum()


class VPOPessimism(ScaledClaim):
    def _run(self, cfg, seed, plot, rep):
        from theorylab.algorithms.preference import vpo
        from theorylab.mdps.kl_bandit import sample_reference_pairs, spurious_coverage
        from theorylab.stats import loglog_slope

        n = np.asarray(cfg["n"], float)
        sub = _sizes_run("vpo-offline", cfg, seed, alpha=cfg["alpha"])
        fit = loglog_slope(n, sub, fit_range=(0.0, 1.0))
        rep.slope, rep.slope_ci = fit.slope, (fit.ci_low, fit.ci_high)
        rep.checks.append(
            Check(
                "suboptimality-falls-like-n^-1/2",
                fit.ci_high <= -0.5,
                f"VPO (alpha_n = {cfg['alpha']} / sqrt(n)) mean KL-regularised sub-optimality "
                f"{np.round(sub.mean(0), 5).tolist()} at n = {cfg['n']} ({cfg['seeds']} seeds, "
                f"eps_n = {cfg['c']}/n); log-log slope {fit.slope:.3f} "
                f"[{fit.ci_low:.3f}, {fit.ci_high:.3f}], upper end <= -0.5",
            )
        )
        worst = float(sub.max())
        rep.checks.append(
            Check(
                "spurious-response-not-chosen",
                worst <= cfg["spurious_floor"],
                f"largest sub-optimality over seeds and n {worst:.4f} <= {cfg['spurious_floor']} "
                "(playing the spurious response costs more than 1 on this instance)",
            )
        )
        # independent answer: the same convex objective solved by cvxpy, and the sub-optimality
        # identity J(pi*) - J(pi) = beta KL(pi || pi*) written out
        n0 = int(cfg["n"][0])
        bandit = spurious_coverage(eps=cfg["c"] / n0)
        data = sample_reference_pairs(bandit, n0, seeds=cfg["check_seeds"], seed=seed)
        beta, ref = bandit.eta, bandit.ref[0]
        a = cfg["alpha"] / np.sqrt(n0)
        fit_b = vpo.vpo_offline(bandit, data, alpha=cfg["alpha"])
        perr, ierr = 0.0, 0.0
        pstar = _gibbs(ref, bandit.rewards[0], beta)
        for b in range(data.n_seeds):
            w = vpo.wins_matrix(data, b, 0, bandit.A)
            rc = _cvxpy_rewards(ref, ref, w, beta, a, cfg["R"])
            perr = max(perr, float(np.abs(_gibbs(ref, rc, beta) - fit_b.policy[b, 0]).max()))
            p = fit_b.policy[b, 0]
            kl = float(np.sum(p * np.log(p / pstar)))
            ierr = max(ierr, abs(beta * kl - fit_b.suboptimality[b]))
        rep.checks.append(
            Check(
                "matches-independent-solver",
                perr < cfg["tol"] and ierr < 1e-10,
                f"at n = {n0}, {data.n_seeds} data sets: VPO's policy against cvxpy's solution "
                f"of the objective written out, max difference {perr:.1e} (< {cfg['tol']}); "
                f"sub-optimality against beta KL(pi || pi*) to {ierr:.1e}",
            )
        )
        if plot:
            from theorylab.plotting import plot_regret

            ax = plot_regret(
                {"VPO offline": sub}, x=n, xlabel="comparisons n",
                ylabel="KL-regularised sub-optimality", title=f"{self.name} [{rep.scale}]",
            )  # fmt: skip
            ax.set_xscale("log")
            ax.set_yscale("log")
            save_claim_figure(ax, plot)


register_validation(
    VPOPessimism(
        name="vpo-offline-pessimism",
        statement=(
            "Offline VPO (the reward MLE regularised by minus its calibrated value, alpha / "
            "sqrt(n)) never plays a seldom-compared spurious response and its KL-regularised "
            "sub-optimality falls at least like n^(-1/2), while the plain MLE's (DPO's) does not "
            "fall; VPO's fit equals an independent cvxpy solve of the same objective"
        ),
        scales={
            "quick": {
                "n": [100, 400, 1600],
                "c": 1.0,
                "seeds": 24,
                "alpha": 1.0,
                "R": 4.0,
                "spurious_floor": 0.5,
                "check_seeds": 3,
                "tol": 1e-5,
            },
            "full": {
                "n": [100, 400, 1600, 6400, 25600],
                "c": 1.0,
                "seeds": 96,
                "alpha": 1.0,
                "R": 4.0,
                "spurious_floor": 0.5,
                "check_seeds": 12,
                "tol": 1e-5,
            },
        },
    ),
    controls=("pessimism-dropped",),
    papers=("002-004#E7",),
)


def _maxmin_policy(ref, base, wins, beta: float, eta: float, R: float) -> np.ndarray:
    """max over pi of min over r in [-R, R]^A of L(r) + eta (E_pi r - E_base r - beta KL(pi||ref)):
    the inner minimisation by cvxpy, the outer (concave in pi) by Nelder-Mead over the logits."""
    import cvxpy as cp
    from scipy.optimize import minimize

    A = len(ref)
    r = cp.Variable(A)
    lin = cp.Parameter(A)
    i, j = np.nonzero(wins)
    nll = cp.sum(cp.multiply(wins[i, j], cp.logistic(-(r[i] - r[j]))))
    prob = cp.Problem(cp.Minimize(nll + lin @ r), [r <= R, r >= -R])

    def neg_g(z):
        pi = np.exp(np.append(z, 0.0) - np.append(z, 0.0).max())
        pi /= pi.sum()
        lin.value = eta * (pi - base)
        prob.solve(solver=cp.CLARABEL)
        kl = float(np.sum(pi * np.log(pi / ref)))
        return -(prob.value - eta * beta * kl)

    z0 = np.log(ref[:-1] / ref[-1])
    res = minimize(neg_g, z0, method="Nelder-Mead", options={"xatol": 1e-9, "fatol": 1e-13})
    z = np.append(res.x, 0.0)
    pi = np.exp(z - z.max())
    return pi / pi.sum()


def _torch_rpo_policy(ref, base, wins, beta: float, eta: float) -> np.ndarray:
    """argmin over the logits of the registered torch ``rpo`` loss with exact weights (every
    ordered pair weighted by its share of wins, the baseline enumerated with its probabilities)."""
    import torch

    from theorylab.algorithms.deep.registry import make_loss

    loss_fn = make_loss("rpo", beta=beta, eta=eta)
    i, j = np.nonzero(wins)
    lref = torch.tensor(np.log(ref), dtype=torch.float64)
    w = torch.tensor(wins[i, j], dtype=torch.float64)
    bw = torch.tensor(base, dtype=torch.float64)
    z = torch.zeros(len(ref), dtype=torch.float64, requires_grad=True)
    opt = torch.optim.LBFGS([z], lr=1.0, max_iter=2000, tolerance_grad=1e-13,
                            tolerance_change=1e-16, line_search_fn="strong_wolfe")  # fmt: skip

    def closure():
        opt.zero_grad()
        logp = torch.log_softmax(lref + z, 0)
        out = loss_fn(logp[i], logp[j], lref[i], lref[j], logp, w, bw)
        out.backward()
        return out

    for _ in range(5):
        opt.step(closure)
    return torch.softmax(lref + z, 0).detach().numpy()


class RPOMaxMin(ScaledClaim):
    def _run(self, cfg, seed, plot, rep):
        from theorylab.algorithms.preference import rpo, vpo
        from theorylab.mdps.kl_bandit import sample_reference_pairs, spurious_coverage

        eta, R = cfg["eta"], cfg["R"]
        n0 = int(cfg["check_n"])
        bandit = spurious_coverage(eps=cfg["c"] / n0)
        beta, ref = bandit.eta, bandit.ref[0]
        data = sample_reference_pairs(bandit, n0, seeds=cfg["check_seeds"], seed=seed)
        fit = rpo.rpo_offline(bandit, data, eta=eta, R=R)
        mm_err, t_err, t_cases = 0.0, 0.0, 0
        for b in range(data.n_seeds):
            w = vpo.wins_matrix(data, b, 0, bandit.A)
            base = vpo.calibration("chosen", ref, w)
            pm = _maxmin_policy(ref, base, w, beta, eta, R)
            mm_err = max(mm_err, float(np.abs(pm - fit.policy[b, 0]).max()))
            if np.abs(fit.rewards[b, 0]).max() < R - 1e-6:  # interior: the policy form applies
                pt = _torch_rpo_policy(ref, base, w, beta, eta)
                t_err = max(t_err, float(np.abs(pt - fit.policy[b, 0]).max()))
                t_cases += 1
        rep.checks.append(
            Check(
                "maxmin-equals-rpo-minimiser",
                mm_err < cfg["tol"] and t_err < cfg["tol"] and t_cases > 0,
                f"{data.n_seeds} data sets at n = {n0}: the max-min policy solved directly "
                f"(cvxpy inner, Nelder-Mead outer) against rpo-offline, max difference "
                f"{mm_err:.1e}; the registered torch rpo loss (DPO + eta beta SFT) minimised "
                f"exactly on the {t_cases} interior cases, max difference {t_err:.1e} "
                f"(both < {cfg['tol']})",
            )
        )
        sub = _sizes_run("rpo-offline", cfg, seed, eta=eta, R=R)
        worst = float(sub.max())
        rep.checks.append(
            Check(
                "no-overoptimisation",
                worst <= cfg["spurious_floor"] and sub[:, -1].mean() < sub[:, 0].mean(),
                f"RPO (eta = {eta}) sub-optimality over {cfg['seeds']} seeds at n = {cfg['n']}: "
                f"mean {np.round(sub.mean(0), 5).tolist()} (falls), largest {worst:.4f} <= "
                f"{cfg['spurious_floor']} (the spurious response is never promoted)",
            )
        )
        if plot:
            from theorylab.plotting import plot_regret

            ax = plot_regret(
                {"RPO": sub}, x=np.asarray(cfg["n"], float), xlabel="comparisons n",
                ylabel="KL-regularised sub-optimality", title=f"{self.name} [{rep.scale}]",
            )  # fmt: skip
            ax.set_xscale("log")
            save_claim_figure(ax, plot)


register_validation(
    RPOMaxMin(
        name="rpo-maxmin-equivalence",
        statement=(
            "RPO's DPO + SFT minimiser is the max-min policy against an adversarial reward (MLE "
            "loss + eta times the reward penalty): an independent max-min solve and the torch rpo "
            "loss agree with it; it never promotes a seldom-compared spurious response, which "
            "DPO (eta = 0) over-optimises"
        ),
        scales={
            "quick": {
                "eta": 0.3,
                "R": 4.0,
                "c": 1.0,
                "check_n": 100,
                "check_seeds": 2,
                "tol": 1e-4,
                "n": [100, 400, 1600],
                "seeds": 16,
                "spurious_floor": 0.5,
            },
            "full": {
                "eta": 0.3,
                "R": 4.0,
                "c": 1.0,
                "check_n": 100,
                "check_seeds": 12,
                "tol": 1e-4,
                "n": [100, 400, 1600, 6400, 25600],
                "seeds": 96,
                "spurious_floor": 0.5,
            },
        },
    ),
    controls=("pessimism-dropped",),
    papers=("002-004#E8",),
)


def _torch_xpo_gradient(ref, m, wins, beta: float, alpha: float, policy) -> np.ndarray:
    """The gradient in the logits of the registered torch ``xpo`` loss (every ordered pair weighted
    by its share of wins, the reference draws enumerated with their shares ``m``) at ``policy``."""
    import torch

    from theorylab.algorithms.deep.registry import make_loss

    loss_fn = make_loss("xpo", beta=beta, alpha=alpha)
    i, j = np.nonzero(wins)
    lref = torch.tensor(np.log(ref), dtype=torch.float64)
    z = torch.tensor(np.log(policy) - np.log(ref), dtype=torch.float64, requires_grad=True)
    logp = torch.log_softmax(lref + z, 0)
    w = torch.tensor(wins[i, j], dtype=torch.float64)
    out = loss_fn(logp[i], logp[j], lref[i], lref[j], logp, w, torch.tensor(m))
    out.backward()
    return z.grad.numpy()


class XPOExplores(ScaledClaim):
    def _run(self, cfg, seed, plot, rep):
        from theorylab.experiment import run
        from theorylab.mdps import make

        prob, n = cfg["problem"], np.asarray(cfg["n"], float)
        kw = dict(dataset_size=cfg["n"], seeds=cfg["seeds"], seed=seed, batch=cfg["batch"])
        res = run("xpo-bandit", prob, alpha=cfg["alpha"], **kw)
        sub = res.values  # (B, M)
        worst = float(sub[:, -1].max())
        rep.checks.append(
            Check(
                "xpo-reaches-pi*",
                worst <= cfg["max_sub"] and sub[:, -1].mean() < sub[:, 0].mean(),
                f"XPO (alpha = {cfg['alpha']}) on {prob} (the reference gives the best response "
                f"1e-5): mean KL-regularised sub-optimality {np.round(sub.mean(0), 5).tolist()} "
                f"at n = {cfg['n']} ({cfg['seeds']} seeds), every seed <= {cfg['max_sub']} at the "
                f"largest n (worst {worst:.4f})",
            )
        )
        # independent answer: the registered torch xpo loss is stationary at XPO's final policy
        from theorylab.algorithms.preference import vpo, xpo
        from theorylab.mdps.preference import sample_pairwise

        bandit = make(prob)
        beta = bandit.eta
        data = sample_pairwise(bandit, 400, seeds=1, seed=seed)  # a0 plays the y~ draws
        r = xpo.xpo_rewards(bandit, data, cfg["alpha"], 5.0, np.zeros((1, bandit.A)))
        m = np.bincount(data.a0[0], minlength=bandit.A) / data.n
        w = vpo.wins_matrix(data, 0, 0, bandit.A)
        cal, wt = m / m.sum(), cfg["alpha"] / beta  # the reward form of the bonus
        rng = np.random.default_rng(seed)
        gerr = 0.0
        for x in (r[0], *rng.normal(size=(3, bandit.A))):  # the solution and random rewards
            gz = _torch_xpo_gradient(bandit.ref[0], m, w, beta, cfg["alpha"], bandit.gibbs(x)[0])
            g = vpo.regularised_objective(x, bandit.ref[0], cal, w, beta, wt, +1)[1]
            gerr = max(gerr, float(np.abs(gz - beta * (g - g.mean())).max()))
        g = vpo.regularised_objective(r[0], bandit.ref[0], cal, w, beta, wt, +1)[1]
        held = ((r[0] <= -5.0) & (g > 0)) | ((r[0] >= 5.0) & (g < 0))
        gn = float(np.abs(g[~held]).max())
        rep.checks.append(
            Check(
                "round-solves-the-torch-xpo-loss",
                gerr < 1e-10 and gn < 1e-7,
                f"on 400 uniformly drawn comparisons (a0 as the y~ draws): the registered torch "
                f"xpo loss's logit gradient (autograd, policy form) equals beta times the reward-"
                f"form gradient of the round's objective to {gerr:.1e} at the solution and three "
                f"random rewards, and the round's solution is stationary on its free coordinates "
                f"({gn:.1e} < 1e-7; {int(held.sum())} held at the box)",
            )
        )
        if plot:
            from theorylab.plotting import plot_regret

            dpo = run("xpo-bandit", prob, alpha=0.0, **kw).values
            ax = plot_regret(
                {"XPO": sub, "online DPO (alpha = 0)": dpo}, x=n, xlabel="comparisons n",
                ylabel="KL-regularised sub-optimality", title=f"{self.name} [{rep.scale}]",
            )  # fmt: skip
            ax.set_xscale("log")
            save_claim_figure(ax, plot)


register_validation(
    XPOExplores(
        name="xpo-explores",
        statement=(
            "Online, when the reference policy gives the best response a tiny mass, XPO (online "
            "DPO + alpha E_{y~ref}[log pi(y)]) reaches near pi* in every seed while online DPO "
            "without the bonus stalls on the reference's responses; XPO's round solution is a "
            "stationary point of its objective, whose gradient is the registered torch xpo loss's"
        ),
        scales={
            "quick": {
                "problem": "gshf-coverage:S=1,eps=0.00001,gap=4,eta=0.25",
                "n": [200, 1600],
                "seeds": 6,
                "batch": 40,
                "alpha": 0.002,
                "max_sub": 0.05,
            },
            "full": {
                "problem": "gshf-coverage:S=1,eps=0.00001,gap=4,eta=0.25",
                "n": [200, 800, 3200, 6400],
                "seeds": 16,
                "batch": 40,
                "alpha": 0.002,
                "max_sub": 0.05,
            },
        },
    ),
    controls=("xpo-bonus-dropped",),
    papers=("001#52",),
)
