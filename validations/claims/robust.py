"""Claims of the robust-MDP family (seed-coverage family 4).

1. ``iwocs-static-maxmin`` -- Zouitine, Geist & Rachelson 2024 (seed row 002-004#D1), on
   finite sets of whole kernels around random discounted MDPs: (i) IWOCS (``iwocs`` through
   ``tl.run``) terminates within m worst-case searches; (ii) its policy's worst-case value over
   the full set equals the brute-force max-min over the A^S deterministic policies x the m
   kernels (to 1e-10); (iii) the static robust value is >= the dynamic one (robust VI over the
   set's rectangular hull), strictly on some non-rectangular sets, and equal (to 1e-9) on the
   (s, a)-rectangular product sets. Negative control: ``iwocs-adds-best-case-model`` (the
   worst-case search returns the best model for the policy), which stops IWOCS early.
2. ``dr-rpo-robust-regularised-optimum`` -- Gu, He, Liu & Xu 2025 (seed rows 000#22, 001#49),
   the exact-model core of DR-RPO on the tabular (one-hot) d-rectangular TV set: rho = 0 is
   regularised PO (the soft-VI optimum); rho > 0 reaches the robust soft optimum (scored by the
   planning floor); the robust policy beats the nominal one under the nominal's worst kernel;
   regret / sqrt(K) non-increasing. Negative control: ``dr-rpo-nominal-q``.
3. ``substate-dp-safe-tie-breaking`` -- Achab & Neu (seed row 000#73), a reconstructed
   worst/best-substate operator: worst <= mean <= best with the mean exact, the worst substate
   an LP robust minimum, coincidence on deterministic MDPs, and safe tie-breaking choosing the
   zero-variance optimal action on gamble MDPs. Negative control: ``substate-safe-breaks-by-best``.
4. ``tc-rmdp-value-ordering`` -- time-constrained robust MDPs (seed row 000#50, tier B):
   rectangular <= TC <= nominal, monotone in the step bound, both limits recovered. Negative
   control: ``tc-adversary-unconstrained``.
5. ``nondominated-exp3-regret`` -- Liu, Deng, Sun, Liang & Huang 2024 (seed row 002-004#D3): the
   LP filter of non-dominated policies over observation attacks keeps a best policy for every
   attack mixture (against brute force) and drops only dominated ones; EXP3 over the kept set has
   regret <= 2 sqrt(e - 1) sqrt(T K ln K) (Auer et al. 2002, Cor. 3.2), growing like sqrt(T).
   Negative controls: ``nondominated-drops-a-vertex``, ``exp3-plays-uniform``.
6. ``policy-smoothing-certificate`` -- Kumar, Levine & Feizi 2022 (seed row 002-004#D2): the
   Gaussian-smoothing certificate on a combination lock holds under attack over many Monte-Carlo
   seeds (exact attacked probabilities), shrinks with B, grows with sigma, VACUOUS at sigma -> 0.
   Negative control: ``smoothing-budget-over-sqrt-horizon``.
7. ``hinf-lq-matches-analytic`` -- H-infinity control as a zero-sum LQ game (seed row 002-004#D4,
   tier B): the actor-disturber iteration's gains = scipy's game Riccati solution, the saddle
   value = a rollout sum, the ratio constraint met where LQR fails it, gamma -> inf gives LQR,
   no solution below gamma*. Negative control: ``hinf-disturber-sign-flipped``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from theorylab.validations.claim import Check, ScaledClaim, save_claim_figure
from theorylab.validations.registry import register_validation


def _discounted(spec: str):
    from theorylab.mdps import make

    mdp = make(spec)
    return mdp.with_objective(gamma=mdp.gamma, horizon=None)


@dataclass(frozen=True)
class IWOCSStaticMaxmin(ScaledClaim):
    name: str = "iwocs-static-maxmin"
    statement: str = (
        "IWOCS (Zouitine, Geist & Rachelson 2024), exact tabular form: on a finite set of m "
        "kernels (the nominal and m - 1 mixtures (1 - 0.6) P + 0.6 Q, Q Dirichlet(1) rows) of "
        "random discounted MDPs (gamma = 0.9), IWOCS through tl.run terminates within m "
        "worst-case searches and its policy's worst-case value equals the brute-force max-min "
        "over deterministic policies x kernels to 1e-10; the static robust value is >= the "
        "dynamic (rectangular-hull robust VI) value on every set, strictly on some, and equal to "
        "1e-9 on (s, a)-rectangular product sets (2 rows per (s, a), 2^(S A) kernels). Quick: 12 "
        "MDPs S = 4, A = 2, m = 8, rectangular S = 3, A = 2 (64 kernels); full: 40 MDPs S = 5, "
        "A = 2, m = 12, rectangular S = 4, A = 2 (256 kernels)."
    )
    scales: dict[str, dict[str, Any]] = field(
        default_factory=lambda: {
            "quick": {"mdps": 12, "S": 4, "A": 2, "m": 8, "rect_S": 3},
            "full": {"mdps": 40, "S": 5, "A": 2, "m": 12, "rect_S": 4},
        }
    )
    spread: float = 0.6

    def _run(self, cfg: dict, seed: int, plot: str | None, rep) -> None:
        import theorylab as tl
        from theorylab.algorithms.robust import finite_sets as F

        rounds_ok, gaps, static_minus_dynamic, rect_gaps, curves = True, [], [], [], {}
        rounds, reported = [], []
        for i in range(cfg["mdps"]):
            spec = f"random:S={cfg['S']},A={cfg['A']},gamma=0.9,seed={seed + i}"
            mdp = _discounted(spec)
            res = tl.run(
                "iwocs", spec, iterations=cfg["m"], models=cfg["m"], spread=self.spread,
                kernel_seed=seed + i,
            )  # fmt: skip
            models = F.perturbed_models(mdp, cfg["m"], self.spread, seed + i)
            maxmin, _ = F.brute_force_maxmin(mdp, models)  # independent: enumeration
            worst = F.static_values(mdp, models, np.asarray(res.policies[-1])[None])[0].min()
            n = int(res.objective.size)
            rounds.append(n)
            rounds_ok &= bool(res.config["terminated"]) and n <= cfg["m"]
            gaps.append(abs(float(worst) - maxmin))
            reported.append(abs(float(res.objective[-1]) - float(worst)))
            V_dyn, _ = F.dynamic_robust_vi(mdp, models)
            static_minus_dynamic.append(maxmin - float(V_dyn @ mdp.mu0))
            if i < 3:
                curves[f"MDP {i}: worst-case value of pi_k - max-min"] = (
                    np.abs(res.objective - maxmin) + 1e-16
                )
            rect_mdp = _discounted(
                f"random:S={cfg['rect_S']},A={cfg['A']},gamma=0.9,seed={seed + i}"
            )
            rect = F.rectangular_product(F.perturbed_models(rect_mdp, 2, self.spread, seed + i))
            static, _ = F.brute_force_maxmin(rect_mdp, rect)
            V_rect, _ = F.dynamic_robust_vi(rect_mdp, rect)
            rect_gaps.append(abs(static - float(V_rect @ rect_mdp.mu0)))
        smd = np.array(static_minus_dynamic)
        rep.checks.extend(
            [
                Check(
                    "IWOCS terminates within m worst-case searches",
                    rounds_ok,
                    f"searches per MDP {rounds} (m = {cfg['m']}); all terminated: {rounds_ok}",
                    {"max_rounds": max(rounds)},
                ),
                Check(
                    "IWOCS's worst-case value = brute-force max-min",
                    max(gaps) <= 1e-10,
                    f"max |min_i V^pi_IWOCS_{{P_i}} - max_pi min_i V^pi_{{P_i}}| = "
                    f"{max(gaps):.2e} over {cfg['mdps']} MDPs (tolerance 1e-10)",
                    {"max_gap": max(gaps)},
                ),
                Check(
                    "IWOCS's reported worst-case value is the independent one",
                    max(reported) <= 1e-10,
                    f"max |reported - min_i V^pi_{{P_i}}| = {max(reported):.2e} (tolerance 1e-10)",
                    {"max_reported_error": max(reported)},
                ),
                Check(
                    "static >= dynamic, strictly on some non-rectangular set",
                    bool(np.all(smd >= -1e-10) and np.max(smd) > 1e-3),
                    f"static - dynamic in [{smd.min():.3e}, {smd.max():.3e}] over "
                    f"{cfg['mdps']} sets",
                    {"min_static_minus_dynamic": float(smd.min())},
                ),
                Check(
                    "static = dynamic on (s, a)-rectangular sets",
                    max(rect_gaps) <= 1e-9,
                    f"max |static - dynamic| = {max(rect_gaps):.2e} over {cfg['mdps']} product "
                    f"sets of {2 ** (cfg['rect_S'] * cfg['A'])} kernels (tolerance 1e-9)",
                    {"max_rect_gap": max(rect_gaps)},
                ),
            ]
        )
        if plot:
            from theorylab.plotting import plot_policy_path

            ax = plot_policy_path(
                curves,
                ylabel="|worst-case value - brute-force max-min| (+1e-16)",
                title="IWOCS: worst-case value of each iterate against the max-min",
                logy=True,
            )
            save_claim_figure(ax, plot)


register_validation(
    IWOCSStaticMaxmin(), controls=("iwocs-adds-best-case-model",), papers=("002-004#D1",)
)


def _regularised_reward(mdp, pi: np.ndarray, beta: float) -> np.ndarray:
    """r - beta log(pi / ref) (S, A) with the uniform reference."""
    with np.errstate(divide="ignore"):
        log_pi = np.where(pi > 0, np.log(np.where(pi > 0, pi, 1.0)), 0.0)
    return mdp.reward(0) - beta * (log_pi + np.log(mdp.A))


@dataclass(frozen=True)
class DRRPORobustRegularisedOptimum(ScaledClaim):
    name: str = "dr-rpo-robust-regularised-optimum"
    statement: str = (
        "DR-RPO's exact core (Gu, He, Liu & Xu 2025; dr-rpo through tl.run: KL mirror ascent "
        "with a uniform reference, beta = 0.05, eta = 200, on the (s, a)-rectangular TV set of "
        "one-hot features, rho = 0.3): (i) at rho = 0 its last iterate is the library's soft-VI "
        "optimum (max_s KL <= 1e-10, values to 1e-9), i.e. regularised PO; (ii) at rho = 0.3 "
        "its regularised robust return, scored by the planning floor's robust policy evaluation "
        "(not the learner's), equals the robust soft optimum to 1e-9; (iii) under the worst "
        "kernel of the rho = 0 (nominal) policy, the robust policy's regularised return is >= "
        "the nominal policy's on every MDP and > it by 0.01 on some; (iv) the exact-evaluation "
        "regret sum_k (J* - J(pi_k)), each J by the floor, has regret/sqrt(K) non-increasing "
        "over K = K/8, K/4, K/2, K. Quick: riverswim S = 6 and 3 random MDPs (S = 5, A = 3), "
        "gamma = 0.9, K = 16; full: riverswim S = 6, 8 and 12 random MDPs, K = 64."
    )
    scales: dict[str, dict[str, Any]] = field(
        default_factory=lambda: {
            "quick": {"rivers": (6,), "random": 3, "K": 16},
            "full": {"rivers": (6, 8), "random": 12, "K": 64},
        }
    )
    beta: float = 0.05
    eta: float = 200.0
    rho: float = 0.3

    def _run(self, cfg: dict, seed: int, plot: str | None, rep) -> None:
        import theorylab as tl
        from theorylab.algorithms.planning import robust as R
        from theorylab.algorithms.planning.soft_value_iteration import soft_value_iteration

        specs = [f"riverswim:S={n},gamma=0.9" for n in cfg["rivers"]] + [
            f"random:S=5,A=3,gamma=0.9,seed={seed + i}" for i in range(cfg["random"])
        ]
        K, beta = cfg["K"], self.beta
        nominal_kl, nominal_value, robust_gap, edge, ratios_ok = 0.0, 0.0, 0.0, [], True
        curves = {}
        for spec in specs:
            mdp = _discounted(spec)
            nom = tl.run("dr-rpo", spec, iterations=K, rho=0.0, beta=beta, eta=self.eta)
            rob = tl.run("dr-rpo", spec, iterations=K, rho=self.rho, beta=beta, eta=self.eta)
            soft = soft_value_iteration(mdp, beta)
            p_nom, p_rob = np.asarray(nom.policies[-1]), np.asarray(rob.policies[-1])
            kl = float((p_nom * (np.log(p_nom) - np.log(soft.policy))).sum(axis=1).max())
            nominal_kl = max(nominal_kl, kl)
            nominal_value = max(nominal_value, abs(float(nom.regularised[-1]) - soft.V @ mdp.mu0))

            def floor_J(pi, rho=self.rho, mdp=mdp):
                ev = R.robust_value_iteration(
                    mdp, "tv", rho, policy=pi, reward=_regularised_reward(mdp, pi, beta)
                )
                return float(ev.V @ mdp.mu0), ev.worst

            J_star = float(rob.target_value)
            J_rob, _ = floor_J(p_rob)
            robust_gap = max(robust_gap, abs(J_rob - J_star))
            _, worst_nom = floor_J(p_nom)
            under = [
                float(
                    R.kernel_value(mdp, worst_nom, p, _regularised_reward(mdp, p, beta)) @ mdp.mu0
                )
                for p in (p_rob, p_nom)
            ]
            edge.append(under[0] - under[1])
            Js = np.array([floor_J(np.asarray(p))[0] for p in rob.policies[:K]])
            regret = np.cumsum(J_star - Js)  # regret[k - 1]: the first k iterates
            ks = [K // 8, K // 4, K // 2, K]
            ratio = [float(regret[k - 1] / np.sqrt(k)) for k in ks]
            ratios_ok &= all(b <= a + 1e-12 for a, b in zip(ratio, ratio[1:], strict=False))
            if len(curves) < 3:
                curves[f"{spec.split(',')[0]}: regret(k) / sqrt(k)"] = regret / np.sqrt(
                    np.arange(1, K + 1)
                )
        edge_a = np.array(edge)
        rep.checks.extend(
            [
                Check(
                    "rho = 0: the soft-VI (regularised PO) optimum",
                    nominal_kl <= 1e-10 and nominal_value <= 1e-9,
                    f"max_s KL(pi_K || pi*_soft) = {nominal_kl:.2e}, |J - V_soft(mu0)| = "
                    f"{nominal_value:.2e} over {len(specs)} MDPs",
                    {"max_kl": nominal_kl, "max_value_gap": nominal_value},
                ),
                Check(
                    "rho > 0: the robust soft optimum (scored by the floor)",
                    robust_gap <= 1e-9,
                    f"max |J_floor(pi_K) - J*| = {robust_gap:.2e} (tolerance 1e-9)",
                    {"max_robust_gap": robust_gap},
                ),
                Check(
                    "robust beats nominal under the nominal policy's worst kernel",
                    bool(np.all(edge_a >= -1e-9) and edge_a.max() > 0.01),
                    f"J_rob - J_nom under P_worst(nom) in [{edge_a.min():.3e}, {edge_a.max():.3e}]",
                    {"min_edge": float(edge_a.min()), "max_edge": float(edge_a.max())},
                ),
                Check(
                    "regret / sqrt(K) non-increasing",
                    ratios_ok,
                    f"regret(k)/sqrt(k) at k = K/8, K/4, K/2, K non-increasing on every MDP: "
                    f"{ratios_ok} (last MDP: {', '.join(f'{r:.3g}' for r in ratio)})",
                    {"last_ratio": ratio[-1]},
                ),
            ]
        )
        if plot:
            from theorylab.plotting import plot_policy_path

            ax = plot_policy_path(
                curves,
                ylabel="exact-evaluation regret / sqrt(k)",
                title=f"DR-RPO core (rho = {self.rho:g}, beta = {beta:g})",
                logy=True,
            )
            save_claim_figure(ax, plot)


register_validation(
    DRRPORobustRegularisedOptimum(),
    controls=("dr-rpo-nominal-q",),
    papers=("000#22", "001#49"),
)


def gamble_mdp(p: float, gamma: float = 0.9):
    """State 0: action 0 moves to state 3 (reward p forever), action 1 to state 1 (reward 1
    forever) with probability p, else to state 2 (reward 0): tied means gamma p / (1 - gamma),
    return variance 0 against p (1 - p) (gamma / (1 - gamma))^2."""
    from theorylab.mdps import TabularMDP

    P = np.zeros((4, 2, 4))
    P[0, 0, 3] = 1.0
    P[0, 1, 1], P[0, 1, 2] = p, 1.0 - p
    for s in (1, 2, 3):
        P[s, :, s] = 1.0
    R = np.zeros((4, 2))
    R[1], R[3] = 1.0, p
    return TabularMDP(P, R, np.array([1.0, 0, 0, 0]), gamma=gamma, name=f"gamble:p={p}")


def return_variance(mdp, policy: np.ndarray) -> np.ndarray:
    """Var of the discounted return (S,) of a deterministic policy (S,), deterministic rewards:
    the second moment M = r^2 + 2 gamma r P V + gamma^2 P M (Sobel 1982), written out here."""
    S, g = mdp.S, mdp.gamma
    P = mdp.dense_P()[np.arange(S), policy]  # (S, S)
    r = mdp.reward(0)[np.arange(S), policy]
    V = np.linalg.solve(np.eye(S) - g * P, r)
    M = np.linalg.solve(np.eye(S) - g**2 * P, r**2 + 2 * g * r * (P @ V))
    return M - V**2


@dataclass(frozen=True)
class SubstateSafeTieBreaking(ScaledClaim):
    name: str = "substate-dp-safe-tie-breaking"
    statement: str = (
        "Distributional DP with worst/best substates (Achab & Neu; substate-dp, alpha = 0.25, "
        "reconstructed operator: each state's return law split at its alpha-quantile): for "
        "random policies on random discounted MDPs (S = 5, A = 3, gamma = 0.9), worst <= mean "
        "<= best and alpha V^- + (1 - alpha) V^+ = V^pi (exact linear solve) to 1e-9; V^- is the "
        "LP minimum over the CVaR reweightings q <= w / alpha of the next law (1e-9); on "
        "deterministic MDPs V^- = V^+ = V^pi (1e-9); on gamble MDPs with two tied optimal "
        "actions (a sure p forever against 1 forever with probability p), the safe policy "
        "(substate-dp through tl.run) and the risky one are both optimal (1e-9) and the safe "
        "one's return variance (second-moment equation) is 0 < the risky one's. Quick: 5 MDPs x "
        "5 policies, p in {0.2, 0.5}; full: 30 MDPs x 20 policies, p in {0.1, 0.3, 0.5, 0.7, 0.9}."
    )
    scales: dict[str, dict[str, Any]] = field(
        default_factory=lambda: {
            "quick": {"mdps": 5, "policies": 5, "ps": (0.2, 0.5)},
            "full": {"mdps": 30, "policies": 20, "ps": (0.1, 0.3, 0.5, 0.7, 0.9)},
        }
    )
    alpha: float = 0.25

    def _run(self, cfg: dict, seed: int, plot: str | None, rep) -> None:
        from scipy.optimize import linprog

        import theorylab as tl
        from theorylab.algorithms.planning.evaluation import evaluate_discounted
        from theorylab.algorithms.planning.value_iteration import value_iteration
        from theorylab.algorithms.robust import substates as Z
        from theorylab.mdps import TabularMDP

        a = self.alpha
        rng = np.random.default_rng(seed + 73)
        mean_err, order_ok, lp_err, det_gap, spread = 0.0, True, 0.0, 0.0, 0.0
        for i in range(cfg["mdps"]):
            mdp = _discounted(f"random:S=5,A=3,gamma=0.9,seed={seed + i}")
            for _ in range(cfg["policies"]):
                pi = rng.dirichlet(np.ones(mdp.A) * rng.choice([0.2, 1.0]), size=mdp.S)
                sol = Z.evaluate_substates(mdp, pi, a)
                V = evaluate_discounted(mdp, pi)
                mean_err = max(mean_err, float(np.abs(a * sol.Vm + (1 - a) * sol.Vp - V).max()))
                order_ok &= bool(np.all(sol.Vm <= V + 1e-9) and np.all(V <= sol.Vp + 1e-9))
                spread = max(spread, float((sol.Vp - sol.Vm).max()))
            atoms, w = Z._action_laws(mdp, sol.Vm, sol.Vp, a, mdp.gamma)
            for s in range(mdp.S):  # the robust reading: an LP over the CVaR reweightings
                x, ws = atoms[s].ravel(), (pi[s][:, None] * w[s]).ravel()
                res = linprog(
                    x, A_eq=np.ones((1, x.size)), b_eq=[1.0],
                    bounds=list(zip(np.zeros(x.size), ws / a, strict=True)), method="highs",
                )  # fmt: skip
                lp_err = max(lp_err, abs(float(res.fun) - float(sol.Vm[s])))
            P = np.zeros((mdp.S, mdp.A, mdp.S))
            nxt = rng.integers(0, mdp.S, size=(mdp.S, mdp.A))
            P[np.arange(mdp.S)[:, None], np.arange(mdp.A)[None, :], nxt] = 1.0
            det = TabularMDP(P, mdp.reward(0), mdp.mu0, gamma=mdp.gamma)
            pol = rng.integers(0, mdp.A, size=mdp.S)
            dsol = Z.evaluate_substates(det, pol, a)
            dV = evaluate_discounted(det, pol)
            det_gap = max(det_gap, float(np.abs(dsol.Vp - dsol.Vm).max()),
                          float(np.abs(dsol.Vm - dV).max()))  # fmt: skip
        tie_rows, ties_ok, optimal_err, curves = [], True, 0.0, {}
        for p in cfg["ps"]:
            g = gamble_mdp(p)
            V_star = float(value_iteration(g, tol=1e-13).V @ g.mu0)
            out = {}
            for mode in ("safe", "risky"):
                res = tl.run("substate-dp", g, iterations=400, alpha=a, mode=mode)
                if p == cfg["ps"][-1]:
                    tag = "V^- (safe)" if mode == "safe" else "V^+ (risky)"
                    curves[f"p = {p:g}: {tag}"] = np.asarray(res.regularised)
                    curves[f"p = {p:g}: mean ({mode})"] = np.asarray(res.objective)
                pol = np.asarray(res.policies[-1]).argmax(axis=1)
                optimal_err = max(optimal_err, abs(float(res.objective[-1]) - V_star))
                out[mode] = float(return_variance(g, pol) @ g.mu0)
            ties_ok &= out["safe"] <= 1e-12 < out["risky"]
            tie_rows.append(f"p={p:g}: var safe {out['safe']:.3g}, risky {out['risky']:.3g}")
        rep.checks.extend(
            [
                Check(
                    "worst <= mean <= best; alpha V^- + (1 - alpha) V^+ = V^pi",
                    order_ok and mean_err <= 1e-9 and spread > 0,
                    f"max |alpha V^- + (1 - alpha) V^+ - V^pi| = {mean_err:.2e}; ordered: "
                    f"{order_ok}; max V^+ - V^- = {spread:.3f}",
                    {"max_mean_error": mean_err},
                ),
                Check(
                    "V^- is the CVaR-set robust minimum (LP)",
                    lp_err <= 1e-9,
                    f"max |LP - V^-| = {lp_err:.2e} over {cfg['mdps'] * 5} states",
                    {"max_lp_error": lp_err},
                ),
                Check(
                    "deterministic MDPs: V^- = V^pi = V^+",
                    det_gap <= 1e-9,
                    f"max gap {det_gap:.2e} over {cfg['mdps']} deterministic MDPs",
                    {"max_det_gap": det_gap},
                ),
                Check(
                    "safe tie-breaking picks the lower-dispersion optimal action",
                    ties_ok and optimal_err <= 1e-9,
                    "; ".join(tie_rows) + f"; max |mean - V*| = {optimal_err:.1e}",
                    {"max_optimality_error": optimal_err},
                ),
            ]
        )
        if plot:
            from theorylab.plotting import plot_policy_path

            ax = plot_policy_path(
                curves,
                ylabel="value at the start state",
                title=f"substate DP on a gamble MDP (alpha = {a:g}): safe vs risky",
                logy=False,
            )
            save_claim_figure(ax, plot)


register_validation(
    SubstateSafeTieBreaking(), controls=("substate-safe-breaks-by-best",), papers=("000#73",)
)


@dataclass(frozen=True)
class TimeConstrainedOrdering(ScaledClaim):
    name: str = "tc-rmdp-value-ordering"
    statement: str = (
        "Time-constrained robust MDPs (seed row 000#50, reconstructed tabular DP on (s, "
        "psi_prev); tc-rmdp through tl.run): on random discounted MDPs (S = 5, A = 3, gamma = "
        "0.9) with a family of n = 5 kernels through the nominal one, the (s, a)-rectangular "
        "robust value <= V_TC(L) <= the nominal optimum for every step bound L = 0..4, V_TC "
        "non-increasing in L, V_TC(4) = rectangular (1e-9) and V_TC(0) = min_k V*_{P_k} (a static "
        "adversary the agent observes; value iteration per kernel, 1e-9), and strictly between "
        "the two ends on some MDP. Quick: 4 MDPs; full: 30 MDPs."
    )
    scales: dict[str, dict[str, Any]] = field(
        default_factory=lambda: {"quick": {"mdps": 4}, "full": {"mdps": 30}}
    )
    levels: int = 5

    def _run(self, cfg: dict, seed: int, plot: str | None, rep) -> None:
        import theorylab as tl
        from theorylab.algorithms.planning.value_iteration import value_iteration
        from theorylab.algorithms.robust import finite_sets as F
        from theorylab.algorithms.robust import time_constrained as T

        n = self.levels
        order_ok, mono_ok, relax_gap, static_gap, strict = True, True, 0.0, 0.0, 0.0
        curves = {}
        for i in range(cfg["mdps"]):
            spec = f"random:S=5,A=3,gamma=0.9,seed={seed + i}"
            mdp = _discounted(spec)
            family = T.parameter_family(mdp, n, seed + i)
            rect = float(F.dynamic_robust_vi(mdp, family)[0] @ mdp.mu0)
            nominal = float(value_iteration(mdp, tol=1e-13).V @ mdp.mu0)
            static = min(
                float(value_iteration(mdp._replace(P=P), tol=1e-13).V @ mdp.mu0) for P in family
            )
            tcs = [
                float(
                    tl.run(
                        "tc-rmdp", spec, iterations=400, levels=n, step=L, family_seed=seed + i
                    ).objective[-1]
                )
                for L in range(n)
            ]
            order_ok &= all(rect - 1e-9 <= v <= nominal + 1e-9 for v in tcs)
            mono_ok &= all(b <= a + 1e-9 for a, b in zip(tcs, tcs[1:], strict=False))
            relax_gap = max(relax_gap, abs(tcs[-1] - rect))
            static_gap = max(static_gap, abs(tcs[0] - static))
            strict = max(strict, min(tcs[1] - rect, tcs[0] - tcs[1]))
            if i < 3:
                curves[f"MDP {i}: V_TC(L) - rectangular"] = np.array(tcs) - rect + 1e-12
        rep.checks.extend(
            [
                Check(
                    "rectangular <= TC <= nominal, non-increasing in L",
                    order_ok and mono_ok,
                    f"ordered on every MDP and L: {order_ok}; non-increasing in L: {mono_ok}",
                    {},
                ),
                Check(
                    "no time constraint recovers the rectangular value",
                    relax_gap <= 1e-9,
                    f"max |V_TC(L = {n - 1}) - rectangular| = {relax_gap:.2e}",
                    {"max_relax_gap": relax_gap},
                ),
                Check(
                    "L = 0 recovers the static adversary min_k V*_k",
                    static_gap <= 1e-9,
                    f"max |V_TC(0) - min_k V*_k| = {static_gap:.2e}",
                    {"max_static_gap": static_gap},
                ),
                Check(
                    "the time constraint matters (strictly between the ends at L = 1)",
                    strict > 1e-3,
                    f"max over MDPs of min(V_TC(1) - rect, V_TC(0) - V_TC(1)) = {strict:.3e}",
                    {"strict_margin": strict},
                ),
            ]
        )
        if plot:
            from theorylab.plotting import plot_policy_path

            ax = plot_policy_path(
                curves,
                ylabel="V_TC(L) - rectangular value (+1e-12)",
                title="time-constrained robust value against the step bound L",
                logy=True,
            )
            save_claim_figure(ax, plot)


register_validation(
    TimeConstrainedOrdering(), controls=("tc-adversary-unconstrained",), papers=("000#50",)
)


@dataclass(frozen=True)
class NondominatedEXP3Regret(ScaledClaim):
    name: str = "nondominated-exp3-regret"
    statement: str = (
        "Non-dominated policies + EXP3 (Liu, Deng, Sun, Liang & Huang 2024; nondominated-exp3 "
        "through tl.run) on random discounted MDPs (S = 5, A = 2, gamma = 0.9) with m = 5 "
        "observation attacks (the identity and 4 maps moving each state's observation w.p. "
        "0.5): (i) the kept set attains max_pi w . J(pi) over all 32 deterministic policies for "
        "every pure attack and 200 random attack distributions w (to 1e-12); every dropped policy "
        "is weakly dominated by a mixture of kept ones (a second LP, to 1e-9); every kept one is "
        "needed (dropping it lowers the max at its witness w); (ii) EXP3 over the K kept "
        "policies, against random and block attack sequences, has seed-mean expected regret "
        "against the best fixed policy over all 32 (brute force) <= 2 sqrt(e - 1) sqrt(T K ln K) "
        "(Auer et al. 2002, Cor. 3.2), with that bound < T (informative); (iii) the regret grows "
        "like sqrt(T): the mean log-log slope between T/16 and T, over the runs whose regret is "
        "positive at both, is <= 0.75. Quick: 4 MDPs, T = "
        "20,000, 8 EXP3 seeds; full: 8 MDPs, T = 100,000, 8 seeds."
    )
    scales: dict[str, dict[str, Any]] = field(
        default_factory=lambda: {
            "quick": {"mdps": 4, "T": 20_000, "seeds": 8},
            "full": {"mdps": 8, "T": 100_000, "seeds": 8},
        }
    )
    attacks: int = 5

    def _run(self, cfg: dict, seed: int, plot: str | None, rep) -> None:
        import math

        from scipy.optimize import linprog

        import theorylab as tl
        from theorylab.algorithms.robust import nondominated as N
        from theorylab.algorithms.robust.finite_sets import all_deterministic_policies

        rng = np.random.default_rng(seed)
        max_gap, dom_gap, needed_ok, bound_below_T, negative = 0.0, 0.0, True, True, 0
        ratios, slopes, ks = [], [], []
        curves = {}
        for i in range(cfg["mdps"]):
            spec = f"random:S=5,A=2,gamma=0.9,seed={seed + i}"
            mdp = _discounted(spec)
            pols = all_deterministic_policies(mdp.S, mdp.A)
            nus = N.observation_attacks(mdp.S, self.attacks, 0.5, seed + i)
            J = N.attack_values(mdp, pols, nus)  # (32, m)
            for schedule in ("random", "blocks"):
                runs = {}
                for T in (cfg["T"] // 16, cfg["T"]):
                    runs[T] = tl.run(
                        "nondominated-exp3", spec, iterations=T - 1, attacks=self.attacks,
                        strength=0.5, schedule=schedule, attack_seed=seed + i,
                        exp3_seeds=cfg["seeds"], exp3_seed=seed + 7 * i,
                    )  # fmt: skip
                res = runs[cfg["T"]]
                kept = np.asarray(res.config["kept"], dtype=np.int64)
                K = kept.size
                ks.append(K)
                if schedule == "random":  # the filter checks: once per MDP
                    W = np.vstack([np.eye(self.attacks), rng.dirichlet(np.ones(self.attacks), 200)])
                    best_all = (J @ W.T).max(axis=0)
                    best_kept = (J[kept] @ W.T).max(axis=0)
                    max_gap = max(max_gap, float(np.max(best_all - best_kept)))
                    for d in sorted(set(range(J.shape[0])) - set(kept.tolist())):
                        # min_{q in simplex(K)} max_nu J_d(nu) - q . J_kept(nu): <= 0 iff dominated
                        c = np.r_[np.zeros(K), 1.0]
                        A_ub = np.hstack([-J[kept].T, -np.ones((self.attacks, 1))])
                        lp = linprog(
                            c, A_ub=A_ub, b_ub=-J[d], A_eq=np.r_[np.ones(K), 0.0][None],
                            b_eq=[1.0], bounds=[(0, 1)] * K + [(None, None)], method="highs",
                        )  # fmt: skip
                        dom_gap = max(dom_gap, float(lp.fun))
                    for j in range(K):
                        _, w = N.unique_best_response_margin(J, int(kept[j]))
                        rest = np.delete(kept, j)
                        if rest.size and (J[rest] @ w).max() >= J[kept[j]] @ w - 1e-12:
                            needed_ok = False
                if K < 2:
                    continue
                T = cfg["T"]
                bound = 2.0 * math.sqrt(math.e - 1.0) * math.sqrt(T * K * math.log(K))
                bound_below_T &= bound < T
                ratios.append(float(res.regularised[-1]) / bound)
                small = runs[T // 16]
                r_big, r_small = float(res.regularised[-1]), float(small.regularised[-1])
                if min(r_big, r_small) > 0:  # a switching schedule can give negative regret
                    slopes.append(math.log(r_big / r_small) / math.log(16.0))
                else:
                    negative += 1
                if len(curves) < 4:
                    curves[f"MDP {i}, {schedule} attacks, K = {K}: regret / bound"] = np.maximum(
                        res.regularised / bound, 1e-16
                    )
        r, s = np.array(ratios), np.array(slopes)
        rep.checks.extend(
            [
                Check(
                    "the kept set attains the best value for every attack mixture",
                    max_gap <= 1e-12,
                    f"max over MDPs, pure attacks and 200 mixtures w of max_all w.J - max_kept "
                    f"w.J = {max_gap:.2e} (tolerance 1e-12); kept sizes {ks[::2]} of 32",
                    {"max_gap": max_gap},
                ),
                Check(
                    "every dropped policy is dominated by a mixture of kept ones",
                    dom_gap <= 1e-9,
                    f"max over dropped policies of min_q max_nu (J_d - q.J_kept) = {dom_gap:.2e} "
                    "(tolerance 1e-9)",
                    {"max_domination_gap": dom_gap},
                ),
                Check(
                    "every kept policy is needed (minimal set)",
                    needed_ok,
                    f"dropping any kept policy lowers max w.J at its LP witness w: {needed_ok}",
                    {},
                ),
                Check(
                    "EXP3 regret <= 2 sqrt(e - 1) sqrt(T K ln K)",
                    bool(r.size) and float(r.max()) <= 1.0,
                    f"regret / bound in [{r.min():.3f}, {r.max():.3f}] over {r.size} runs "
                    f"(K >= 2), T = {cfg['T']}, {cfg['seeds']} EXP3 seeds each",
                    {"max_ratio": float(r.max()) if r.size else float("nan")},
                    status=None if bound_below_T else "VACUOUS",
                ),
                Check(
                    "regret grows like sqrt(T) (mean log-log slope <= 0.75 from T/16 to T)",
                    bool(s.size) and float(s.mean()) <= 0.75,
                    f"mean slope {s.mean():.3f}, per run in [{s.min():.3f}, {s.max():.3f}] "
                    f"over {s.size} runs with positive regret at T/16 and T ({negative} left "
                    "out: EXP3 beat the best fixed policy) (sqrt(T): 0.5, linear: 1)",
                    {"mean_slope": float(s.mean()) if s.size else float("nan")},
                ),
            ]
        )
        if plot:
            from theorylab.plotting import plot_policy_path

            ax = plot_policy_path(
                curves,
                ylabel="cumulative regret / 2 sqrt(e-1) sqrt(T K ln K)",
                title="EXP3 over the non-dominated policies: regret against the bound",
            )
            save_claim_figure(ax, plot)


register_validation(
    NondominatedEXP3Regret(),
    controls=("nondominated-drops-a-vertex", "exp3-plays-uniform"),
    papers=("002-004#D3",),
)


@dataclass(frozen=True)
class PolicySmoothingCertificate(ScaledClaim):
    name: str = "policy-smoothing-certificate"
    statement: str = (
        "Policy smoothing (Kumar, Levine & Feizi 2022; policy-smoothing through tl.run) on a "
        "two-action combination lock, H = 10, observation margins 4 and 1 at the critical stage "
        "0, sigma = 1: (i) the certificate Phi(Phi^{-1}(p_lower) - B / sigma) on P[R >= 1] "
        "(p_lower a 99% Clopper-Pearson bound from 10,000 clean episodes) is at most the exact "
        "attacked probability, for both the critical (whole budget at the critical stage) and "
        "the spread attack and every budget B in 0..2, on all but a binomial(seeds, 0.01) "
        "99.9%-quantile of the seeds; (ii) it is nearly tight against the critical attack "
        "(mean gap <= 0.05 at B = 1), so a wrong scaling shows; (iii) it decreases in B; (iv) "
        "with all margins 4 (the base policy never fails clean) it increases with sigma over "
        "0.1, 0.2, 0.4, 0.8 at B = 1; (v) at sigma = 1e-3 it is <= 1e-12 and the certified "
        "median return is the trivial 0: VACUOUS, never PASS. Quick: 200 seeds; full: 2,000."
    )
    scales: dict[str, dict[str, Any]] = field(
        default_factory=lambda: {"quick": {"seeds": 200}, "full": {"seeds": 2000}}
    )
    spec: str = "combination-lock:H=10,A=2"
    alpha: float = 0.01

    def _run(self, cfg: dict, seed: int, plot: str | None, rep) -> None:
        from scipy.stats import binom, norm

        import theorylab as tl

        H, n_seeds = 10, cfg["seeds"]
        m = np.full(H, 4.0)
        m[0] = 1.0
        budgets = np.linspace(0.0, 2.0, 5)
        # the independent answer: the attacked probability in closed form, written out here
        truth = {
            "critical": np.array(
                [norm.cdf((m[0] - b) / 1.0) * norm.cdf(m[1:]).prod() for b in budgets]
            ),  # fmt: skip
            "spread": np.array([norm.cdf(m - b / np.sqrt(H)).prod() for b in budgets]),
        }
        violations, gaps, decreasing, certs = 0, [], True, []
        for s in range(n_seeds):
            res = tl.run(
                "policy-smoothing", self.spec, iterations=4, sigma=1.0, budget=2.0,
                margin=4.0, critical_margin=1.0, samples=10_000, alpha=self.alpha,
                mc_seed=seed * 100_003 + s,
            )  # fmt: skip
            cert = np.asarray(res.regularised)
            certs.append(cert)
            violations += int(any(np.any(cert > truth[a] + 1e-12) for a in truth))
            gaps.append(float(truth["critical"][2] - cert[2]))
            decreasing &= bool(np.all(np.diff(cert) < 0))
        allowed = int(binom.ppf(0.999, n_seeds, self.alpha))
        sig_grid = (0.1, 0.2, 0.4, 0.8)
        by_sigma = [
            float(tl.run("policy-smoothing", self.spec, iterations=1, sigma=sg, budget=1.0,
                         margin=4.0, critical_margin=4.0, mc_seed=seed).regularised[1])
            for sg in sig_grid
        ]  # fmt: skip
        tiny = tl.run(
            "policy-smoothing", self.spec, iterations=1, sigma=1e-3, budget=1.0, margin=4.0,
            critical_margin=4.0, mc_seed=seed,
        )  # fmt: skip
        c0 = float(tiny.regularised[1])
        median0 = float(tiny.config["certified_median"][1])
        g = np.array(gaps)
        rep.checks.extend(
            [
                Check(
                    "the certificate holds under attack (coverage)",
                    violations <= allowed,
                    f"{violations} of {n_seeds} seeds have a certificate above the exact "
                    f"attacked probability at some budget or attack (allowed: {allowed}, the "
                    f"99.9% quantile of binomial({n_seeds}, {self.alpha}))",
                    {"violations": violations, "allowed": allowed},
                ),
                Check(
                    "the certificate is nearly tight against the critical attack",
                    float(g.mean()) <= 0.05,
                    f"mean exact - certificate at B = 1: {g.mean():.4f} (<= 0.05)",
                    {"mean_gap": float(g.mean())},
                ),
                Check(
                    "the certificate shrinks with the budget",
                    decreasing,
                    f"strictly decreasing over B = {budgets.tolist()} on every seed: {decreasing}",
                    {},
                ),
                Check(
                    "the certificate grows with sigma (base policy robust)",
                    bool(np.all(np.diff(by_sigma) > 0)),
                    "certificate at B = 1 over sigma "
                    + ", ".join(f"{sg}: {c:.4f}" for sg, c in zip(sig_grid, by_sigma, strict=True)),
                    {"by_sigma": by_sigma},
                ),
                Check(
                    "the certificate is vacuous at sigma -> 0",
                    c0 <= 1e-12 and median0 == 0.0,
                    f"sigma = 1e-3, B = 1: certificate {c0:.2e}, certified median return "
                    f"{median0:g} (the trivial bound 0)",
                    {"certificate": c0},
                    status="VACUOUS" if (c0 <= 1e-12 and median0 == 0.0) else "FAIL",
                ),
            ]
        )
        if plot:
            from theorylab.plotting import plot_policy_path

            C = np.array(certs)
            curves = {
                "exact attacked P[R >= 1], critical attack": truth["critical"],
                "exact attacked P[R >= 1], spread attack": truth["spread"],
                "certificate, seed mean": C.mean(axis=0),
                "certificate, seed max": C.max(axis=0),
            }
            ax = plot_policy_path(
                curves,
                ylabel="P[R >= 1] (budget B = k / 2)",
                title="Policy smoothing: certificate against the exact attacked probability",
            )
            save_claim_figure(ax, plot)


register_validation(
    PolicySmoothingCertificate(),
    controls=("smoothing-budget-over-sqrt-horizon",),
    papers=("002-004#D2",),
)


def _rollout_value(game, K: np.ndarray, L: np.ndarray, gamma: float, steps: int) -> float:
    """sum_t x_t'Q x_t + u_t'R u_t - gamma^2 |w_t|^2 from x0 under u = -K x, w = L x, summed
    forward step by step (independent of the Riccati and Lyapunov solutions). Where the state
    diverges (|x|^2 > 1e60: a destabilising disturber, whose energy is infinite) the partial sum
    at that step is returned: about -gamma^2 |w|^2 -> -inf when the actor meets the ratio
    constraint, a huge positive number when it does not."""
    A, B, D = (np.asarray(M, dtype=np.float64) for M in (game.A, game.B, game.D))
    Q, R = np.asarray(game.Q, dtype=np.float64), np.asarray(game.R, dtype=np.float64)
    x, total = np.asarray(game.x0, dtype=np.float64).copy(), 0.0
    for _ in range(steps):
        u, w = -K @ x, L @ x
        total += float(x @ Q @ x + u @ R @ u - gamma**2 * (w @ w))
        x = A @ x + B @ u + D @ w
        size = float(x @ x)
        if not np.isfinite(size) or size > 1e60:
            return total
        if size < 1e-40:
            break
    return total


@dataclass(frozen=True)
class HinfLQMatchesAnalytic(ScaledClaim):
    name: str = "hinf-lq-matches-analytic"
    statement: str = (
        "H-infinity control as a zero-sum LQ game (Long et al. 2024, seed row 002-004#D4; the "
        "linear-quadratic test of the catalogue row, reconstructed): on random games x' = A x + "
        "B u + D w (A of spectral radius 1.05, Q = I, R = I) at gamma = sqrt(gamma* gamma_LQR) "
        "(gamma* by bisection on scipy's generalised DARE, gamma_LQR the H-infinity norm of the "
        "LQR loop), the actor-disturber iteration (hinf-lq through tl.run, 400 rounds) (i) gives "
        "scipy's GARE gain and value to 1e-8; (ii) its worst-case disturber attains the game "
        "value: x0'P x0 = the forward rollout sum to 1e-8 relative, no perturbed disturber gets "
        "more, no perturbed actor gain concedes less (scipy's disturber DARE); (iii) the learned "
        "loop meets the ratio constraint (frequency-swept H-infinity norm < gamma) and the LQR "
        "loop fails it (norm > gamma, worst case +inf); (iv) at gamma = 2 gamma_LQR the LQR "
        "gain's worst-case cost exceeds the game value; (v) gamma = 1e4 gamma_LQR gives the LQR "
        "gain to 1e-6 and gamma = inf to 1e-10; (vi) at 0.97 gamma* the run reports no solution "
        "(no error) and at 1.03 gamma* it solves with gamma* <= its loop's norm < 1.03 gamma*. "
        "Quick: 3 games (n = 3, m = q = 1); full: 12 games (n = 3, m = q = 1 and n = 4, m = q = 2)."
    )
    scales: dict[str, dict[str, Any]] = field(
        default_factory=lambda: {
            "quick": {"specs": ("n=3,m=1,q=1",), "games": 3},
            "full": {"specs": ("n=3,m=1,q=1", "n=4,m=2,q=2"), "games": 6},
        }
    )
    rounds: int = 400

    def _run(self, cfg: dict, seed: int, plot: str | None, rep) -> None:
        import theorylab as tl
        from theorylab.algorithms.robust import hinf_lq as H
        from theorylab.mdps import make

        rng = np.random.default_rng(seed + 4)
        gain_err, value_err, roll_err, saddle_ok, n_games = 0.0, 0.0, 0.0, True, 0
        ratio_rows, ratio_ok, lqr_ok, lqr_margin, lim_err, inf_err = [], True, True, np.inf, 0, 0
        below_ok, above_ok, curves = True, True, {}
        for spec in cfg["specs"]:
            for i in range(cfg["games"]):
                game = make(f"lq-game:{spec},seed={seed + i}")
                x0 = np.asarray(game.x0)
                g_star = H.critical_gamma(game)
                P_lqr, K_lqr = H.lqr(game)
                g_lqr = H.hinf_norm(game, K_lqr)
                gam = float(np.sqrt(g_star * g_lqr))
                res = tl.run("hinf-lq", game, iterations=self.rounds, gamma=gam)
                K = np.asarray(res.policies[-1])
                L = np.asarray(res.config["disturber_gain"])
                P = np.asarray(res.config["value_matrix"])
                star = H.analytic_game_riccati(game, gam)  # independent: scipy's GARE
                n_games += 1
                if star is None or not res.config["solvable"]:
                    gain_err = value_err = np.inf
                    continue
                gain_err = max(gain_err, float(np.abs(K - star[1]).max()),
                               float(np.abs(L - star[2]).max()))  # fmt: skip
                value_err = max(value_err, float(np.abs(P - star[0]).max() / np.abs(star[0]).max()))
                J = float(x0 @ P @ x0)
                roll = _rollout_value(game, K, L, gam, 200_000)
                roll_err = max(roll_err, abs(roll - J) / abs(J))
                for _ in range(4):  # the saddle: perturb each player
                    dL = L + 0.05 * rng.standard_normal(L.shape)
                    saddle_ok &= _rollout_value(game, K, dL, gam, 200_000) <= J + 1e-9 * abs(J)
                    dK = K + 0.05 * rng.standard_normal(K.shape)
                    PK = H.worst_case_value(game, dK, gam)
                    saddle_ok &= PK is None or float(x0 @ PK @ x0) >= J - 1e-9 * abs(J)
                norm_K = H.hinf_norm(game, K)
                ratio_ok &= norm_K < gam
                lqr_ok &= g_lqr > gam and H.worst_case_value(game, K_lqr, gam) is None
                ratio_rows.append(f"{norm_K:.3f} < {gam:.3f} < {g_lqr:.3f}")
                hi = 2.0 * g_lqr
                res_hi = tl.run("hinf-lq", game, iterations=self.rounds, gamma=hi)
                P_K = H.worst_case_value(game, K_lqr, hi)
                J_hi = float(res_hi.objective[-1])
                lqr_margin = min(
                    lqr_margin,
                    (float(x0 @ P_K @ x0) - J_hi) / abs(J_hi) if P_K is not None else -np.inf,
                )
                big = tl.run("hinf-lq", game, iterations=self.rounds, gamma=1e4 * g_lqr)
                lim_err = max(lim_err, float(np.abs(np.asarray(big.policies[-1]) - K_lqr).max()))
                inf = tl.run("hinf-lq", game, iterations=self.rounds, gamma=float("inf"))
                inf_err = max(inf_err, float(np.abs(np.asarray(inf.policies[-1]) - K_lqr).max()))
                below = tl.run("hinf-lq", game, iterations=self.rounds, gamma=0.97 * g_star)
                below_ok &= (not below.config["solvable"]) and (
                    H.analytic_game_riccati(game, 0.97 * g_star) is None
                )
                above = tl.run("hinf-lq", game, iterations=self.rounds, gamma=1.03 * g_star)
                norm_above = H.hinf_norm(game, np.asarray(above.policies[-1]))
                above_ok &= bool(above.config["solvable"]) and (
                    g_star * (1 - 1e-5) <= norm_above < 1.03 * g_star
                )
                if len(curves) < 3:
                    curves[f"{game.name}: max |K_k - K_GARE|"] = np.asarray(res.target_gap) + 1e-16
        rep.checks.extend(
            [
                Check(
                    "learned gains = scipy's GARE saddle point",
                    gain_err <= 1e-8 and value_err <= 1e-8,
                    f"max |K - K*|, |L - L*| = {gain_err:.2e}; max relative |P - P*| = "
                    f"{value_err:.2e} over {n_games} games (tolerance 1e-8)",
                    {"max_gain_error": gain_err, "max_value_error": value_err},
                ),
                Check(
                    "the worst-case disturber attains the game value (saddle point)",
                    roll_err <= 1e-8 and saddle_ok,
                    f"max |rollout - x0'P x0| / |x0'P x0| = {roll_err:.2e} (tolerance 1e-8); "
                    f"perturbed disturbers never above, perturbed actors never below: {saddle_ok}",
                    {"max_rollout_error": roll_err},
                ),
                Check(
                    "ratio constraint: learned loop's H-inf norm < gamma < LQR loop's",
                    ratio_ok and lqr_ok,
                    "||T_K||_inf < gamma < ||T_LQR||_inf: " + "; ".join(ratio_rows[:6]),
                    {"learned_meets": ratio_ok, "lqr_fails": lqr_ok},
                ),
                Check(
                    "LQR's worst-case cost exceeds the game value (gamma = 2 gamma_LQR)",
                    lqr_margin > 1e-6,
                    f"min (J_worst(K_LQR) - J*) / J* = {lqr_margin:.3e} over {n_games} games",
                    {"min_lqr_excess": lqr_margin},
                ),
                Check(
                    "gamma -> inf recovers LQR",
                    lim_err <= 1e-6 and inf_err <= 1e-10,
                    f"max |K_gamma - K_LQR| = {lim_err:.2e} at gamma = 1e4 gamma_LQR (tolerance "
                    f"1e-6), {inf_err:.2e} at gamma = inf (tolerance 1e-10)",
                    {"max_lqr_limit_error": lim_err, "max_inf_error": inf_err},
                ),
                Check(
                    "below gamma* no solution (reported), above it gamma* <= ||T_K|| < gamma",
                    below_ok and above_ok,
                    f"0.97 gamma*: unsolvable reported by the run and scipy: {below_ok}; 1.03 "
                    f"gamma*: solved with gamma* <= ||T_K||_inf < 1.03 gamma*: {above_ok}",
                    {"below_ok": below_ok, "above_ok": above_ok},
                ),
            ]
        )
        if plot and curves:
            from theorylab.plotting import plot_policy_path

            ax = plot_policy_path(
                curves,
                ylabel="max |K_k - K_GARE| (+1e-16)",
                title="hinf-lq: gain error against scipy's GARE",
                logy=True,
            )
            save_claim_figure(ax, plot)


register_validation(
    HinfLQMatchesAnalytic(), controls=("hinf-disturber-sign-flipped",), papers=("002-004#D4",)
)


# --- DR-RPO online (issue 30, helper drrpo30) ---------------------------------------------------


def _slope_and_ratios(regret: np.ndarray, K: int) -> tuple[float, list[float]]:
    """log-log slope of the cumulative regret through k = K/4, K/2, K and regret(k) / sqrt(k)."""
    ks = np.array([K // 4, K // 2, K])
    vals = np.maximum(regret[ks - 1], 1e-300)
    slope = float(np.polyfit(np.log(ks), np.log(vals), 1)[0])
    return slope, [float(regret[k - 1] / np.sqrt(k)) for k in ks]


@dataclass(frozen=True)
class DRRPOOnlineRegretSublinear(ScaledClaim):
    name: str = "dr-rpo-online-regret-sublinear"
    statement: str = (
        "DR-RPO online (Gu, He, Liu & Xu 2025; dr-rpo-online through tl.run: sampled episodes "
        "of the nominal kernel, ridge factors mu_hat = Lambda^-1 B, the TV dual per factor, "
        "bonus 3 ||phi||_{Lambda^-1}, KL mirror ascent, rho = 0.3, beta = 0.2, eta = 10, "
        "gamma = 0.8): (i) its regret sum_k (J* - J(pi_k)), every J the exact robust return "
        "of the true model, averaged over seeds, has log-log slope <= 0.75 through K/4, K/2, K "
        "and regret(K)/sqrt(K) <= 1.25 regret(K/4)/sqrt(K/4) (a linear regret doubles it), on "
        "every MDP; (ii) rho = 0 is the non-robust learner: its target is the floor's soft-VI "
        "optimum (to 1e-9) and its regret against it has slope <= 0.75 on the random MDPs "
        "(riverswim's rho = 0 learner, still exploring toward the far reward, reported); "
        "(iii) one-hot features are the tabular case: Lambda = "
        "diag(N(s, a) + lam), and the learner's TV dual on the empirical rows equals the "
        "floor's water-filling minimum (1e-9); (iv) on the MDPs whose robust and nominal "
        "regularised optima differ (J*_rob - J_rob(nominal optimum) > 0.01: riverswim), under "
        "the worst kernel of the rho = 0 learner's last policy the robust learner's last policy "
        "is better by > 0.01; (v) the learner's scores equal the floor's robust "
        "evaluation at k = 0, K/2, K (1e-8). Quick: 1 random MDP (S = 5, A = 3) and riverswim "
        "S = 4, one-hot, 2 seeds, K = 300; full: 2 random MDPs (one-hot and d = 4), riverswim "
        "S = 4, 3 seeds, K = 1600."
    )
    scales: dict[str, dict[str, Any]] = field(
        default_factory=lambda: {
            "quick": {"random": 1, "features": ("tabular",), "seeds": 2, "K": 300},
            "full": {"random": 2, "features": ("tabular", 4), "seeds": 3, "K": 1600},
        }
    )
    rho: float = 0.3
    beta: float = 0.2
    eta: float = 10.0
    bonus: float = 3.0

    def _run(self, cfg: dict, seed: int, plot: str | None, rep) -> None:
        import theorylab as tl
        from theorylab.algorithms.planning import robust as R
        from theorylab.algorithms.planning.soft_value_iteration import soft_value_iteration
        from theorylab.algorithms.robust import drrpo as D
        from theorylab.algorithms.robust import drrpo_online as O

        K, beta, rho = cfg["K"], self.beta, self.rho
        cases = [
            (f"random:S=5,A=3,gamma=0.8,seed={seed + i}", f)
            for i in range(cfg["random"])
            for f in cfg["features"]
        ] + [("riverswim:S=4,gamma=0.8", "tabular")]
        kw = {"beta": beta, "eta": self.eta, "bonus": self.bonus}
        slopes, ratios_ok, soft_gap, nom_slopes, edges, score_gap = [], True, 0.0, [], [], 0.0
        tab_dual, tab_diag, curves, river_slopes = 0.0, 0.0, {}, []
        for spec, feats in cases:
            mdp = _discounted(spec)
            model = D.d_rectangular(mdp, feats)
            runs = [
                tl.run(
                    "dr-rpo-online", spec, iterations=K, rho=rho, features=feats,
                    sample_seed=seed + j, **kw,
                )
                for j in range(cfg["seeds"])
            ]  # fmt: skip
            regret = np.mean([np.asarray(r.config["regret"]) for r in runs], axis=0)  # (K,)
            slope, ratio = _slope_and_ratios(regret, K)
            slopes.append(slope)
            ratios_ok &= ratio[-1] <= 1.25 * ratio[0]
            label = f"{spec.split(',seed')[0].split(':')[0]} {feats}"
            curves.setdefault(f"{label} (rho = {rho:g})", regret / np.sqrt(np.arange(1, K + 1)))
            # (v) the learner's scores against the floor's robust evaluation (value iteration)
            ref = np.full((model.S, model.A), 1.0 / model.A)
            for k in (0, K // 2, K):
                pi = np.asarray(runs[0].policies[k])
                V, _, _ = D.robust_regularised_evaluation(model, pi, beta, ref, rho, tol=1e-11)
                score_gap = max(score_gap, abs(float(V @ model.mu0) - runs[0].regularised[k]))
            # (ii) rho = 0: the non-robust learner against the floor's soft-VI optimum
            nom = tl.run(
                "dr-rpo-online", spec, iterations=K, rho=0.0, features=feats, sample_seed=seed,
                **kw,
            )  # fmt: skip
            if feats == "tabular":
                soft = soft_value_iteration(mdp, beta)
                soft_gap = max(soft_gap, abs(float(soft.V @ mdp.mu0) - nom.target_value))
            nom_slope = _slope_and_ratios(np.asarray(nom.config["regret"]), K)[0]
            (nom_slopes if spec.startswith("random") else river_slopes).append(nom_slope)
            # (iv) under the rho = 0 learner's worst kernel, where the exact optima differ
            p_rob, p_nom = np.asarray(runs[0].policies[-1]), np.asarray(nom.policies[-1])
            _, pi_nom_star = D.robust_soft_optimum(model, beta, ref, 0.0)
            J_nom_star = O.exact_returns(model, pi_nom_star[None], beta, rho, plain=False)[0][0]
            separated = float(runs[0].target_value) - float(J_nom_star) > 0.01
            if feats == "tabular" and separated:
                worst = R.robust_value_iteration(
                    mdp, "tv", rho, policy=p_nom, reward=_regularised_reward(mdp, p_nom, beta)
                ).worst
                under = [
                    float(
                        R.kernel_value(mdp, worst, p, _regularised_reward(mdp, p, beta)) @ mdp.mu0
                    )
                    for p in (p_rob, p_nom)
                ]
                edges.append(under[0] - under[1])
            if feats == "tabular":
                # (iii) one-hot: the learner's ridge state is the counts; its dual the floor's
                run = O.learn(model, 50, rho=rho, lam=1.0, seed=seed, **kw)
                N = run.Lambda.diagonal() - 1.0
                off = run.Lambda - np.diag(run.Lambda.diagonal())
                tab_diag = max(
                    tab_diag, float(np.abs(off).max()), float(np.abs(N - run.B.sum(1)).max())
                )
                seen = N > 0
                p_hat = run.B[seen] / N[seen, None]
                V_star, _ = D.robust_soft_optimum(model, beta, ref, rho)
                ours = O.factor_robust_estimate(p_hat, V_star, rho)
                floor, _ = R.inner_tv(p_hat, V_star, rho)
                tab_dual = max(tab_dual, float(np.abs(ours - floor).max()))
        edge_a = np.array(edges)
        rep.checks.extend(
            [
                Check(
                    "regret sublinear: slope <= 0.75, regret/sqrt(k) bounded",
                    bool(max(slopes) <= 0.75 and ratios_ok),
                    f"log-log slopes through K/4..K = {', '.join(f'{s:.2f}' for s in slopes)}; "
                    f"regret(K)/sqrt(K) <= 1.25 regret(K/4)/sqrt(K/4) on every MDP: {ratios_ok}",
                    {"max_slope": max(slopes), "slopes": slopes},
                ),
                Check(
                    "rho = 0: the non-robust regularised learner",
                    bool(soft_gap <= 1e-9 and max(nom_slopes) <= 0.75),
                    f"|J*(rho = 0) - V_softVI(mu0)| = {soft_gap:.1e}; regret slopes against it "
                    f"{', '.join(f'{s:.2f}' for s in nom_slopes)} (random MDPs); riverswim "
                    f"{', '.join(f'{s:.2f}' for s in river_slopes)} (reported)",
                    {"soft_gap": soft_gap, "max_nominal_slope": max(nom_slopes)},
                ),
                Check(
                    "one-hot features: the tabular case",
                    bool(tab_diag <= 1e-9 and tab_dual <= 1e-9),
                    f"Lambda = diag(N + lam) to {tab_diag:.1e}; TV dual on p_hat vs water-filling "
                    f"{tab_dual:.1e}",
                    {"diag": tab_diag, "dual": tab_dual},
                ),
                Check(
                    "robust beats nominal under the nominal learner's worst kernel",
                    bool(edge_a.size > 0 and edge_a.min() > 0.01),
                    f"J_rob - J_nom under P_worst(nom) on {edge_a.size} MDPs whose optima "
                    f"differ: {', '.join(f'{e:.3f}' for e in edge_a)}",
                    {"min_edge": float(edge_a.min()) if edge_a.size else float("nan")},
                ),
                Check(
                    "scores = the floor's robust evaluation",
                    score_gap <= 1e-8,
                    f"max |J_learner(pi_k) - J_floor(pi_k)| at k = 0, K/2, K: {score_gap:.1e}",
                    {"score_gap": score_gap},
                ),
            ]
        )
        if plot:
            from theorylab.plotting import plot_policy_path

            ax = plot_policy_path(
                curves,
                ylabel="regret(k) / sqrt(k) (mean over seeds)",
                title=f"DR-RPO online (rho = {rho:g}, beta = {beta:g}, bonus {self.bonus:g})",
                logy=True,
            )
            save_claim_figure(ax, plot)


register_validation(
    DRRPOOnlineRegretSublinear(),
    controls=("dr-rpo-online-no-bonus", "dr-rpo-online-nominal"),
    papers=("000#22", "001#49"),
)
