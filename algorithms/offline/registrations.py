"""Registers every offline algorithm in the one registry (``theorylab.algorithms.registry``).

Extra registry fields: ``horizon`` ("discounted" or "finite": the setting the algorithm is
stated for; absent: both) and ``features`` (it takes the MDP's feature map ``phi``).

The wrappers spell out each algorithm's parameters (with the defaults of its module) so that
``theorylab list``-style tools and name-string parsing see them.
"""

from __future__ import annotations

from theorylab.algorithms.offline.baselines import behaviour_cloning, naive_vi
from theorylab.algorithms.offline.pessimistic_vi import pessimistic_vi
from theorylab.algorithms.offline.pevi import pevi, pevi_tabular
from theorylab.algorithms.offline.vi_lcb import C_L_CODE, vi_lcb
from theorylab.algorithms.offline.vw_pevi import vw_pevi
from theorylab.algorithms.registry import register


@register(
    "vi-lcb",
    kind="offline",
    problem="dataset",
    bounds=("vi-lcb-upper", "vi-lcb-lower", "vi-lcb-lower-near-expert"),
    horizon="discounted",
    papers=("000#41",),
)
def fit_vi_lcb(
    dataset, delta: float = 0.1, c_L: float = C_L_CODE, initial_policy: str = "behaviour"
):
    """VI-LCB with data splitting (Rashidinejad et al. 2021, Alg. 3; discounted)."""
    return vi_lcb(dataset, delta=delta, c_L=c_L, initial_policy=initial_policy)


@register(
    "pessimistic-vi-hoeffding", kind="offline", problem="dataset", bounds=(), horizon="finite"
)
def fit_pessimistic_vi_hoeffding(
    dataset, delta: float = 0.1, c_h: float = 1.0, subsample: bool = False, c_trim: float = 10.0
):
    """Finite-horizon pessimistic VI, Hoeffding penalty (Li et al. 2022 baseline; [M] consts)."""
    return pessimistic_vi(
        dataset, penalty="hoeffding", delta=delta, c_h=c_h, subsample=subsample, c_trim=c_trim
    )


@register(
    "pessimistic-vi-bernstein",
    kind="offline",
    problem="dataset",
    bounds=("li2022-offline-finite-horizon",),
    horizon="finite",
)
def fit_pessimistic_vi_bernstein(
    dataset,
    delta: float = 0.1,
    c_b: float = 16.0,
    subsample: bool = False,
    c_trim: float = 10.0,
    bernstein_form: str = "sum",
):
    """Finite-horizon pessimistic VI, Bernstein penalty (Li et al. 2022, Alg. 2, Eq. (55))."""
    return pessimistic_vi(
        dataset,
        penalty="bernstein",
        delta=delta,
        c_b=c_b,
        subsample=subsample,
        c_trim=c_trim,
        bernstein_form=bernstein_form,
    )


@register(
    "pevi",
    kind="offline",
    problem="dataset",
    bounds=("pevi-linear", "pevi-well-explored"),
    horizon="finite",
    features=True,
)
def fit_pevi(
    dataset, phi=None, xi: float = 0.1, c_beta: float = 1.0, beta: float = -1.0, lam: float = 1.0
):
    """PEVI for linear MDPs (Jin, Yang, Wang 2021, Alg. 2; [M]); phi=None: one-hot."""
    return pevi(dataset, phi=phi, xi=xi, c_beta=c_beta, beta=None if beta < 0 else beta, lam=lam)


@register(
    "pevi-tabular", kind="offline", problem="dataset", bounds=("pevi-linear",), horizon="finite"
)
def fit_pevi_tabular(
    dataset, xi: float = 0.1, c_beta: float = 1.0, beta: float = -1.0, lam: float = 1.0
):
    """Tabular PEVI: PEVI with one-hot features, in closed form ([M])."""
    return pevi_tabular(dataset, xi=xi, c_beta=c_beta, beta=None if beta < 0 else beta, lam=lam)


