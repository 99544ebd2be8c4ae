r"""Dual-RL claims: strong duality of dual-V, the alpha -> 0 rate, REPS' binding KL, DualDICE's
N^(-1/2) OPE rate, and the CMDP last iterate of optimistic vs plain GDA.

Each claim has a ``quick`` scale (seconds, run in CI by tests/test_validations.py) and a ``full``
scale (``-m slow``), and takes the solver it checks as a field, so that a known-bug mutation can be
run through the same checks (tests/test_dual_claims.py shows each mutation failing its claim).
The same bugs patched into the library are the claims' registered controls
(theorylab.validations.mutations: ``dual-v-plain-conjugate``, ``dual-v-sqrt-alpha``,
``reps-eta-fixed``, ``dualdice-behaviour-policy``, ``cmdp-ogda-no-optimism``), which
``validate`` runs:

1. ``dual-v-strong-duality`` -- on seeded random MDPs (S <= 6, A <= 3, gamma in {0.5, 0.9, 0.99},
   full-support Dirichlet d^O, alpha in {0.01, 0.1, 1}) and f in {KL, chi^2, half-chi^2}, the
   dual-V minimiser's recovered d satisfies the flow constraint to 1e-8, is >= 0, and
   ``dual(V) - primal(d)`` is within 1e-8 of 0 (both objectives recomputed here). Mutation: the
   dual-V objective with the plain conjugate f* instead of f*_p (the paper's eq. (9) typo carried
   into dual-V): d goes negative.
2. ``dual-v-alpha-to-zero`` -- ``0 <= J_LP - J(alpha) <= alpha D_f(d_LP || d^O)`` for every alpha
   in [1e-6, 1] and f in {KL, chi^2, half-chi^2, TV} (regularized_objectives.py); the log-log
   slope of the gap on the lowest quarter of the log alpha range, [1e-6, 3e-5], lies in
   [0.9, 1.1] (rate alpha^1), and at alpha = 1e-6 the gap divided by
   ``alpha D_f(d_LP || d^O)`` is within 1e-2 of 1 (measured: within 6e-4 on every curve -- the
   first-order term of the gap is exactly the divergence of the LP optimum, its reward loss is
   o(alpha)). The window is where the ratio has converged: a first full-scale run on
   [1e-4, 1] measured slopes down to 0.845 on [1e-4, 1e-2] and 0.886 on [1e-4, 1e-3] (one MDP
   with a small action gap, whose ratio is 0.77 at alpha = 1e-3 and 0.99 at 3e-4). Mutation: a
   solver that uses sqrt(alpha) where alpha belongs.
3. ``reps-binding-kl`` -- REPS on random MDPs with q the stationary distribution of a random
   behaviour policy, epsilon in {0.01, 0.05, 0.2}: KL(mu* || q) = epsilon to 1e-8, stationarity
   residual <= 1e-8, dual = primal to 1e-8; and q perturbed so that no stationary mu lies within
   epsilon raises InfeasibleREPSError. Mutation: REPS with eta fixed at 1 (not minimised).
4. ``dualdice-ope-rate`` -- DualDICE's OPE error on ``random:S=5,A=2`` (gamma = 0.9, uniform
   behaviour, target pi*): the log-log slope of the RMSE over seeds in N has a bootstrap 95% CI
   containing -1/2 and a point estimate in [-0.65, -0.35]. Negative control: the behaviour
   policy's own plug-in value as the "estimate" (a non-learning estimator: its error does not
   vanish).
5. ``cmdp-ogda-last-iterate`` -- ReLOAD (000#1) through ``tl.run("reload", ...)``: on a random
   CMDP whose cost constraint binds, OGDA's last iterate reaches the optimum of an independent
   LP (scipy's linprog on the occupancy LP built in the claim; lambda_T -> its multiplier; max
   of reward gap and constraint violation <= 1e-6 over the last 10% of the run), plain GDA's
   last iterate does not (>= 0.05 there: it oscillates) while
   GDA's averaged iterate does (<= 0.01). The CMDPs are redrawn until the optimal multiplier is
   at most 2: on the first full-scale draw one CMDP had lambda* = 4.0 and OGDA's error there was
   still 9e-3 (falling, about halving every 1500 steps) after 5000 steps at step 1, with GDA's
   oscillation only 0.039 -- OGDA's linear rate (Wei et al. 2021) has an instance-dependent
   constant, and lambda starts at 0. Negative control: the claim run with the optimistic
   step switched off (plain GDA in OGDA's place).
6. ``dual-v-finite-horizon`` -- the finite-horizon (stage-wise flow, one d^O_h per stage) dual-V
   on seeded random stage-dependent MDPs (H in 1..6): d >= 0, every stage's flow residual
   <= 1e-8, gap <= 1e-8, and ``0 <= V*_0(mu) - J(alpha) <= alpha sum_h D_f(d_LP,h || d^O_h)``
   for alpha in [1e-5, 1] against backward induction. Controls: the plain-conjugate mutation
   (d < 0, gap) and the sqrt(alpha) mutation (the alpha bound).
7. ``mocan-one-shot-dual`` -- MoCAN (000#62) on seeded safety bandits: the closed-form dual
   D(lambda) is convex and minimised at the one-shot lambda*, which equals cvxpy's multiplier on
   the response simplex (and D(lambda*) its optimum), the primal-dual baseline's limit, and makes
   the constraint bind when active (lambda* = 0 when not). Control: the dual with beta dropped.
8. ``general-utility-pg-global-optimum`` -- general utilities (000#14 / 001#65): cvxpy's optimum
   of a concave F on the occupancy polytope lies in Frank-Wolfe's certified bracket, the
   chain-rule gradient equals finite differences, exact softmax PG reaches F* (gap < 5% of the
   initial, polynomial decay), and the linear utility is ordinary PG. Control: the pseudo-reward
   frozen at the initial occupancy (PG on a fixed reward).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from theorylab.validations.claim import Check, Report
from theorylab.validations.claim import finished_report as _report
from theorylab.validations.registry import register_validation

# Sikchi et al., "Dual RL": its two seed-catalogue rows (as on the algorithms it checks)
DUAL_RL_PAPERS = ("000#6", "002-004#F1")

SMOOTH = ("kl", "chi2", "half-chi2")
SEED_CHUNK = 25  # DualDICE datasets are drawn 25 seeds at a time (memory)


def random_instance(rng: np.random.Generator, S: int, A: int, gamma: float):
    """A random MDP (Dirichlet rows, uniform rewards, uniform mu0) and a full-support d^O."""
    from theorylab.mdps import TabularMDP

    mdp = TabularMDP(
        rng.dirichlet(np.ones(S), size=(S, A)),
        rng.uniform(size=(S, A)),
        np.ones(S) / S,
        gamma=gamma,
    )
    return mdp, rng.dirichlet(np.ones(S * A)).reshape(S, A)


# --------------------------------------------------------------------------- 1. strong duality
def dual_v_solver(mdp, d_ref, alpha, f):
    """The solver under test: ``(V (S,), d (S, A))`` from the dual-V form."""
    from theorylab.algorithms.dual import solve_dual_v

    sol = solve_dual_v(mdp, d_ref, alpha, f)
    return sol.V, sol.occupancy


def plain_conjugate_mutant(mdp, d_ref, alpha, f):
    """Known-bug mutation: dual-V minimised with the plain conjugate f* (no d >= 0 multiplier)."""
    from theorylab.algorithms.dual import divergence
    from theorylab.algorithms.dual.smooth_dual_solver import Conjugate, minimize_smooth_dual
    from theorylab.algorithms.planning.lp import discounted_lp_matrix

    f = divergence(f)
    g = mdp.gamma
    on = np.flatnonzero(d_ref.ravel() > 0)
    M = discounted_lp_matrix(mdp, g)[on].tocsr()
    r = mdp.reward(0).ravel()[on]
    conj = Conjugate(f.conjugate, f.conjugate_derivative, f.conjugate_second_derivative)
    V0 = np.full(mdp.S, r.max() / (1 - g))
    res = minimize_smooth_dual(M, (1 - g) * mdp.mu0, r, d_ref.ravel()[on], alpha, conj, V0)
    d = np.zeros(mdp.S * mdp.A)
    d[on] = d_ref.ravel()[on] * f.conjugate_derivative((r - M @ res.x) / alpha)
    return res.x, d.reshape(mdp.S, mdp.A)


@dataclass(frozen=True)
class DualVStrongDuality:
    name: str = "dual-v-strong-duality"
    statement: str = (
        "For KL, Pearson chi^2 and OptiDICE's half chi^2 on seeded random MDPs (S in 2..6, A in "
        "1..3, gamma in {0.5, 0.9, 0.99}, full-support d^O, alpha in {0.01, 0.1, 1}), the dual-V "
        "minimiser's recovered occupancy d = d^O max(0, (f')^-1(delta_V / alpha)) is >= 0, "
        "satisfies the flow constraint to 1e-8, and dual-V(V) - primal(d) is within 1e-8 of 0 "
        "(objectives recomputed by the claim). Quick: 8 MDPs; full: 100."
    )
    scales: dict[str, int] = field(default_factory=lambda: {"quick": 8, "full": 100})
    solver: Callable = dual_v_solver

    def run(self, scale="quick", *, plot=None, progress=False, seed=0) -> Report:
        from theorylab.algorithms.dual import divergence
        from theorylab.algorithms.dual.regularized_objectives import (
            dual_v_objective,
            primal_objective,
        )
        from theorylab.algorithms.planning.lp import flow_residual

        t0 = time.perf_counter()
        rng = np.random.default_rng(seed)
        worst_gap = worst_flow = 0.0
        worst_neg = 0.0
        solved = 0
        for _ in range(self.scales[scale]):
            S, A = int(rng.integers(2, 7)), int(rng.integers(1, 4))
            gamma = float(rng.choice([0.5, 0.9, 0.99]))
            mdp, d_ref = random_instance(rng, S, A, gamma)
            for name in SMOOTH:
                f = divergence(name)
                for alpha in (0.01, 0.1, 1.0):
                    V, d = self.solver(mdp, d_ref, alpha, name)
                    dual = dual_v_objective(mdp, V, d_ref, alpha, f, gamma, mdp.mu0)
                    primal = primal_objective(mdp, np.maximum(d, 0), d_ref, alpha, f)
                    worst_gap = max(worst_gap, abs(dual - primal))
                    worst_flow = max(worst_flow, float(np.abs(flow_residual(mdp, d)).max()))
                    worst_neg = max(worst_neg, float(-d.min()))
                    solved += 1
        checks = [
            Check(
                "d >= 0",
                worst_neg <= 0.0,
                f"most negative recovered d(s, a) = {-worst_neg:.3g} over {solved} solves",
                {"most_negative": -worst_neg},
            ),
            Check(
                "flow residual <= 1e-8",
                worst_flow <= 1e-8,
                f"max flow residual = {worst_flow:.2e} over {solved} solves",
                {"max_flow_residual": worst_flow},
            ),
            Check(
                "duality gap <= 1e-8",
                worst_gap <= 1e-8,
                f"max |dual - primal| = {worst_gap:.2e} over {solved} solves",
                {"max_gap": worst_gap},
            ),
        ]
        cfg = {"instances": self.scales[scale], "seed": seed, "solves": solved}
        return _report(self.name, self.statement, scale, checks, t0, cfg)


# --------------------------------------------------------------------------- 2. alpha -> 0
def regularised_value(mdp, d_ref, alpha, f) -> float:
    """J(alpha) from the dual-V solver."""
    from theorylab.algorithms.dual import solve_dual_v

    return solve_dual_v(mdp, d_ref, alpha, f).primal_value


def sqrt_alpha_mutant(mdp, d_ref, alpha, f) -> float:
    """Known-bug mutation: sqrt(alpha) used where alpha belongs."""
    return regularised_value(mdp, d_ref, np.sqrt(alpha), f)


@dataclass(frozen=True)
class AlphaToZero:
    name: str = "dual-v-alpha-to-zero"
    statement: str = (
        "As alpha -> 0 the f-regularised optimum J(alpha) tends to the occupancy-LP value J_LP at "
        "rate alpha: for KL, chi^2, half chi^2 and TV on seeded random MDPs (S = 5, A = 3, gamma "
        "= 0.9, Dirichlet(2) d^O), 0 <= J_LP - J(alpha) <= alpha D_f(d_LP || d^O) at every alpha "
        "in a log grid over [1e-6, 1]; the log-log slope of the gap on the lowest quarter of the "
        "log grid (alpha in [1e-6, 3e-5]) lies in [0.9, 1.1]; and at alpha = 1e-6 the gap / "
        "(alpha D_f(d_LP || d^O)) is within 1e-2 of 1. Quick: 2 MDPs, 13 alphas; full: 20 MDPs, "
        "25 alphas."
    )
    scales: dict[str, tuple[int, int]] = field(
        default_factory=lambda: {"quick": (2, 13), "full": (20, 25)}
    )
    value: Callable = regularised_value

    def run(self, scale="quick", *, plot=None, progress=False, seed=0) -> Report:
        from theorylab.algorithms.dual import divergence
        from theorylab.algorithms.planning.lp import discounted_lp
        from theorylab.stats import loglog_slope

        t0 = time.perf_counter()
        n_mdps, n_alpha = self.scales[scale]
        alphas = np.logspace(-6, 0, n_alpha)
        rng = np.random.default_rng(seed + 7)
        bound_ok = True
        worst_excess = -np.inf
        slopes, ratios = {}, {}
        for i in range(n_mdps):
            mdp, _ = random_instance(rng, 5, 3, 0.9)
            d_ref = rng.dirichlet(2 * np.ones(15)).reshape(5, 3)
            lp = discounted_lp(mdp)
            J_lp = (1 - mdp.gamma) * lp.value
            for name in (*SMOOTH, "tv"):
                D = divergence(name).divergence(lp.occupancy, d_ref)
                gaps = np.array([J_lp - self.value(mdp, d_ref, a, name) for a in alphas])
                excess = np.maximum(gaps - alphas * D, -gaps)  # > 0 violates 0 <= gap <= aD
                worst_excess = max(worst_excess, float(excess.max()))
                bound_ok &= bool(np.all(excess <= 1e-9))
                fit = loglog_slope(alphas, np.maximum(gaps, 1e-300)[None], fit_range=(0.0, 0.25))
                slopes[f"{i}/{name}"] = fit.slope
                ratios[f"{i}/{name}"] = float(gaps[0] / (alphas[0] * D))
        sl = np.array(list(slopes.values()))
        ra = np.array(list(ratios.values()))
        checks = [
            Check(
                "0 <= J_LP - J(alpha) <= alpha D_f(d_LP || d^O)",
                bound_ok,
                f"max violation {worst_excess:.2e} (tolerance 1e-9) over {len(slopes)} curves",
                {"max_violation": worst_excess},
            ),
            Check(
                "rate alpha^1",
                bool(np.all((sl >= 0.9) & (sl <= 1.1))),
                f"log-log slopes on alpha in [1e-6, 3e-5]: min {sl.min():.3f}, max {sl.max():.3f}"
                " (range [0.9, 1.1])",
                {"slopes": slopes},
            ),
            Check(
                "gap / (alpha D_f) -> 1",
                bool(np.all(np.abs(ra - 1) <= 1e-2)),
                f"at alpha = 1e-6: min {ra.min():.4f}, max {ra.max():.4f} (within 1e-2 of 1)",
                {"ratios": ratios},
            ),
        ]
        cfg = {"mdps": n_mdps, "alphas": alphas.tolist(), "seed": seed}
        return _report(
            self.name, self.statement, scale, checks, t0, cfg, slope=float(np.median(sl))
        )


# --------------------------------------------------------------------------- 3. REPS
def stationary_pairs(mdp, pi) -> np.ndarray:
    """The stationary state-action distribution of a policy (least squares on d (P_pi - I) = 0)."""
    P_pi = np.einsum("sa,sat->st", pi, mdp.dense_P())
    S = mdp.S
    lhs = np.vstack([(P_pi - np.eye(S)).T, np.ones(S)])
    d = np.linalg.lstsq(lhs, np.r_[np.zeros(S), 1.0], rcond=None)[0]
    return d[:, None] * pi


def reps_solver(mdp, q, epsilon):
    from theorylab.algorithms.dual.reps import reps

    sol = reps(mdp, q, epsilon)
    return sol.mu, sol.V, sol.eta, sol.dual_value


def fixed_eta_mutant(mdp, q, epsilon):
    """Known-bug mutation: eta fixed at 1 (the tilt is not tuned to the KL bound)."""
    from theorylab.algorithms.dual.reps import reps, reps_dual

    V = reps(mdp, q, epsilon).V
    delta = mdp.reward(0) + mdp.expected_next(V) - V[:, None]
    mu = q * np.exp(delta - delta.max())
    return mu / mu.sum(), V, 1.0, reps_dual(1.0, V, mdp, q, epsilon)


@dataclass(frozen=True)
class REPSBindingKL:
    name: str = "reps-binding-kl"
    statement: str = (
        "REPS (Peters et al. 2010) solved exactly on seeded random MDPs (S in 3..6, A in 2..3) "
        "with q the stationary distribution of a random behaviour policy and epsilon in {0.01, "
        "0.05, 0.2}: KL(mu* || q) = epsilon to 1e-8 (the constraint binds), the stationarity "
        "residual of mu* is <= 1e-8, and g(eta*, V*) = sum mu* r to 1e-8; with q perturbed so that "
        "the closest stationary distribution is farther than epsilon, the solver raises instead of "
        "returning the unbounded dual's number. Quick: 4 MDPs; full: 50."
    )
    scales: dict[str, int] = field(default_factory=lambda: {"quick": 4, "full": 50})
    solver: Callable = reps_solver

    def run(self, scale="quick", *, plot=None, progress=False, seed=0) -> Report:
        from theorylab.algorithms.dual.reps import InfeasibleREPSError, i_projection, kl_divergence

        t0 = time.perf_counter()
        rng = np.random.default_rng(seed + 11)
        worst_kl = worst_stat = worst_gap = 0.0
        raised = tried = 0
        for _ in range(self.scales[scale]):
            S, A = int(rng.integers(3, 7)), int(rng.integers(2, 4))
            mdp, _ = random_instance(rng, S, A, 0.9)
            pi = rng.dirichlet(np.ones(A), size=S)
            q = stationary_pairs(mdp, pi)
            for eps in (0.01, 0.05, 0.2):
                mu, V, eta, dual = self.solver(mdp, q, eps)
                primal = float(np.sum(mu * mdp.reward(0)))
                stat = mdp.P_flat(0).T @ mu.ravel() - mu.sum(axis=1)
                worst_kl = max(worst_kl, abs(kl_divergence(mu, q) - eps))
                worst_stat = max(worst_stat, float(np.abs(stat).max()))
                worst_gap = max(worst_gap, abs(dual - primal))
            noisy = q * rng.uniform(0.2, 1.8, size=q.shape)
            noisy /= noisy.sum()
            min_kl, _ = i_projection(mdp, noisy)
            tried += 1
            try:
                self.solver(mdp, noisy, 0.5 * min_kl)
            except InfeasibleREPSError:
                raised += 1
        checks = [
            Check(
                "KL(mu* || q) = epsilon",
                worst_kl <= 1e-8,
                f"max |KL - epsilon| = {worst_kl:.2e}",
                {"max_error": worst_kl},
            ),
            Check(
                "stationarity",
                worst_stat <= 1e-8,
                f"max residual {worst_stat:.2e}",
                {"max_error": worst_stat},
            ),
            Check(
                "dual = primal",
                worst_gap <= 1e-8,
                f"max |g - sum mu r| = {worst_gap:.2e}",
                {"max_error": worst_gap},
            ),
            Check(
                "infeasible q raises",
                raised == tried,
                f"{raised} of {tried} infeasible instances raised InfeasibleREPSError",
                {"raised": raised},
            ),
        ]
        return _report(self.name, self.statement, scale, checks, t0, {"mdps": self.scales[scale]})


# --------------------------------------------------------------------------- 4. DualDICE rate
def dualdice_estimator(mdp, dataset, pi) -> np.ndarray:
    from theorylab.algorithms.dual.dualdice import dualdice

    return dualdice(dataset, pi).value


def behaviour_value_estimator(mdp, dataset, pi) -> np.ndarray:
    """Negative control: estimates the behaviour policy's value instead of the target's."""
    from theorylab.algorithms.dual.dualdice import dualdice

    return dualdice(dataset, dataset.behaviour).value


@dataclass(frozen=True)
class DICERate:
    name: str = "dualdice-ope-rate"
    statement: str = (
        "DualDICE (tabular, exact sub-problems) estimates V^pi*(mu0) on random:S=5,A=2 (gamma = "
        "0.9) from N uniform-behaviour samples of d^pi_b with error falling like N^(-1/2): the "
        "log-log slope of the RMSE over seeds in N has a bootstrap 95% CI containing -1/2 and a "
        "point estimate in [-0.65, -0.35]. Quick: N in 1e3..3e4 (6 points), 48 seeds; full: "
        "N in 1e3..3e5 (9 points), 200 seeds."
    )
    scales: dict[str, tuple[float, int, int]] = field(
        default_factory=lambda: {"quick": (3e4, 6, 48), "full": (3e5, 9, 200)}
    )
    estimator: Callable = dualdice_estimator

    def run(self, scale="quick", *, plot=None, progress=False, seed=0) -> Report:
        import theorylab as tl
        from theorylab.algorithms.offline import make_dataset
        from theorylab.algorithms.planning.lp import discounted_lp, occupancy_measure
        from theorylab.stats import loglog_slope

        t0 = time.perf_counter()
        n_max, n_points, seeds = self.scales[scale]
        Ns = np.unique(np.logspace(3, np.log10(n_max), n_points).astype(int))
        mdp = tl.make("random:S=5,A=2,gamma=0.9").with_objective(gamma=0.9)
        pi = discounted_lp(mdp).policy
        truth = float(np.sum(occupancy_measure(mdp, pi) * mdp.reward(0))) / (1 - mdp.gamma)
        sq = np.empty((seeds, Ns.size))
        for j, N in enumerate(Ns):
            for lo_seed in range(
                0, seeds, SEED_CHUNK
            ):  # a seed's data does not depend on its batch
                idx = list(range(lo_seed, min(seeds, lo_seed + SEED_CHUNK)))
                data = make_dataset(mdp, int(N), coverage=0.0, seeds=idx, seed=seed)
                sq[idx, j] = (self.estimator(mdp, data, pi) - truth) ** 2
        # RMSE = sqrt(mean of squared errors): fit the MSE's slope and halve it
        fit = loglog_slope(Ns, sq, fit_range=(0.0, 1.0), rng=seed)
        slope, lo, hi = fit.slope / 2, fit.ci_low / 2, fit.ci_high / 2
        checks = [
            Check(
                "RMSE ~ N^(-1/2)",
                lo <= -0.5 <= hi and -0.65 <= slope <= -0.35,
                f"slope {slope:.3f} [{lo:.3f}, {hi:.3f}] (CI must contain -0.5; point estimate "
                "in [-0.65, -0.35])",
                {"slope": slope, "ci": [lo, hi]},
            )
        ]
        cfg = {
            "N": Ns.tolist(),
            "seeds": seeds,
            "rmse": np.sqrt(sq.mean(axis=0)).tolist(),
            "truth": truth,
        }
        return _report(
            self.name, self.statement, scale, checks, t0, cfg, slope=slope, slope_ci=(lo, hi)
        )


# --------------------------------------------------------------------------- 5. CMDP
MAX_MULTIPLIER = 2.0


def binding_cmdp(rng: np.random.Generator):
    """A random CMDP (S = 4, A = 2, gamma = 0.8, one uniform cost) whose bound binds (80% of the
    way from the least cost to the unconstrained optimum's, the runner's ``threshold="binding"``),
    redrawn until its optimal multiplier (:func:`cmdp_linprog`) is at most MAX_MULTIPLIER (module
    docstring: OGDA's linear rate degrades with lambda*)."""
    from theorylab.runners.constrained import binding_threshold

    while True:
        mdp, _ = random_instance(rng, 4, 2, 0.8)
        c = rng.uniform(size=(4, 2))
        b = binding_threshold(mdp, c)
        lam = cmdp_linprog(mdp, c, b)[1]
        if 1e-6 < lam <= MAX_MULTIPLIER:
            return mdp, c, b


def cmdp_linprog(mdp, cost: np.ndarray, b: float) -> tuple[float, float]:
    """``(V*, lambda*)`` of ``max V_r(mu0) s.t. V_c(mu0) <= b`` by scipy's linprog on the
    occupancy LP built here from P (not the library's cvxpy CMDP LP): lambda* = dV*/db, minus the
    marginal of the cost row. cost ``(S, A)``."""
    from scipy.optimize import linprog

    S, A, g = mdp.S, mdp.A, mdp.gamma
    P = mdp.dense_P().reshape(S * A, S)  # (S*A, S)
    M = np.repeat(np.eye(S), A, axis=0) - g * P  # (S*A, S): flow M^T d = (1 - g) mu0
    r = np.asarray(mdp.reward(0), dtype=np.float64).ravel()
    res = linprog(
        -r / (1 - g),
        A_ub=cost.ravel()[None] / (1 - g),
        b_ub=[b],
        A_eq=M.T,
        b_eq=(1 - g) * mdp.mu0,
        bounds=(0, None),
        method="highs",
    )
    if res.status != 0:
        raise RuntimeError(f"linprog on the CMDP: {res.message}")
    return float(-res.fun), float(-res.ineqlin.marginals[0])


def _cmdp_error(value, excess, v_star: float, tail: int) -> float:
    """``max(|V_r - V*|, cost excess^+)`` over the last ``tail`` rows of a run."""
    err = np.maximum(np.abs(np.asarray(value) - v_star), np.maximum(np.asarray(excess), 0.0))
    return float(err[-tail:].max())


@dataclass(frozen=True)
class CMDPLastIterate:
    name: str = "cmdp-ogda-last-iterate"
    statement: str = (
        "ReLOAD (seed row 000#1) through tl.run: on seeded random CMDPs (S = 4, A = 2, gamma = "
        "0.8, one cost whose bound binds: 80% of the way from the least cost to the "
        "unconstrained optimum's; optimal multiplier in (0, 2]), `reload` (OGDA) and plain GDA "
        "(`reload` with optimistic=False) run exactly in occupancy space (step 1, lambda in "
        "[0, 10]): against V* and lambda* of scipy's linprog on the occupancy LP, OGDA's last "
        "iterate reaches the optimum (max(|V_r - V*|, cost excess) <= 1e-6 over the last 10% of "
        "iterations) and its lambda_T is within 1e-6 of lambda*, GDA's last iterate does not "
        "(>= 0.05 there: it oscillates) and GDA's running average does (<= 0.01). Quick: 1500 "
        "iterations on 1 CMDP; full: 5000 iterations on 5 CMDPs."
    )
    scales: dict[str, tuple[int, int]] = field(
        default_factory=lambda: {"quick": (1500, 1), "full": (5000, 5)}
    )
    optimistic: bool = True

    def run(self, scale="quick", *, plot=None, progress=False, seed=0) -> Report:
        from theorylab.experiment import run as tl_run

        t0 = time.perf_counter()
        steps, n = self.scales[scale]
        rng = np.random.default_rng(seed + 3)
        ogda_last, ogda_lam, gda_last, gda_avg, lam_star, lp_diff = [], [], [], [], [], []
        tail = max(1, steps // 10)
        for _ in range(n):
            mdp, c, b = binding_cmdp(rng)
            v_star, lam = cmdp_linprog(mdp, c, b)
            budget = {"iterations": steps, "cost": c, "threshold": b, "eta": 1.0}
            o = tl_run("reload", mdp, optimistic=self.optimistic, **budget)
            p = tl_run("reload", mdp, optimistic=False, **budget)
            # measured against the independent LP, not the run's own optimum
            ogda_last.append(_cmdp_error(o.primal, o.constraint, v_star, tail))
            ogda_lam.append(abs(float(o.multiplier[-1]) - lam))
            gda_last.append(_cmdp_error(p.primal, p.constraint, v_star, tail))
            gda_avg.append(_cmdp_error(p.average_primal, p.average_constraint, v_star, tail))
            lam_star.append(lam)
            lp_diff.append(abs(float(o.optimum[0]) - v_star))
        checks = [
            Check(
                "the run's CMDP LP (cvxpy) = linprog's",
                max(lp_diff) <= 1e-8,
                f"max |V*_run - V*_linprog| = {max(lp_diff):.2e} (<= 1e-8)",
                {"difference": lp_diff},
            ),
            Check(
                "OGDA last iterate -> optimum",
                max(ogda_last) <= 1e-6,
                f"max over CMDPs of the tail error: {max(ogda_last):.2e} (<= 1e-6)",
                {"tail": ogda_last},
            ),
            Check(
                "OGDA lambda_T -> lambda*",
                max(ogda_lam) <= 1e-6,
                f"max over CMDPs of |lambda_T - lambda*|: {max(ogda_lam):.2e} (<= 1e-6; "
                f"lambda* = {', '.join(f'{v:.4f}' for v in lam_star)})",
                {"error": ogda_lam, "lambda_star": lam_star},
            ),
            Check(
                "GDA last iterate oscillates",
                min(gda_last) >= 0.05,
                f"min over CMDPs of the tail error: {min(gda_last):.3f} (>= 0.05)",
                {"tail": gda_last},
            ),
            Check(
                "GDA average -> optimum",
                max(gda_avg) <= 0.01,
                f"max over CMDPs of the averaged iterate's tail error: {max(gda_avg):.2e}",
                {"tail": gda_avg},
            ),
        ]
        cfg = {"iterations": steps, "cmdps": n, "seed": seed, "via": "tl.run('reload')"}
        return _report(self.name, self.statement, scale, checks, t0, cfg)


# --------------------------------------------------------------------------- 6. finite horizon
def random_finite_horizon_instance(rng: np.random.Generator, S: int, A: int, H: int):
    """A random stage-dependent finite-horizon MDP and a full-support d^O ``(H, S, A)``."""
    from theorylab.mdps import TabularMDP

    mdp = TabularMDP(
        rng.dirichlet(np.ones(S), size=(H, S, A)),
        rng.uniform(size=(H, S, A)),
        rng.dirichlet(np.ones(S)),
        horizon=H,
    )
    return mdp, rng.dirichlet(np.ones(S * A), size=H).reshape(H, S, A)


@dataclass(frozen=True)
class FiniteHorizonDualV:
    name: str = "dual-v-finite-horizon"
    statement: str = (
        "Finite horizon, stage-wise flow, one d^O_h per stage: for KL, Pearson chi^2 and half "
        "chi^2 on seeded random stage-dependent MDPs (S in 2..6, A in 1..3, H in 1..6, "
        "full-support d^O_h, alpha in {0.01, 0.1, 1}) the dual-V minimiser's recovered d is >= 0, "
        "satisfies every stage's flow constraint to 1e-8, and dual-V(V) - primal(d) is within "
        "1e-8 of 0; and 0 <= V*_0(mu) - J(alpha) <= alpha sum_h D_f(d_LP,h || d^O_h) (+1e-9) for "
        "alpha in {1, 1e-1, ..., 1e-5}, with V* from backward induction and d_LP from the "
        "finite-horizon occupancy LP. Quick: 3 MDPs; full: 100."
    )
    scales: dict[str, int] = field(default_factory=lambda: {"quick": 3, "full": 100})
    solver: Callable = dual_v_solver

    def run(self, scale="quick", *, plot=None, progress=False, seed=0) -> Report:
        from theorylab.algorithms.dual import divergence
        from theorylab.algorithms.dual.regularized_objectives import (
            dual_v_objective,
            primal_objective,
        )
        from theorylab.algorithms.planning import backward_induction
        from theorylab.algorithms.planning.lp import finite_horizon_lp, flow_residual

        t0 = time.perf_counter()
        rng = np.random.default_rng(seed + 18)
        worst_gap = worst_flow = worst_neg = 0.0
        worst_excess = -np.inf
        solved = 0
        for _ in range(self.scales[scale]):
            S, A, H = int(rng.integers(2, 7)), int(rng.integers(1, 4)), int(rng.integers(1, 7))
            mdp, d_ref = random_finite_horizon_instance(rng, S, A, H)
            J_star = backward_induction(mdp).value
            d_lp = finite_horizon_lp(mdp).occupancy
            for name in SMOOTH:
                f = divergence(name)
                D_lp = f.divergence(d_lp, d_ref)
                for alpha in (1e-5, 1e-4, 1e-3, 1e-2, 0.1, 1.0):
                    V, d = self.solver(mdp, d_ref, alpha, name)
                    primal = primal_objective(mdp, np.maximum(d, 0), d_ref, alpha, f)
                    gap = J_star - primal
                    worst_excess = max(worst_excess, gap - alpha * D_lp, -gap)
                    solved += 1
                    if alpha not in (1e-2, 0.1, 1.0):
                        continue
                    dual = dual_v_objective(mdp, V, d_ref, alpha, f, None, mdp.mu0)
                    worst_gap = max(worst_gap, abs(dual - primal))
                    worst_flow = max(worst_flow, float(np.abs(flow_residual(mdp, d)).max()))
                    worst_neg = max(worst_neg, float(-d.min()))
        checks = [
            Check(
                "d >= 0",
                worst_neg <= 0.0,
                f"most negative recovered d_h(s, a) = {-worst_neg:.3g}",
                {"most_negative": -worst_neg},
            ),
            Check(
                "stage flow residual <= 1e-8",
                worst_flow <= 1e-8,
                f"max stage-wise flow residual = {worst_flow:.2e}",
                {"max_flow_residual": worst_flow},
            ),
            Check(
                "duality gap <= 1e-8",
                worst_gap <= 1e-8,
                f"max |dual - primal| = {worst_gap:.2e}",
                {"max_gap": worst_gap},
            ),
            Check(
                "0 <= V*_0(mu) - J(alpha) <= alpha D_f(d_LP || d^O)",
                worst_excess <= 1e-9,
                f"max violation {worst_excess:.2e} (tolerance 1e-9) over {solved} solves",
                {"max_violation": worst_excess},
            ),
        ]
        cfg = {"instances": self.scales[scale], "seed": seed, "solves": solved}
        return _report(self.name, self.statement, scale, checks, t0, cfg)


# --------------------------------------------------------------------------- 7. MoCAN (000#62)
def safety_optimum_cvxpy(bandit) -> tuple[float, float]:
    """``(value, lambda*)`` of the KL-regularised safety-constrained bandit by cvxpy on the
    response simplex (exponential cone; the multiplier is the safety row's dual value)."""
    import cvxpy as cp

    p = cp.Variable((bandit.S, bandit.A), nonneg=True)
    reward = cp.sum(cp.multiply(bandit.rho[:, None] * bandit.reward, p))
    kl = cp.sum(cp.multiply(bandit.rho[:, None], cp.rel_entr(p, bandit.ref)))
    safety = cp.sum(cp.multiply(bandit.rho[:, None] * bandit.safety, p)) >= bandit.threshold
    problem = cp.Problem(cp.Maximize(reward - bandit.beta * kl), [cp.sum(p, axis=1) == 1, safety])
    problem.solve(solver="CLARABEL", tol_gap_abs=1e-10, tol_gap_rel=1e-10, tol_feas=1e-10)
    return float(problem.value), float(safety.dual_value)


@dataclass(frozen=True)
class MoCANOneShotDual:
    name: str = "mocan-one-shot-dual"
    statement: str = (
        "MoCAN (seed row 000#62) through tl.run on seeded safety bandits (S = 3 prompts, A = 8 "
        "responses, r, g ~ U[0, 1], ref ~ Dirichlet(1); beta in {0.1, 0.5, 2}; the safety bound "
        "b at slack -0.3 (inactive), 0.3 and 0.8 of the way from the unconstrained optimum's "
        "safety to the largest): the closed-form dual D(lambda) = E_rho beta log E_ref exp((r + "
        "lambda g) / beta) - lambda b is convex (second differences on a 200-point grid >= "
        "-1e-9) and minimised at MoCAN's lambda* (grid >= D(lambda*) - 1e-12); lambda* and "
        "D(lambda*) equal cvxpy's multiplier and optimum on the response simplex (1e-5 (1 + "
        "lambda*), 1e-6); the Lagrangian primal-dual baseline's lambda_K (3000 iterations, dual "
        "step 1/L = 4 beta / (max g - min g)^2) is "
        "within 1e-6 (1 + lambda*) of the one-shot lambda*; the constraint binds when active "
        "(slack > 0: lambda* > 0 and |E g - b| <= 1e-9) and lambda* = 0 with E g > b when not. "
        "Quick: 1 seed at beta = 0.5; full: 10 seeds at every beta."
    )
    scales: dict[str, tuple[int, tuple[float, ...]]] = field(
        default_factory=lambda: {"quick": (1, (0.5,)), "full": (10, (0.1, 0.5, 2.0))}
    )

    def run(self, scale="quick", *, plot=None, progress=False, seed=0) -> Report:
        from theorylab.algorithms.dual.safety_dualization import dual_value
        from theorylab.experiment import run as tl_run
        from theorylab.mdps import make

        t0 = time.perf_counter()
        worst = {"convex": 0.0, "min": 0.0, "lam": 0.0, "value": 0.0, "pd": 0.0, "bind": 0.0}
        inactive_ok, active_ok, cases = True, True, 0
        n_seeds, betas = self.scales[scale]
        for k in range(n_seeds):
            for beta in betas:
                for slack in (-0.3, 0.3, 0.8):
                    spec = f"safety-bandit:S=3,A=8,beta={beta},slack={slack},seed={seed + k}"
                    bandit = make(spec)
                    one = tl_run("mocan", spec, iterations=40)
                    lam = float(one.config["multipliers"][-1])
                    excess = float(one.config["safety_excess"][-1])
                    grid = np.linspace(0.0, 2.0 * lam + 2.0, 200)
                    D = np.array([dual_value(bandit, x) for x in grid])
                    curv = D[:-2] - 2 * D[1:-1] + D[2:]
                    worst["convex"] = max(worst["convex"], float(-curv.min()))
                    worst["min"] = max(worst["min"], dual_value(bandit, lam) - float(D.min()))
                    value, lam_cvx = safety_optimum_cvxpy(bandit)
                    worst["lam"] = max(worst["lam"], abs(lam - lam_cvx) / (1 + lam))
                    worst["value"] = max(worst["value"], abs(dual_value(bandit, lam) - value))
                    pd = tl_run("safety-primal-dual", spec, iterations=3000)
                    lam_pd = float(pd.config["multipliers"][-1])
                    worst["pd"] = max(worst["pd"], abs(lam_pd - lam) / (1 + lam))
                    if slack > 0:
                        active_ok &= lam > 0
                        worst["bind"] = max(worst["bind"], abs(excess))
                    else:
                        inactive_ok &= lam == 0.0 and excess > 0
                    cases += 1
        checks = [
            Check(
                "D convex",
                worst["convex"] <= 1e-9,
                f"most negative second difference of D on the grids: {-worst['convex']:.2e}",
                {"worst": worst["convex"]},
            ),
            Check(
                "lambda* minimises D",
                worst["min"] <= 1e-12,
                f"max D(lambda*) - min_grid D = {worst['min']:.2e} (<= 1e-12)",
                {"worst": worst["min"]},
            ),
            Check(
                "lambda* = cvxpy's multiplier",
                worst["lam"] <= 1e-5,
                f"max |lambda* - lambda_cvxpy| / (1 + lambda*) = {worst['lam']:.2e} (<= 1e-5)",
                {"worst": worst["lam"]},
            ),
            Check(
                "D(lambda*) = cvxpy's optimum",
                worst["value"] <= 1e-6,
                f"max |D(lambda*) - value_cvxpy| = {worst['value']:.2e} (<= 1e-6)",
                {"worst": worst["value"]},
            ),
            Check(
                "primal-dual limit = one-shot lambda*",
                worst["pd"] <= 1e-6,
                f"max |lambda_K(primal-dual) - lambda*| / (1 + lambda*) = {worst['pd']:.2e}",
                {"worst": worst["pd"]},
            ),
            Check(
                "constraint binds when active",
                active_ok and worst["bind"] <= 1e-9,
                f"slack > 0: lambda* > 0 on every instance: {active_ok}; max |E g - b| = "
                f"{worst['bind']:.2e} (<= 1e-9)",
                {"worst": worst["bind"], "positive": bool(active_ok)},
            ),
            Check(
                "lambda* = 0 when inactive",
                inactive_ok,
                f"slack < 0: lambda* = 0 and E g > b on every instance: {inactive_ok}",
                {"ok": bool(inactive_ok)},
            ),
        ]
        cfg = {
            "instances": cases,
            "seed": seed,
            "via": "tl.run('mocan'), tl.run('safety-primal-dual')",
        }
        return _report(self.name, self.statement, scale, checks, t0, cfg)


# --------------------------------------------------------------------------- 8. general utilities
def ordinary_softmax_pg(mdp, iterations: int, step: float) -> np.ndarray:
    """Softmax PG on V_r(mu0) written out here (policy gradient theorem with dense inverses):
    the policies ``(K+1, S, A)`` from theta = 0 -- the reference the linear utility must equal."""
    from scipy.special import softmax

    S, A, g = mdp.S, mdp.A, mdp.gamma
    P = mdp.dense_P()  # (S, A, S)
    r = np.asarray(mdp.reward(0), dtype=np.float64)
    theta = np.zeros((S, A))
    out = []
    for k in range(iterations + 1):
        pi = softmax(theta, axis=1)
        out.append(pi)
        if k == iterations:
            break
        P_pi = np.einsum("sa,sat->st", pi, P)
        inv = np.linalg.inv(np.eye(S) - g * P_pi)
        V = inv @ np.einsum("sa,sa->s", pi, r)
        Q = r + g * P @ V
        d = (1 - g) * mdp.mu0 @ inv  # normalised discounted state occupancy
        theta = theta + step * d[:, None] * pi * (Q - V[:, None]) / (1 - g)
    return np.stack(out)


@dataclass(frozen=True)
class GeneralUtilityOptimum:
    name: str = "general-utility-pg-global-optimum"
    statement: str = (
        "General utilities (seed rows 000#14 / 001#65) on seeded random MDPs (S = 5, A = 3, "
        "gamma = 0.9), utilities entropy of the state occupancy and -KL(lambda || lambda_E) to "
        "a random expert's occupancy: cvxpy's optimum F* on the occupancy polytope lies in "
        "Frank-Wolfe's certified bracket [F(lambda_FW), F(lambda_FW) + FW gap] (1e-9), and is 0 "
        "for the KL utility (closed form, 1e-7); the chain-rule gradient d(s) pi(a|s) "
        "A_{grad F}(s, a) equals central finite differences of F(lambda^theta) (1e-6 relative); "
        "`general-utility-pg` through tl.run (exact gradients, step 10) never exceeds F* "
        "(1e-7) and its global gap F* - F(lambda^{pi_K}) falls below 5% of the initial gap with "
        "a log-log slope over the last 90% of the iterations <= -0.5; with the linear utility "
        "its policies equal ordinary softmax PG on V_r written out independently (1e-10, 30 "
        "iterations). Quick: 1 MDP, K = 400; full: 5 MDPs, K = 2000."
    )
    scales: dict[str, tuple[int, int]] = field(
        default_factory=lambda: {"quick": (1, 400), "full": (5, 2000)}
    )
    step: float = 10.0

    def run(self, scale="quick", *, plot=None, progress=False, seed=0) -> Report:
        from theorylab.algorithms.dual import general_utilities as gu
        from theorylab.experiment import run as tl_run
        from theorylab.mdps import make

        t0 = time.perf_counter()
        n, K = self.scales[scale]
        worst = {"bracket": 0.0, "kl_zero": 0.0, "fd": 0.0, "above": 0.0, "ratio": 0.0}
        worst["slope"], worst["linear"] = -np.inf, 0.0
        slopes: dict[str, list[float]] = {"entropy": [], "kl-expert": []}
        rng = np.random.default_rng(seed + 29)
        for i in range(n):
            spec = f"random:S=5,A=3,gamma=0.9,seed={seed + i}"
            mdp = make(spec).with_objective(gamma=0.9, horizon=None)
            for utility in ("entropy", "kl-expert"):
                F = gu.make_utility(mdp, utility)
                f_star, _ = gu.optimum_cvxpy(mdp, F)
                _, f_fw, gap_fw = gu.frank_wolfe(mdp, F)
                out = max(f_fw - f_star, f_star - (f_fw + gap_fw))
                worst["bracket"] = max(worst["bracket"], out)
                if utility == "kl-expert":
                    worst["kl_zero"] = max(worst["kl_zero"], abs(f_star))
                theta = rng.normal(size=(5, 3))
                grad, _ = gu.utility_gradient(mdp, F, theta)
                fd = np.zeros_like(theta)
                h = 1e-6
                for idx in np.ndindex(theta.shape):
                    e = np.zeros_like(theta)
                    e[idx] = h
                    up = F.value(gu.occupancy_measure(mdp, _softmax(theta + e), gamma=0.9))
                    down = F.value(gu.occupancy_measure(mdp, _softmax(theta - e), gamma=0.9))
                    fd[idx] = (up - down) / (2 * h)
                rel = np.abs(grad - fd).max() / max(np.abs(fd).max(), 1e-12)
                worst["fd"] = max(worst["fd"], float(rel))
                res = tl_run(
                    "general-utility-pg", spec, iterations=K, utility=utility, step=self.step
                )
                gap = f_star - np.asarray(res.objective)
                worst["above"] = max(worst["above"], float(-gap.min()))
                worst["ratio"] = max(worst["ratio"], float(gap[-1] / gap[0]))
                k = np.arange(K // 10, K + 1)
                slope = float(np.polyfit(np.log(k), np.log(np.maximum(gap[k], 1e-300)), 1)[0])
                slopes[utility].append(slope)
                worst["slope"] = max(worst["slope"], slope)
            lin = tl_run("general-utility-pg", spec, iterations=30, utility="linear", step=1.0)
            ref = ordinary_softmax_pg(mdp, 30, 1.0)
            worst["linear"] = max(worst["linear"], float(np.abs(np.exp(lin.policies) - ref).max()))
        checks = [
            Check(
                "cvxpy F* in Frank-Wolfe's bracket",
                worst["bracket"] <= 1e-9,
                f"max distance outside [F_FW, F_FW + gap] = {worst['bracket']:.2e} (<= 1e-9)",
                {"worst": worst["bracket"]},
            ),
            Check(
                "KL utility: F* = 0",
                worst["kl_zero"] <= 1e-7,
                f"max |F*_cvxpy| = {worst['kl_zero']:.2e} (<= 1e-7)",
                {"worst": worst["kl_zero"]},
            ),
            Check(
                "chain rule = finite differences",
                worst["fd"] <= 1e-6,
                f"max relative error {worst['fd']:.2e} (<= 1e-6)",
                {"worst": worst["fd"]},
            ),
            Check(
                "PG never above F*",
                worst["above"] <= 1e-7,
                f"max F(lambda^pi_k) - F* = {worst['above']:.2e} (<= 1e-7)",
                {"worst": worst["above"]},
            ),
            Check(
                "PG global gap -> 0",
                worst["ratio"] <= 0.05 and worst["slope"] <= -0.5,
                f"max gap_K / gap_0 = {worst['ratio']:.2e} (<= 0.05); log-log slopes: entropy "
                f"{_fmt(slopes['entropy'])}, kl-expert {_fmt(slopes['kl-expert'])} (<= -0.5)",
                {"ratio": worst["ratio"], "slopes": slopes},
            ),
            Check(
                "linear utility = ordinary PG",
                worst["linear"] <= 1e-10,
                f"max |pi_k - pi_k(ordinary PG)| = {worst['linear']:.2e} (<= 1e-10)",
                {"worst": worst["linear"]},
            ),
        ]
        cfg = {"mdps": n, "iterations": K, "step": self.step, "seed": seed}
        return _report(self.name, self.statement, scale, checks, t0, cfg)


def _softmax(theta: np.ndarray) -> np.ndarray:
    from scipy.special import softmax

    return softmax(theta, axis=1)


def _fmt(values) -> str:
    return ", ".join(f"{v:.2f}" for v in values)


# the registry's controls (theorylab.validations.mutations) patch the same bugs into the library
# that the solver fields above take (tests/test_dual_claims.py): validate runs them
register_validation(
    DualVStrongDuality(), controls=("dual-v-plain-conjugate",), papers=DUAL_RL_PAPERS
)
register_validation(AlphaToZero(), controls=("dual-v-sqrt-alpha",), papers=DUAL_RL_PAPERS)
register_validation(REPSBindingKL(), controls=("reps-eta-fixed",))
register_validation(DICERate(), controls=("dualdice-behaviour-policy",))
# ReLOAD (000#1): the registered `reload` (algorithms/dual/cmdp.py's OGDA) through tl.run
register_validation(CMDPLastIterate(), controls=("cmdp-ogda-no-optimism",), papers=("000#1",))
register_validation(
    FiniteHorizonDualV(),
    controls=("dual-v-plain-conjugate", "dual-v-sqrt-alpha"),
    papers=DUAL_RL_PAPERS,
)
register_validation(MoCANOneShotDual(), controls=("mocan-dual-without-beta",), papers=("000#62",))
register_validation(
    GeneralUtilityOptimum(),
    controls=("general-utility-frozen-reward",),
    papers=("000#14", "001#65"),
)


# ----------------------------------------------------------------------------- issue 29 (drpo29)
# CAL (000#36): conservative (UCB) cost + augmented-Lagrangian GDA, through tl.run("cal")
from theorylab.validations.claim import ScaledClaim, save_claim_figure  # noqa: E402


class CALAugmentedLagrangian(ScaledClaim):
    """CAL (000#36): ``algorithms/dual/cal.py`` against the independent linprog CMDP optimum."""

    def _run(self, cfg, seed, plot, rep):
        from theorylab.algorithms.dual import cmdp
        from theorylab.experiment import run as tl_run

        rng = np.random.default_rng(seed + 36)
        T, tail = cfg["iterations"], max(1, cfg["iterations"] // 10)
        ident, cal_tail, gda_tail, cal_viol, gda_viol, ucb, plain = [], [], [], [], [], [], []
        curves = {}
        for i in range(cfg["cmdps"]):
            mdp, c, b = binding_cmdp(rng)
            v_star, _ = cmdp_linprog(mdp, c, b)
            base = cmdp.lagrangian_gda(mdp, c, [b], steps=cfg["identity_steps"], eta=1.0)
            same = tl_run(
                "cal", mdp, iterations=cfg["identity_steps"], cost=c, threshold=b, rho=0.0
            )
            ident.append(float(np.abs(base.occupancies - same.occupancy).max()))
            budget = {"iterations": T, "cost": c, "threshold": b}
            aug = tl_run("cal", mdp, rho=cfg["rho"], **budget)
            gda = tl_run("cal", mdp, rho=0.0, **budget)
            cal_tail.append(_cmdp_error(aug.primal, aug.constraint, v_star, tail))
            gda_tail.append(_cmdp_error(gda.primal, gda.constraint, v_star, tail))
            cal_viol.append(int((aug.constraint > 1e-3).sum()))
            gda_viol.append(int((gda.constraint > 1e-3).sum()))
            if i == 0:
                curves = {f"CAL (rho = {cfg['rho']:g})": aug.constraint, "GDA": gda.constraint}
            for s in range(cfg["data_seeds"]):
                kw = dict(rho=cfg["rho"], samples=cfg["samples"], sample_seed=seed * 100 + s)
                kw.update(iterations=cfg["data_iterations"], cost=c, threshold=b)
                ucb.append(float(tl_run("cal", mdp, kappa=cfg["kappa"], **kw).constraint[-1]))
                plain.append(float(tl_run("cal", mdp, kappa=0.0, **kw).constraint[-1]))
        rep.checks.extend(
            [
                Check(
                    "rho = 0, true cost: CAL = cmdp.lagrangian_gda iterate by iterate",
                    max(ident) <= 1e-12,
                    f"max |d_t difference| = {max(ident):.2e} over {cfg['identity_steps']} steps",
                    {"max_difference": max(ident)},
                ),
                Check(
                    "augmented Lagrangian: last iterate -> the CMDP optimum (linprog)",
                    max(cal_tail) <= 1e-6,
                    f"max over CMDPs of max(|V_r - V*|, excess) over the last {tail} iterates: "
                    f"{max(cal_tail):.2e} (<= 1e-6)",
                    {"tail": cal_tail},
                ),
                Check(
                    "fewer training-time violations than GDA (<= 1/4 of GDA's count)",
                    all(a <= 0.25 * g for a, g in zip(cal_viol, gda_viol, strict=True)),
                    f"iterations with excess > 1e-3: CAL {cal_viol}, GDA {gda_viol} of {T}",
                    {"cal": cal_viol, "gda": gda_viol},
                ),
                Check(
                    f"conservative cost (kappa = {cfg['kappa']:g}): the output is feasible under "
                    "the true cost on every data seed",
                    max(ucb) <= 1e-6,
                    f"max true excess V_c - b = {max(ucb):+.4f} over {len(ucb)} runs "
                    f"({cfg['samples']} off-policy cost samples each)",
                    {"excess": ucb},
                ),
                _control_check(
                    "GDA (rho = 0) through the last-iterate test",
                    min(gda_tail) > 1e-6,
                    f"min tail error {min(gda_tail):.3f}",
                ),
                _control_check(
                    "the plain estimate (kappa = 0) through the feasibility test",
                    max(plain) > 1e-6,
                    f"max true excess {max(plain):+.4f}; infeasible on "
                    f"{sum(p > 1e-6 for p in plain)} of {len(plain)} runs",
                ),
            ]
        )
        if plot:
            from theorylab.plotting import plot_policy_path

            ax = plot_policy_path(
                curves,
                ylabel="V_c(d_t) - b (true cost)",
                title="CAL: augmented-Lagrangian GDA vs GDA (exact, occupancy space)",
            )
            save_claim_figure(ax, plot)


def _control_check(name: str, failed: bool, detail: str) -> Check:
    return Check(f"negative-control: {name}", failed, f"{detail} (must FAIL the test)")


register_validation(
    CALAugmentedLagrangian(
        name="cal-augmented-lagrangian",
        statement=(
            "CAL (Wu et al. 2024; cal through tl.run), exact in occupancy space on seeded random "
            "binding CMDPs (S = 4, A = 2, gamma = 0.8): at rho = 0 with the true cost it is "
            "Lagrangian GDA iterate by iterate (to 1e-12); with the augmented Lagrangian "
            "(rho = 5) its last iterate reaches the linprog optimum (max(|V_r - V*|, excess) "
            "<= 1e-6 over the last 10% of iterations) and it spends at most a quarter of GDA's "
            "iterations above the cost bound; with the cost estimated from 1000 off-policy "
            "samples, the UCB estimate (kappa = 1) keeps the output feasible under the true cost "
            "on every data seed, where the plain estimate (kappa = 0) does not. Quick: 1 CMDP, "
            "4 data seeds; full: 4 CMDPs, 8 data seeds."
        ),
        scales={
            "quick": {
                "cmdps": 1,
                "iterations": 500,
                "identity_steps": 100,
                "rho": 5.0,
                "kappa": 1.0,
                "samples": 1000,
                "data_seeds": 4,
                "data_iterations": 300,
            },
            "full": {
                "cmdps": 4,
                "iterations": 1500,
                "identity_steps": 300,
                "rho": 5.0,
                "kappa": 1.0,
                "samples": 1000,
                "data_seeds": 8,
                "data_iterations": 400,
            },
        },
    ),
    controls=("cal-no-augmentation",),
    papers=("000#36",),
)


# ----------------------------------------------------------------------------- issue 29 (vrpg29)
# N-VR-PG (000#14): the stochastic general-utility PG's global rate against the closed-form F*
class NVRPGGlobalRate(ScaledClaim):
    """N-VR-PG (000#14): seed-mean global gap vs trajectories, against F* = 0 (closed form,
    confirmed by cvxpy), with the same method without variance reduction as a baseline."""

    def _run(self, cfg, seed, plot, rep):
        from theorylab.algorithms.dual import general_utilities as gu
        from theorylab.algorithms.dual import general_utilities_vr as vr
        from theorylab.mdps import make
        from theorylab.stats import loglog_slope

        T, R, (lo, hi) = cfg["iterations"], cfg["runs"], cfg["window"]
        cps = np.unique(np.geomspace(T / 30, T, 12).astype(np.int64))
        base_label = "without VR (eta = 1)"
        f_stars, rows, first = [], [], None
        for m in range(cfg["mdps"]):
            spec = f"random:S=4,A=2,gamma={cfg['gamma']},seed={seed + m}"
            mdp = make(spec).with_objective(gamma=cfg["gamma"], horizon=None)
            F = gu.make_utility(mdp, "kl-expert")
            f_stars.append(abs(gu.optimum_cvxpy(mdp, F)[0]))
            gaps, fits = {}, {}
            for label, eta0 in (("N-VR-PG", cfg["eta0"]), (base_label, np.inf)):
                path = vr.nvr_pg(mdp, F, T, runs=R, eta0=eta0, checkpoints=cps, seed=seed)
                gaps[label] = np.maximum(-path.values, 1e-300)  # (R, C): F* - F = -F, F* = 0
                fits[label] = loglog_slope(cps, gaps[label], fit_range=(0.0, 1.0), rng=seed)
            uniform = np.full((mdp.S, mdp.A), 1.0 / mdp.A)
            gap0 = -F.value(gu.occupancy_measure(mdp, uniform, gamma=F.gamma))
            rows.append((spec, fits["N-VR-PG"], fits[base_label], gaps, gap0))
            first = first or (gaps, fits)

        def inside(f):
            return lo <= f.ci_low and f.ci_high <= hi

        def fmt(f):
            return f"{f.slope:.3f} [{f.ci_low:.3f}, {f.ci_high:.3f}]"

        ratio = [float(g["N-VR-PG"][:, -1].mean() / g0) for _, _, _, g, g0 in rows]
        rep.checks.extend(
            [
                Check(
                    "F* = 0 (closed form, lambda = lambda_E) = cvxpy's optimum",
                    max(f_stars) <= 1e-7,
                    f"max |F*_cvxpy| = {max(f_stars):.1e} (<= 1e-7)",
                    {"f_star": f_stars},
                ),
                Check(
                    f"N-VR-PG: seed-mean gap slope vs trajectories, {100 * rows[0][1].confidence:g}"
                    f"% bootstrap CI inside [{lo}, {hi}] on every model",
                    all(inside(f) for _, f, _, _, _ in rows),
                    "; ".join(f"seed {sp[-1]}: {fmt(f)}" for sp, f, _, _, _ in rows)
                    + f" (T = {cps[0]}..{cps[-1]}, {R} runs)",
                    {"slopes": [[f.slope, f.ci_low, f.ci_high] for _, f, _, _, _ in rows]},
                ),
                Check(
                    "N-VR-PG: final mean gap <= 2% of the uniform policy's on every model",
                    max(ratio) <= 0.02,
                    "gap_T / gap_uniform = " + ", ".join(f"{r:.1e}" for r in ratio),
                    {"ratio": ratio},
                ),
                _control_check(
                    "the same method without variance reduction (eta_t = 1, one trajectory per "
                    "step, same steps) through the slope test",
                    not all(inside(b) for _, _, b, _, _ in rows),
                    "slopes " + "; ".join(fmt(b) for _, _, b, _, _ in rows),
                ),
            ]
        )
        rep.config["measured"] = {
            sp: {"nvr": [f.slope, f.ci_low, f.ci_high], "no_vr": [b.slope, b.ci_low, b.ci_high]}
            for sp, f, b, _, _ in rows
        }
        if plot:
            from theorylab.plotting import plot_loglog

            ax = plot_loglog(
                cps,
                first[0],
                first[1],
                bound_exponent=-0.5,
                x_name="T",
                title=f"N-VR-PG on -KL(lambda || lambda_E), {rows[0][0]}: gap vs trajectories",
                xlabel="trajectories T (one per iteration)",
                ylabel="F* - F(lambda^{pi_T}) (exact)",
            )
            save_claim_figure(ax, plot)


register_validation(
    NVRPGGlobalRate(
        name="nvr-pg-global-rate",
        statement=(
            "N-VR-PG (Barakat, Fatkhullin, He 2023; general-utility-vr-pg: one sampled "
            "trajectory per iteration, STORM recursions with importance weights on the "
            "occupancy and the gradient, lagged pseudo-rewards, normalised steps alpha_t = "
            "1 / (t + 10), eta_t = min(1, 2 / (t + 10))) on F = -KL(lambda || lambda_E) of a "
            "full-support expert (random:S=4,A=2,gamma=0.5, MDP seeds 0, 1, 2): F* = 0 in "
            "closed form, cvxpy agrees (1e-7); on every model the exact gap of the seed-mean "
            "falls with log-log slope in trajectories whose 95% bootstrap CI lies inside "
            "[-1.5, -0.5] -- at least the theorem's eps^-2 rate (T^-1/2), and at this interior "
            "optimum (quadratic growth, estimator error ~ t^-1/2) about T^-1 -- and ends below "
            "2% of the uniform policy's gap; the same method without variance reduction "
            "(eta_t = 1, same steps and budget) fails the slope test. Quick: 1 model, 16 runs, "
            "T = 10^4; full: 3 models, 64 runs, T = 3 * 10^4."
        ),
        scales={
            "quick": {
                "mdps": 1,
                "gamma": 0.5,
                "runs": 16,
                "iterations": 10_000,
                "eta0": 2.0,
                "window": (-1.5, -0.5),
            },
            "full": {
                "mdps": 3,
                "gamma": 0.5,
                "runs": 64,
                "iterations": 30_000,
                "eta0": 2.0,
                "window": (-1.5, -0.5),
            },
        },
    ),
    controls=("vrpg-same-sample-reward",),
    papers=("000#14", "001#65"),
)
