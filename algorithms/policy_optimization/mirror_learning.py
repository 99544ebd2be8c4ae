r"""Mirror learning with exact advantages: the drift-penalised update of Kuba et al. (2022) and the
drifts of PPO-clip, KL and Discovered Policy Optimisation.

Seed row ``seed-catalogue-000.md#8``: C. Lu, J. G. Kuba, A. Letcher, L. Metz, C. Schroeder de
Witt, J. Foerster, "Discovered Policy Optimisation", NeurIPS 2022 (arXiv:2210.05639). What was
read [V]: the abstract ("Mirror Learning, which includes RL algorithms, such as PPO, offers a
potential middle-ground starting point: while every method in this framework comes with
theoretical guarantees, components that differentiate them are subject to design"; LPO, the
meta-learned drift, analysed into the closed-form DPO) and its introduction's summary of Mirror
Learning ("Any Mirror Learning algorithm provably achieves monotonic improvement of the return,
and converges to an optimal policy"); the DPO drift with alpha = 2, beta = 0.6 as written in an
independent reimplementation (rejax's ``dpo_drift``, citing the paper):

    f(r, A) = ReLU((r - 1) A - alpha tanh((r - 1) A / alpha))      A >= 0,
              ReLU(log(r) A - beta tanh(log(r) A / beta))          A < 0.

Reconstructed [A] (Kuba et al. 2022's definitions were not read; the standard statement): a
drift D_pi(pibar | s) >= 0 with D_pi(pi | s) = 0 and zero gradient in pibar at pibar = pi;
here every drift is a ratio drift ``D(pibar | s) = sum_a pi(a|s) f(r_a, A_pi(s, a))`` with
``r_a = pibar(a|s) / pi(a|s)``, so the axioms read f >= 0, f(1, A) = 0, df/dr(1, A) = 0
(:func:`drift_axioms`). The update is

    pi_{k+1}(.|s) = argmax_pibar  sum_a pi_k(a|s) [r_a A_k(s, a) - f(r_a, A_k(s, a))]   (every s)

and the proof of monotone improvement is one line of the performance-difference lemma: the
argmax is at least the value 0 of pibar = pi_k, so ``E_{pi_{k+1}} A_k(s) >= D(pi_{k+1} | s) >=
0`` at every state, hence ``J(pi_{k+1}) - J(pi_k) = sum_s d^{pi_{k+1}}(s) E_{pi_{k+1}} A_k(s) /
(1 - gamma) >= 0``. A "drift" that can be negative breaks exactly this step.

Drifts (:data:`DRIFTS`): ``ppo-clip`` ``ReLU((r - clip(r, 1 - eps, 1 + eps)) A)`` (the
PPO-clip objective ``min(r A, clip(r) A) = r A - f``; eps = 0.2), ``kl`` ``r log r - r + 1``
(its pi-average is KL(pibar || pi); its argmax is exact, ``pi_k e^A / Z``: the
natural-policy-gradient / mirror-descent step with unit step), ``dpo`` (above).

Algorithm (``mirror-learning``): from the uniform policy, K updates on a discounted tabular MDP
with exact advantages (linear solves); the per-state argmax over the simplex is taken on the
grid of policies with denominators ``grid`` (A <= 4) plus pi_k itself [A: the exact argmax of a
non-concave drift is not computable; the grid keeps the guarantee, which needs only an update at
least as good as pi_k]. The grid caps the reachable return at that of the best positive-grid
policy, ``1 - (A - 1)/grid`` on an optimal action and ``1/grid`` on the others (measured: the
ppo-clip and dpo runs reach it within 10 steps on random MDPs, S = 5, A = 3, gamma = 0.9).
"""

from __future__ import annotations

from itertools import combinations

import numpy as np

from theorylab.algorithms.planning.advantage import policy_advantage
from theorylab.algorithms.policy_optimization.path import PolicyPath, check_iterations
from theorylab.algorithms.registry import register


def _ppo_clip(r: np.ndarray, A: np.ndarray, eps: float = 0.2) -> np.ndarray:
    return np.maximum((r - np.clip(r, 1.0 - eps, 1.0 + eps)) * A, 0.0)