@register(
    "vw-pevi",
    kind="offline",
    problem="dataset",
    bounds=("xiong2023-linpevi-adv-plus",),
    horizon="finite",
    features=True,
    papers=("000#26",),  # PNLSVI, whose linear specialisation this is (vw_pevi.py)
)
def fit_vw_pevi(
    dataset,
    phi=None,
    xi: float = 0.1,
    c_beta: float = 1.0,
    beta: float = -1.0,
    c_beta_ref: float = 1.0,
    lam: float = -1.0,
    sigma2_min: float = 1.0,
    split: bool = True,
):
    """Variance-weighted pessimistic LSVI, LinPEVI-ADV+ form (Xiong et al. 2023; lam < 0: 1/H^2)."""
    return vw_pevi(
        dataset,
        phi=phi,
        xi=xi,
        c_beta=c_beta,
        beta=None if beta < 0 else beta,
        c_beta_ref=c_beta_ref,
        lam=None if lam < 0 else lam,
        sigma2_min=sigma2_min,
        split=split,
    )


@register("naive-vi", kind="offline", problem="dataset", bounds=())
def fit_naive_vi(dataset, tol: float = 1e-10):
    """Certainty-equivalent VI on the empirical model (no penalty): the contrast."""
    return naive_vi(dataset, tol=tol)


@register("behaviour-cloning", kind="offline", problem="dataset", bounds=())
def fit_behaviour_cloning(dataset, tol: float = 1e-10):
    """The empirical behaviour policy (imitation contrast)."""
    return behaviour_cloning(dataset, tol=tol)


@register(
    "ogsrl",
    kind="offline",
    problem="dataset",
    bounds=(),
    horizon="discounted",
    papers=("002-004#C7",),
)
def fit_ogsrl(dataset, costs=None, kappa: float = float("inf"), fill_reward: float = 0.0):
    """OGSRL: support-guarded, cost-constrained occupancy LP on the empirical model ([A])."""
    from theorylab.algorithms.offline.ogsrl import ogsrl

    return ogsrl(dataset, costs=costs, kappa=kappa, fill_reward=fill_reward)


@register(
    "trajectory-weighting",
    kind="offline",
    problem="dataset",
    bounds=(),
    horizon="finite",
    papers=("002-004#C1", "001#46"),
)
def fit_trajectory_weighting(dataset, temperature: float = 0.1):
    """Behaviour cloning on return-re-weighted trajectories (Hong et al. 2023; [A])."""
    from theorylab.algorithms.offline.trajectory_weighting import trajectory_weighting

    return trajectory_weighting(dataset, temperature=temperature)


@register("rcsl", kind="offline", problem="dataset", bounds=(), horizon="finite", papers=("000#5",))
def fit_rcsl(dataset):
    """Markovian return-conditioned supervised learning, tabular (Zhou et al. 2024; [A])."""
    from theorylab.algorithms.offline.rcsl import rcsl

    return rcsl(dataset)


@register(
    "mbrcsl", kind="offline", problem="dataset", bounds=(), horizon="finite", papers=("000#5",)
)
def fit_mbrcsl(dataset, rollouts: str = "exact", seed: int = 0):
    """MBRCSL: empirical model, behaviour-policy rollouts, high-return filter, RCSL ([A]);
    rollouts: "exact" (enumerated) or a count ("0": RCSL)."""
    from theorylab.algorithms.offline.rcsl import mbrcsl

    n = int(rollouts) if str(rollouts).isdigit() else rollouts
    return mbrcsl(dataset, rollouts=n, seed=seed)


@register(
    "het-pevi",
    kind="offline",
    problem="dataset",
    bounds=(),
    horizon="finite",
    papers=("000#71", "001#42"),
)
def fit_het_pevi(dataset, delta: float = 0.1, c_n: float = 1.0, c_K: float = 1.0):
    """HetPEVI: pessimistic VI from K perturbed sources, sample + source penalty (Shi et al.
    2023; [A]); sources from ``dataset.info["sources"]`` (none: one source)."""
    from theorylab.algorithms.offline.het_pevi import het_pevi

    return het_pevi(dataset, delta=delta, c_n=c_n, c_K=c_K)


