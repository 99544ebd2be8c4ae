r"""Linear and low-rank MDP families, and linear bandits, registered by name.

``linear-simplex``  (theory.md 7.1, the ``TabLinearMDP`` construction)
    ``phi(s, a) ~ U(simplex^{d-1})`` for every pair; for every step h the d rows of
    ``mu_h (d, S)`` are distributions over S, ``~ Dirichlet(concentration)`` (``concentration=1``
    is U(simplex^{S-1}), theory.md's law); so ``P_h(.|s,a) = <phi(s,a), mu_h>`` is a mixture of d
    distributions. Rewards: ``rewards=simplex`` draws ``theta_h ~ U(simplex^{d-1})`` (theory.md;
    mean rewards are then about 1/d), ``rewards=cube`` draws ``theta_h ~ U[0, 1]^d`` (rewards
    spread over [0, 1]). ``stationary=true`` draws one mu and theta for all h. Start: state 0.
    Random stream ``default_rng(seed)``: phi, then mu (h = 0..H-1), then theta.
``onehot``
    The one-hot embedding (d = S*A, :func:`theorylab.mdps.linear.one_hot_linear`) of another
    family; its spec goes in ``base`` with ``;`` in place of ``,``:
    ``onehot:base=chain;S=10;H=20``.
``hard-linear``  (theory.md 2.4, the ``HardLinearMDP`` construction of the Omega(dH sqrt(T))
    lower bound, Zhou-Gu-Szepesvari via Hu et al. 2022)
    Two states x0 (state 0, the start) and x1; ``2^(d-1)`` actions ``a in {-1, +1}^(d-1)``
    (action index = position in ``itertools.product([-1, 1], repeat=d-1)``); ``delta = 1/H``;
    ``Delta = gap * delta`` (``0 < gap <= 1`` keeps every probability >= 0);
    ``theta = sign * Delta / (d - 1)`` with ``sign ~ U{-1, +1}^(d-1)`` from ``sign_seed``;
    ``alpha = sqrt(Delta / ((d - 1)(1 + Delta)))``, ``beta = sqrt(1 / (1 + Delta))`` (so that
    ``||phi(x0, a)|| = 1``)::

        phi(x0, a) = (alpha a, beta, 0),        phi(x1, a) = (0, ..., 0, 1)
        mu(x0) = (-theta/alpha, (1 - delta)/beta, delta)
        mu(x1) = (theta/alpha, delta/beta, 1 - delta)
        r(s, a) = last feature coordinate   (1 in x1, 0 in x0)

    so ``P(x1 | x0, a) = delta + <a, theta>``, ``P(x1 | x1, a) = 1 - delta``; the best action is
    ``a = sign`` (``<a, theta> = Delta``). The feature dimension is **d + 1** (``mdp.d``): the
    name's ``d`` is the paper's (d - 1 action bits). The lower-bound proof takes Delta of order
    sqrt(delta / K) for a K-episode run (the exact constant is not reproduced here); ``gap`` sets
    it directly.
``linear-misspecified``
    ``linear-simplex`` mixed with a tabular perturbation of weight ``epsilon``
    (:class:`theorylab.mdps.linear.MisspecifiedLinearMDP`): TV and reward misspecification
    ``<= epsilon``; the perturbation is drawn from ``default_rng([seed, 1])``.
``lowrank-simplex``
    ``linear-simplex`` with its features hidden (:class:`theorylab.mdps.lowrank.LowRankMDP`) and a
    candidate class of ``1 + n_random + n_perturbed`` simplex feature maps
    (:func:`theorylab.mdps.lowrank.simplex_feature_class`, drawn from ``default_rng([seed, 2])``).
``linear-bandit``
    A linear bandit (H = 1, one state, :class:`theorylab.mdps.linear.LinearBandit`) with A arms
    ``x_a = (u_a / sqrt 2, 1 / sqrt 2)`` and ``theta = (v / sqrt 2, 1 / sqrt 2)``, ``u_a, v``
    uniform on the unit sphere of R^(d-1): ``||x_a|| = ||theta|| = 1`` and the mean reward
    ``<x_a, theta> = (1 + <u_a, v>) / 2`` lies in [0, 1]. Bernoulli rewards by default.
"""

from __future__ import annotations

import itertools

import numpy as np

from theorylab.errors import InvalidMDPError
from theorylab.mdps.families.chain import require_int, require_probability
from theorylab.mdps.linear import LinearBandit, LinearMDP, MisspecifiedLinearMDP, one_hot_linear
from theorylab.mdps.lowrank import LowRankMDP, random_simplex, simplex_feature_class
from theorylab.mdps.registry import register

REWARD_LAWS = ("simplex", "cube")


def _reward_model(family: str, reward_model: str) -> str:
    if reward_model not in ("deterministic", "bernoulli"):
        raise InvalidMDPError(
            f"{family}: parameter reward_model must be 'deterministic' or 'bernoulli', "
            f"got reward_model={reward_model!r}"
        )
    return reward_model


