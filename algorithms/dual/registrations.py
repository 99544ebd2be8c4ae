"""Registers the dual-RL algorithms on the one registry (imported by ``load_algorithms``).

* kind ``"dual"`` (:data:`~theorylab.algorithms.registry.KINDS`): solvers of the f-regularised
  occupancy problem ``max_d E_d[r] - alpha D_f(d || d^O)``; the runner
  (``theorylab.runners.dual``) supplies the model, d^O and alpha and scores primal, dual, gap and
  flow residual exactly. ``dual-v`` (the dual-V form, Newton / L-BFGS) and
  ``regularized-primal`` (cvxpy on the primal, the reference answer).
* kind ``"constrained"`` (runner ``theorylab.runners.constrained``): ``reps`` (REPS by Newton on
  its closed-form dual, ``constraint="kl"``: ``(mdp, q, epsilon)``) and ``reload`` (ReLOAD's
  optimistic gradient descent-ascent on a CMDP's Lagrangian, ``constraint="cost"``:
  ``(mdp, cost, threshold, iterations)``).
* kind ``"ope"``: ``dualdice`` (tabular DualDICE, ``estimate(dataset, policy) -> V_hat(mu0)``
  per seed; runner ``theorylab.runners.ope``).
* kind ``"offline"``: ``optidice`` (tabular OptiDICE, ``fit(dataset, alpha, f)``) and ``f-dvl``
  (tabular f-DVL with the code's surrogate losses, ``fit(dataset, loss, loss_temp)``).
* kind ``"imitation"`` (runner ``theorylab.runners.imitation``: expert data plus other data):
  ``recoil`` (mixture matching, no coverage needed) and ``smodice`` (the coverage-restricted
  method it fixes).
"""

from __future__ import annotations

from theorylab.algorithms.dual import (
    cmdp,
    general_utilities,
    general_utilities_vr,
    safety_dualization,
)
from theorylab.algorithms.dual.dual_v import solve_dual_v
from theorylab.algorithms.dual.dualdice import dualdice
from theorylab.algorithms.dual.f_dvl import f_dvl
from theorylab.algorithms.dual.optidice import optidice
from theorylab.algorithms.dual.recoil import recoil
from theorylab.algorithms.dual.regularized_primal import solve_regularized_primal
from theorylab.algorithms.dual.reps import reps
from theorylab.algorithms.dual.smodice import smodice
from theorylab.algorithms.registry import register

# Sikchi et al., "Dual RL" (seed catalogue rows of the same paper; docs/papers.md)
DUAL_RL_PAPERS = ("000#6", "002-004#F1")


@register("dual-v", kind="dual", problem="tabular", papers=DUAL_RL_PAPERS)
def dual_v(mdp, d_ref, alpha, f: str = "kl", method: str = "newton"):
    """Dual-V of f-regularised RL solved directly, primal recovery (Sikchi et al. 2024)."""
    return solve_dual_v(mdp, d_ref, alpha, f, method=method)


@register("regularized-primal", kind="dual", problem="tabular", papers=DUAL_RL_PAPERS)
def regularized_primal(mdp, d_ref, alpha, f: str = "kl"):
    """f-regularised occupancy primal by cvxpy (exp cone / SOC / LP): the reference answer."""
    return solve_regularized_primal(mdp, d_ref, alpha, f)


@register("optidice", kind="offline", problem="dataset", horizon="discounted")
def fit_optidice(dataset, alpha: float = 0.1, f: str = "half-chi2"):
    """Tabular OptiDICE: dual-V on the empirical model, half chi^2 (Lee et al. 2021; [M])."""
    return optidice(dataset, alpha=alpha, f=f)


@register("f-dvl", kind="offline", problem="dataset", horizon="discounted", papers=DUAL_RL_PAPERS)
def fit_f_dvl(dataset, loss: str = "chi-square", loss_temp: float = 0.8):
    """Tabular f-DVL: the DVL code's V-loss and mean Q-target to the fixed point (Sikchi 2024)."""
    return f_dvl(dataset, loss=loss, loss_temp=loss_temp)


@register("dualdice", kind="ope", problem="dataset", horizon="discounted")
def estimate_dualdice(dataset, policy):
    """Tabular DualDICE: V^pi(mu0) per seed from discounted data (Nachum et al. 2019)."""
    return dualdice(dataset, policy).value


@register("reps", kind="constrained", problem="tabular", constraint="kl")
def solve_reps(mdp, q, epsilon, max_iter: int = 500):
    """REPS, exactly: max average reward s.t. KL(mu || q) <= epsilon (Peters et al. 2010)."""
    return reps(mdp, q, epsilon, max_iter=max_iter)