@register(
    "hubl", kind="offline", problem="dataset", bounds=(), horizon="finite", papers=("000#44",)
)
def fit_hubl(
    dataset,
    lam: float = 0.5,
    penalty: str = "none",
    lam_schedule: str = "constant",
    delta: float = 0.1,
    c_h: float = 1.0,
):
    """HUBL (Geng et al. 2024): trajectory data relabelled with r + lam G_{h+1} and continuation
    1 - lam, then certainty-equivalent (penalty="none") or Hoeffding-pessimistic VI ([A]/[S])."""
    from theorylab.algorithms.offline.hubl import hubl

    return hubl(dataset, lam=lam, penalty=penalty, lam_schedule=lam_schedule, delta=delta, c_h=c_h)


@register(
    "h2o",
    kind="offline",
    problem="dataset",
    bounds=(),
    horizon="discounted",
    papers=("002-004#C5",),
)
def fit_h2o(
    dataset,
    simulator=None,
    beta: float | None = None,
    sim_weight: float = 1.0,
    w_max: float = 10.0,
    dynamics_aware: bool = True,
    gap_model: str = "action",
):
    """H2O (Niu et al. 2022): real data plus a simulator whose pairs are penalised by their
    dynamics gap and importance-reweighted; exact tabular fixed point ([M])."""
    from theorylab.algorithms.offline.empirical import require_data
    from theorylab.algorithms.offline.h2o import h2o

    require_data(dataset, "h2o")  # an empty dataset is refused first, as everywhere
    if simulator is None:
        raise ValueError("h2o: simulator= is required (a TabularMDP or a spec string)")
    return h2o(dataset, simulator=simulator, beta=beta, sim_weight=sim_weight, w_max=w_max,
               dynamics_aware=dynamics_aware, gap_model=gap_model)  # fmt: skip


@register("gorl", kind="offline", problem="dataset", bounds=(), horizon="finite", papers=("000#9",))
def fit_gorl(
    dataset,
    demos=None,
    weights: str = "guided",
    w: float = 0.5,
    alpha: float = 1.0,
    unseen: str = "optimistic",
):
    """GORL (Yang et al. 2023): per-sample weights between Q-maximisation and a squared-error BC
    constraint, set by expert demonstrations (``demos=``); exact tabular actor-critic ([M])."""
    from theorylab.algorithms.offline.empirical import require_data
    from theorylab.algorithms.offline.gorl import gorl

    require_data(dataset, "gorl")  # an empty dataset is refused first, as everywhere
    return gorl(dataset, demos=demos, weights=weights, w=w, alpha=alpha, unseen=unseen)


@register(
    "prdc",
    kind="offline",
    problem="dataset",
    bounds=(),
    horizon="discounted",
    papers=("002-004#C3",),
)
def fit_prdc(
    dataset,
    beta: float = 2.0,
    alpha: float = 2.5,
    iterations: int = 100,
    degree_u: int = 1,
    bandwidth: float | None = None,
    constraint: bool = True,
):
    """PRDC: actor penalised by (a - a_NN)^2, (s_NN, a_NN) the dataset sample nearest (s, a) in
    the beta-weighted metric; tabular-metric critic ([A])."""
    from theorylab.algorithms.offline.prdc import prdc

    return prdc(
        dataset,
        beta=beta,
        alpha=alpha,
        iterations=iterations,
        degree_u=degree_u,
        bandwidth=bandwidth,
        constraint=constraint,
    )


@register("td-jepa", kind="ope", problem="dataset", horizon="discounted", papers=("002-004#A4",))
def estimate_td_jepa(
    dataset, policy, rank: int = 3, iterations: int = 3000, lr: float = 1.0, init_seed: int = 0
):
    """Idealised TD-JEPA: linear state/task encoders and predictor by semi-gradient TD on latent
    targets (reward-free), then V^pi(mu0) zero-shot from the latent successor features
    (Bagatella et al. 2025; [A])."""
    from theorylab.algorithms.offline.td_jepa import td_jepa

    return td_jepa(dataset, policy, rank=rank, iterations=iterations, lr=lr, init_seed=init_seed)[0]