def simplex_factors(
    S: int,
    A: int,
    d: int,
    H: int,
    *,
    seed: int,
    rewards: str = "simplex",
    concentration: float = 1.0,
    stationary: bool = False,
    family: str = "linear-simplex",
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``phi (S, A, d)``, ``mu (H, d, S)`` and ``theta (H, d)`` of a ``linear-simplex`` MDP."""
    S = require_int(family, "S", S, 1)
    A = require_int(family, "A", A, 1)
    d = require_int(family, "d", d, 1)
    H = require_int(family, "H", H, 1)
    if rewards not in REWARD_LAWS:
        raise InvalidMDPError(
            f"{family}: parameter rewards must be 'simplex' or 'cube', got rewards={rewards!r}"
        )
    conc = float(concentration)
    if not (conc > 0 and np.isfinite(conc)):
        raise InvalidMDPError(
            f"{family}: parameter concentration must be > 0, got concentration={concentration!r}"
        )
    rng = np.random.default_rng(seed)
    phi = random_simplex(rng, (S, A), d)  # (S, A, d)
    n_mu = 1 if stationary else H
    if conc == 1.0:
        mu = random_simplex(rng, (n_mu, d), S)  # (n_mu, d, S)
    else:
        mu = rng.dirichlet(np.full(S, conc), size=(n_mu, d))  # (n_mu, d, S)
    if rewards == "simplex":
        theta = random_simplex(rng, (n_mu,), d)  # (n_mu, d)
    else:
        theta = rng.uniform(size=(n_mu, d))  # (n_mu, d)
    return phi, np.broadcast_to(mu, (H, d, S)), np.broadcast_to(theta, (H, d))


def _simplex_name(family, S, A, d, H, seed, rewards, concentration, stationary) -> str:
    name = f"{family}:S={S},A={A},d={d},H={H},seed={seed},rewards={rewards}"
    if float(concentration) != 1.0:
        name += f",concentration={float(concentration)!r}"
    if stationary:
        name += ",stationary=true"
    return name


@register("linear-simplex")
def linear_simplex(
    S: int = 10,
    A: int = 4,
    d: int = 5,
    H: int = 10,
    seed: int = 0,
    rewards: str = "simplex",
    concentration: float = 1.0,
    stationary: bool = False,
    reward_model: str = "deterministic",
) -> LinearMDP:
    """Random simplex-feature linear MDP (theory.md 7.1): phi, mu rows on simplices."""
    phi, mu, theta = simplex_factors(
        S, A, d, H, seed=seed, rewards=rewards, concentration=concentration, stationary=stationary
    )
    name = _simplex_name("linear-simplex", S, A, d, H, seed, rewards, concentration, stationary)
    if reward_model != "deterministic":
        name += f",reward_model={reward_model}"
    return LinearMDP(
        phi,
        mu[0] if stationary else mu,
        theta[0] if stationary else theta,
        horizon=H,
        reward_model=_reward_model("linear-simplex", reward_model),
        name=name,
    )


@register("onehot")
def onehot(base: str = "riverswim") -> LinearMDP:
    """One-hot embedding (d = S*A) of another family: ``onehot:base=chain;S=10;H=20``."""
    from theorylab.mdps.registry import make

    spec = base.replace(";", ",")
    name, _, rest = spec.partition(",")
    if ":" not in name and rest:
        spec = f"{name}:{rest}"
    if spec.split(":")[0].strip().lower() == "onehot":
        raise InvalidMDPError("onehot: the base family cannot itself be 'onehot'")
    mdp = make(spec)
    if isinstance(mdp, LinearMDP):
        mdp = mdp.to_tabular()
    return one_hot_linear(mdp, name=f"onehot:base={base}")


def hard_linear_factors(
    d: int, H: int, gap: float, sign_seed: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``phi (2, 2^(d-1), d+1)``, ``mu (d+1, 2)``, ``theta_r (d+1,)`` and the signs ``(d-1,)``."""
    d = require_int("hard-linear", "d", d, 2)
    H = require_int("hard-linear", "H", H, 1)
    g = require_probability("hard-linear", "gap", gap)
    if g <= 0:
        raise InvalidMDPError(f"hard-linear: parameter gap must lie in (0, 1], got gap={gap!r}")
    if d - 1 > 16:
        raise InvalidMDPError(f"hard-linear: d={d} gives 2^{d - 1} actions; at most d = 17")
    n = d - 1
    delta = 1.0 / H
    Delta = g * delta
    alpha = np.sqrt(Delta / (n * (1.0 + Delta)))
    beta = np.sqrt(1.0 / (1.0 + Delta))
    signs = np.random.default_rng(sign_seed).choice([-1.0, 1.0], size=n)  # (d-1,)
    theta = signs * Delta / n  # (d-1,)
    actions = np.array(list(itertools.product([-1.0, 1.0], repeat=n)))  # (2^n, n)
    A = actions.shape[0]
    phi = np.zeros((2, A, d + 1))  # (S=2, A, d+1)
    phi[0, :, :n] = alpha * actions
    phi[0, :, n] = beta
    phi[1, :, d] = 1.0
    mu = np.zeros((d + 1, 2))  # (d+1, S=2): column s' is mu(s')
    mu[:n, 0] = -theta / alpha
    mu[n, 0] = (1.0 - delta) / beta
    mu[d, 0] = delta
    mu[:n, 1] = theta / alpha
    mu[n, 1] = delta / beta
    mu[d, 1] = 1.0 - delta
    theta_r = np.zeros(d + 1)
    theta_r[d] = 1.0
    return phi, mu, theta_r, signs


@register("hard-linear")
def hard_linear(
    d: int = 4,
    H: int = 10,
    gap: float = 0.5,
    sign_seed: int = 0,
    reward_model: str = "deterministic",
) -> LinearMDP:
    """Hard linear MDP of the Omega(dH sqrt(T)) lower bound (theory.md 2.4); feature dim d+1."""
    phi, mu, theta_r, _ = hard_linear_factors(d, H, gap, sign_seed)
    name = f"hard-linear:d={d},H={H},gap={float(gap)!r},sign_seed={sign_seed}"
    if reward_model != "deterministic":
        name += f",reward_model={reward_model}"
    return LinearMDP(
        phi,
        mu,
        theta_r,
        horizon=H,
        reward_model=_reward_model("hard-linear", reward_model),
        name=name,
        state_names=["x0", "x1"],
    )


@register("linear-misspecified")
def linear_misspecified(
    S: int = 10,
    A: int = 4,
    d: int = 5,
    H: int = 10,
    seed: int = 0,
    epsilon: float = 0.1,
    rewards: str = "simplex",
    concentration: float = 1.0,
    stationary: bool = False,
    reward_model: str = "deterministic",
) -> MisspecifiedLinearMDP:
    """linear-simplex mixed with a tabular perturbation of weight epsilon (TV, reward <= eps)."""
    nominal = linear_simplex(S, A, d, H, seed, rewards, concentration, stationary, reward_model)
    eps = require_probability("linear-misspecified", "epsilon", epsilon)
    name = (
        _simplex_name("linear-misspecified", S, A, d, H, seed, rewards, concentration, stationary)
        + f",epsilon={eps!r}"
    )
    return MisspecifiedLinearMDP(nominal, eps, rng=np.random.default_rng([seed, 1]), name=name)


@register("lowrank-simplex")
def lowrank_simplex(
    S: int = 10,
    A: int = 3,
    d: int = 3,
    H: int = 5,
    seed: int = 0,
    n_random: int = 4,
    n_perturbed: int = 2,
    swap_fraction: float = 0.5,
    rewards: str = "cube",
    concentration: float = 1.0,
    stationary: bool = False,
    reward_model: str = "deterministic",
) -> LowRankMDP:
    """linear-simplex with hidden features and a finite candidate class (true map + distractors)."""
    phi, mu, theta = simplex_factors(
        S,
        A,
        d,
        H,
        seed=seed,
        rewards=rewards,
        concentration=concentration,
        stationary=stationary,
        family="lowrank-simplex",
    )
    n_random = require_int("lowrank-simplex", "n_random", n_random, 0)
    n_perturbed = require_int("lowrank-simplex", "n_perturbed", n_perturbed, 0)
    candidates, _ = simplex_feature_class(
        phi,
        np.random.default_rng([seed, 2]),
        n_random=n_random,
        n_perturbed=n_perturbed,
        swap_fraction=float(swap_fraction),
    )
    name = _simplex_name("lowrank-simplex", S, A, d, H, seed, rewards, concentration, stationary)
    name += f",n_random={n_random},n_perturbed={n_perturbed},swap_fraction={float(swap_fraction)!r}"
    return LowRankMDP(
        phi,
        mu[0] if stationary else mu,
        theta[0] if stationary else theta,
        candidates,
        horizon=H,
        reward_model=_reward_model("lowrank-simplex", reward_model),
        name=name,
    )


def _unit_sphere(rng: np.random.Generator, n: int, dim: int) -> np.ndarray:
    v = rng.standard_normal((n, dim))  # (n, dim)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


@register("linear-bandit")
def linear_bandit(
    d: int = 5, A: int = 20, seed: int = 0, reward_model: str = "bernoulli"
) -> LinearBandit:
    """Linear bandit: A arms on the unit sphere (shifted), rewards (1 + <u_a, v>)/2 in [0, 1]."""
    d = require_int("linear-bandit", "d", d, 2)
    A = require_int("linear-bandit", "A", A, 1)
    rng = np.random.default_rng(seed)
    u = _unit_sphere(rng, A, d - 1)  # (A, d-1)
    v = _unit_sphere(rng, 1, d - 1)[0]  # (d-1,)
    arms = np.concatenate([u, np.ones((A, 1))], axis=1) / np.sqrt(2.0)  # (A, d)
    theta = np.concatenate([v, [1.0]]) / np.sqrt(2.0)  # (d,)
    name = f"linear-bandit:d={d},A={A},seed={seed}"
    if reward_model != "bernoulli":
        name += f",reward_model={reward_model}"
    return LinearBandit(
        arms, theta, reward_model=_reward_model("linear-bandit", reward_model), name=name
    )