def _kl(r: np.ndarray, A: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(r > 0, r * np.log(np.where(r > 0, r, 1.0)), 0.0) - r + 1.0


def _dpo(r: np.ndarray, A: np.ndarray, alpha: float = 2.0, beta: float = 0.6) -> np.ndarray:
    x = (r - 1.0) * A
    with np.errstate(divide="ignore", invalid="ignore"):
        y = np.log(r) * A  # r = 0 with A < 0: +inf, the drift +inf (no mass can leave fully)
        up = np.maximum(x - alpha * np.tanh(x / alpha), 0.0)
        down = np.maximum(y - beta * np.tanh(y / beta), 0.0)
    return np.where(A >= 0, up, np.where(np.isnan(down), np.inf, down))


DRIFTS = {"ppo-clip": _ppo_clip, "kl": _kl, "dpo": _dpo}


def drift(name: str):
    """The ratio drift f(r, A) registered under ``name``."""
    if name not in DRIFTS:
        raise ValueError(f"mirror-learning: drift must be one of {', '.join(DRIFTS)}, got {name!r}")
    return DRIFTS[name]


def drift_axioms(f, ratios: np.ndarray, advantages: np.ndarray, h: float = 1e-6) -> dict:
    """The axioms on a grid: min f (>= 0), max |f(1, A)| (0), max |df/dr(1, A)| (0, central
    differences with step h)."""
    R, A = np.meshgrid(ratios, advantages, indexing="ij")
    ones = np.ones_like(advantages)
    return {
        "min_value": float(np.min(f(R, A))),
        "max_at_one": float(np.max(np.abs(f(ones, advantages)))),
        "max_slope_at_one": float(
            np.max(np.abs(f(ones + h, advantages) - f(ones - h, advantages)) / (2 * h))
        ),
    }


def simplex_grid(A: int, n: int) -> np.ndarray:
    """(G, A) every distribution over A actions with probabilities in {1/n, 2/n, ...} (all
    positive: a ratio drift is infinite where pi_k = 0, so a policy that lost an action could
    never regain it)."""
    rows = []
    for bars in combinations(range(1, n), A - 1):  # compositions of n into A positive parts
        rows.append(np.diff(np.array((0, *bars, n))))
    return np.array(rows, dtype=np.float64) / n


def mirror_step(policy: np.ndarray, adv: np.ndarray, f, grid: np.ndarray) -> np.ndarray:
    """(S, A) the per-state argmax of ``sum_a pi(a) [r_a A(a) - f(r_a, A(a))]`` over the grid
    and pi itself (module docstring)."""
    out = np.empty_like(policy)
    for s in range(policy.shape[0]):
        cand = np.vstack([policy[s], grid])  # (G+1, A): pi first, so ties keep pi
        with np.errstate(divide="ignore", invalid="ignore"):
            r = np.where(policy[s] > 0, cand / policy[s], np.where(cand > 0, np.inf, 1.0))
        value = (policy[s] * (r * adv[s] - f(r, np.broadcast_to(adv[s], r.shape)))).sum(axis=1)
        value = np.where(np.isfinite(value), value, -np.inf)
        out[s] = cand[int(np.argmax(value))]
    return out


def mirror_learning_iterates(mdp, iterations: int, *, drift_name: str = "dpo", grid: int = 40):
    """K mirror-learning updates from the uniform policy (module docstring)."""
    K = check_iterations("mirror-learning", iterations)
    f = drift(drift_name)
    if isinstance(grid, bool) or not isinstance(grid, (int, np.integer)) or grid < 2:
        raise ValueError(f"mirror-learning: grid must be an integer >= 2, got {grid!r}")
    if getattr(mdp, "gamma", None) is None or getattr(mdp, "horizon", None) is not None:
        raise ValueError(
            "mirror-learning is stated for discounted MDPs; give one with gamma (e.g. "
            f"random:S=5,A=3,gamma=0.9), got {getattr(mdp, 'name', mdp)!r}"
        )
    if mdp.A > 4:
        raise ValueError(f"mirror-learning: the grid argmax needs A <= 4 actions, got A = {mdp.A}")
    points = simplex_grid(mdp.A, int(grid))
    pi = np.full((mdp.S, mdp.A), 1.0 / mdp.A)
    pis, etas = [pi], []
    for _ in range(K):
        adv = policy_advantage(mdp, pi)
        etas.append(adv.eta)
        if f is _kl:  # the exact argmax: pi_k e^A / Z (the KL-drift step is NPG / PMD)
            z = np.log(pi) + adv.A
            pi = np.exp(z - z.max(axis=1, keepdims=True))
            pi = pi / pi.sum(axis=1, keepdims=True)
        else:
            pi = mirror_step(pi, adv.A, f, points)
        pis.append(pi)
    etas.append(policy_advantage(mdp, pi).eta)
    P = np.stack(pis)  # (K+1, S, A)
    with np.errstate(divide="ignore", invalid="ignore"):
        entropy = -np.where(P > 0, P * np.log(np.where(P > 0, P, 1.0)), 0.0).sum(-1).mean(-1)
    etas = np.array(etas)
    return PolicyPath(
        objective=etas,
        regularised=etas,
        entropy=entropy,
        target_gap=np.full(etas.size, np.nan),
        target_value=float("nan"),
        policies=P,
        config={"drift": drift_name, "grid": int(grid), "gamma": float(mdp.gamma)},
    )


@register(
    "mirror-learning", kind="policy-optimization", problem="tabular-discounted", papers=("000#8",)
)
def mirror_learning(problem, iterations, drift: str = "dpo", grid: int = 40):
    """Mirror learning with exact advantages and a PPO-clip, KL or DPO drift (Lu et al. 2022)."""
    return mirror_learning_iterates(problem, iterations, drift_name=drift, grid=grid)