@register(
    "reload",
    kind="constrained",
    problem="tabular",
    constraint="cost",
    horizon="discounted",
    papers=("000#1",),
)
def solve_reload(
    mdp,
    cost,
    threshold,
    iterations,
    eta: float = 1.0,
    lambda_max: float = 10.0,
    optimistic: bool = True,
):
    """ReLOAD: optimistic GDA on a CMDP's Lagrangian, exact in occupancy space (Moskovitz 2023)."""
    # cmdp.lagrangian_gda looked up at call time: the control cmdp-ogda-no-optimism patches it
    return cmdp.lagrangian_gda(
        mdp,
        cost,
        [threshold],
        steps=iterations,
        eta=eta,
        optimistic=optimistic,
        lambda_max=lambda_max,
    )


@register(
    "recoil", kind="imitation", problem="dataset", horizon="discounted", papers=DUAL_RL_PAPERS
)
def fit_recoil(expert, dataset, beta: float = 0.5, f: str = "kl"):
    """Tabular ReCOIL: match beta d + (1-beta) d^S to beta d^E + (1-beta) d^S (Sikchi 2024)."""
    return recoil(expert, dataset, beta=beta, f=f)


@register("smodice", kind="imitation", problem="dataset", horizon="discounted")
def fit_smodice(expert, dataset, match: str = "state-action", disc_clip: float = 1e-6):
    """Tabular SMODICE: min KL(d || d^E) over d << d^S, via dual-V (Ma et al. 2022; [M])."""
    return smodice(expert, dataset, match=match, disc_clip=disc_clip)


@register("mocan", kind="policy-optimization", problem="safety-bandit", papers=("000#62",))
def run_mocan(problem, iterations):
    """MoCAN: Newton on the closed-form convex dual D(lambda), one-shot lambda* (Huang 2024)."""
    return safety_dualization.mocan(problem, iterations)


@register(
    "safety-primal-dual", kind="policy-optimization", problem="safety-bandit", papers=("000#62",)
)
def run_safety_primal_dual(problem, iterations, eta: float = 1.0, step: float | None = None):
    """Lagrangian primal-dual for safe RLHF: KL mirror ascent on pi, gradient descent on lambda."""
    return safety_dualization.primal_dual(problem, iterations, eta=eta, step=step)


@register(
    "general-utility-pg",
    kind="policy-optimization",
    problem="tabular-discounted",
    papers=("000#14", "001#65"),
)
def run_general_utility_pg(
    problem, iterations, utility: str = "entropy", step: float = 1.0, expert_seed: int = 0
):
    """Softmax PG on a concave utility F of the occupancy, exact chain rule (Barakat 2023)."""
    return general_utilities.run_utility_pg(
        problem, iterations, utility=utility, step=step, expert_seed=expert_seed
    )


@register(
    "general-utility-vr-pg",
    kind="policy-optimization",
    problem="tabular-discounted",
    papers=("000#14", "001#65"),
)
def run_general_utility_vr_pg(
    problem,
    iterations,
    utility: str = "kl-expert",
    alpha0: float = 1.0,
    t0: float = 10.0,
    eta0: float = 2.0,
    eps: float = 1e-7,
    seed: int = 0,
    expert_seed: int = 0,
):
    """N-VR-PG: sampled trajectories, STORM occupancy and gradient, normalised steps."""
    return general_utilities_vr.run_vr_pg(
        problem,
        iterations,
        utility=utility,
        alpha0=alpha0,
        t0=t0,
        eta0=eta0,
        eps=eps,
        seed=seed,
        expert_seed=expert_seed,
    )


# ----------------------------------------------------------------------------- issue 29 (drpo29)
@register(
    "cal",
    kind="constrained",
    problem="tabular",
    constraint="cost",
    horizon="discounted",
    papers=("000#36",),
)
def solve_cal(
    mdp,
    cost,
    threshold,
    iterations,
    eta: float = 1.0,
    rho: float = 5.0,
    kappa: float = 1.0,
    samples: int = 0,
    sample_seed: int = 0,
    lambda_max: float = 10.0,
):
    """CAL: augmented-Lagrangian GDA on a conservative (UCB) cost estimate, exact in occupancy
    space (Wu et al. 2024; rho = 0 and samples = 0: plain Lagrangian GDA)."""
    from theorylab.algorithms.dual import cal

    return cal.cal_primal_dual(
        mdp,
        cost,
        [threshold],
        steps=iterations,
        eta=eta,
        rho=rho,
        kappa=kappa,
        samples=samples,
        sample_seed=sample_seed,
        lambda_max=lambda_max,
    )


# issue 29 (act29): CGPO with a mixture of judges (002-004#F8), registered in its module
from theorylab.algorithms.dual import cgpo  # noqa: E402, F401  (registers cgpo-moj)