@register(
    "video-representation",
    kind="offline",
    problem="dataset",
    bounds=(),
    horizon="discounted",
    papers=("001#30",),
)
def fit_video_representation(
    dataset, objective: str = "inverse-kinematics", n_latent: int | None = None, prior: float = 1.0
):
    """Decoder from video (forward / temporal-contrastive, actions unused) or action-labelled
    inverse kinematics, exact tabular fits, then planning in the decoded model (Misra et al.
    2024; [A])."""
    from theorylab.algorithms.offline.video_representation import video_representation

    return video_representation(dataset, objective, n_latent, prior)


@register(
    "bisimulation-vi",
    kind="offline",
    problem="dataset",
    bounds=(),
    horizon="finite",
    papers=("000#49", "001#45", "002-004#C2"),
)
def fit_bisimulation_vi(dataset, observations: int | None = None, delta: float = 0.1):
    """Offline VI on observation histories through a bisimulation abstraction of the last
    observation learned from the data, lifted to every history (Hong et al. 2024; [A])."""
    from theorylab.algorithms.offline.history_abstraction import bisimulation_vi

    return bisimulation_vi(dataset, observations=observations, delta=delta)


@register(
    "pamc", kind="offline", problem="dataset", bounds=(), horizon="finite", papers=("001#32",)
)
def fit_pamc(
    dataset,
    rank: int = 2,
    alpha: float = 0.1,
    calibration: float = 0.2,
    weights: str = "uniform",
    split_seed: int = 0,
):
    """PAMC (Shihab et al. 2025): rank-r ALS completion of the reward matrix on the visited pairs,
    split-conformal radius at level alpha, backward induction on R_hat ([V] abstract, [A])."""
    from theorylab.algorithms.offline.pamc import pamc

    return pamc(
        dataset, rank=rank, alpha=alpha, calibration=calibration, weights=weights,
        split_seed=split_seed,
    )  # fmt: skip


@register(
    "density-model-vi",
    kind="offline",
    problem="dataset",
    bounds=(),
    horizon="finite",
    density_features=True,
    papers=("001#28",),
)
def fit_density_model_vi(dataset, mu=None):
    """Backward induction on the empirical model projected onto the span of known density
    features mu_h (Huang, Chen & Jiang 2023 setting; [A]/[M]); mu from the low-rank MDP."""
    from theorylab.algorithms.offline.density_features import density_model_vi
    from theorylab.algorithms.offline.empirical import require_data

    require_data(dataset, "density-model-vi")  # an empty dataset is refused first, as everywhere
    if mu is None:
        raise ValueError("density-model-vi: give the density features mu (H, d, S) or (d, S)")
    return density_model_vi(dataset, mu)


@register(
    "hip-abstraction-vi",
    kind="offline",
    problem="dataset",
    bounds=(),
    horizon="discounted",
    papers=("001#31",),
)
def fit_hip_abstraction_vi(
    dataset, tasks: int | None = None, n_latent: int | None = None, pooled: bool = True
):
    """One block decoder learned from every task's samples of a HiP-BMDP (pooled=True; per task
    with pooled=False), then a latent model and VI per task (Zhang et al. 2021; [A])."""
    from theorylab.algorithms.offline.hip_abstraction import hip_abstraction_vi

    return hip_abstraction_vi(dataset, tasks=tasks, n_latent=n_latent, pooled=pooled)


@register(
    "cfgrl", kind="offline", problem="dataset", bounds=(), horizon="finite", papers=("000#68",)
)
def fit_cfgrl(dataset, w: float = 1.0, tau: float = 0.1):
    """CFGRL (Frans et al. 2025): pi_w ∝ pi_beta * p(o = 1 | s, a)^w with
    p = sigmoid(A^{pi_beta} / tau) on the empirical model; w = 0 is behaviour cloning ([A])."""
    from theorylab.algorithms.offline.cfgrl import cfgrl
    from theorylab.algorithms.offline.empirical import require_data

    require_data(dataset, "cfgrl")  # an empty dataset is refused first, as everywhere
    return cfgrl(dataset, w=w, tau=tau)
