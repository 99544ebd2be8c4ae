"""Top floor: run an online algorithm on an MDP for K episodes x B seeds with exact regret.

Per episode k and seed i (for the default, risk-neutral objective; see theorylab.objectives):

    regret_k = V*_1(mu0) - V^{pi_k}_1(mu0)

by exact, batched policy evaluation of every seed's policy on the true model (the way Colosseum
does it, not by subtracting noisy returns). The realised return of the sampled episode is kept
beside it.
"""

from __future__ import annotations

import importlib.metadata
import inspect
import platform
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from theorylab.agent import EnvSpec
from theorylab.backends import get_backend
from theorylab.objectives import RISK_NEUTRAL
from theorylab.registry import parse_spec
from theorylab.seeding import AGENT_STREAM, ENV_STREAM, generators, seed_indices

VERSIONED_PACKAGES = ("theorylab", "numpy", "scipy", "numba", "sympy", "cvxpy")


def package_versions() -> dict[str, str]:
    out = {"python": platform.python_version()}
    for name in VERSIONED_PACKAGES:
        try:
            out[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            out[name] = "not installed"
    return out


@dataclass
class RunResult:
    """Everything one ``run`` produced. Arrays have a leading seed axis ``B`` and episode axis K.

    regret: ``(B, K)`` exact per-episode regret; returns: ``(B, K)`` realised returns;
    value_estimates: ``(B, K)`` the agent's own V_1(mu0) estimate before each episode (NaN when the
    agent has none); optimal_value: V*_1(mu0); config: algorithm, MDP, params, seeds, versions.
    """

    regret: np.ndarray
    returns: np.ndarray
    value_estimates: np.ndarray
    optimal_value: float
    wall_seconds: float
    config: dict[str, Any] = field(default_factory=dict)

    @property
    def n_seeds(self) -> int:
        return self.regret.shape[0]

    @property
    def episodes(self) -> int:
        return self.regret.shape[1]

    @property
    def cumulative_regret(self) -> np.ndarray:
        """``(B, K)`` cumulative exact regret."""
        return np.cumsum(self.regret, axis=1)

    @property
    def episodes_per_second(self) -> float:
        """Seed-episodes per second: B * K / wall time."""
        return self.n_seeds * self.episodes / max(self.wall_seconds, 1e-12)

    def save(self, path) -> None:
        """Store this result in the directory ``path`` (``theorylab.store.save_result``)."""
        from theorylab.store import save_result

        save_result(self, path)

    @classmethod
    def load(cls, path) -> RunResult:
        """Load a result stored by :meth:`save` (``theorylab.store.load_result``)."""
        from theorylab.store import load_result

        return load_result(path)

    def summary(self, confidence: float = 0.95) -> dict[str, Any]:
        """Plain numbers for a summary table: final cumulative regret and mean return per
        episode, each as mean and Student t interval over seeds (``theorylab.stats.final_ci``)."""
        from theorylab.stats import final_ci

        regret = final_ci(self.cumulative_regret[:, -1], confidence)
        ret = final_ci(self.returns.mean(axis=1), confidence)
        return {
            "algorithm": self.config.get("algorithm"),
            "mdp": self.config.get("mdp"),
            "episodes": self.episodes,
            "seeds": self.n_seeds,
            "optimal_value": self.optimal_value,
            "final_regret_mean": regret.mean,
            "final_regret_ci_low": regret.ci_low,
            "final_regret_ci_high": regret.ci_high,
            "mean_return": ret.mean,
            "mean_return_ci_low": ret.ci_low,
            "mean_return_ci_high": ret.ci_high,
            "confidence": confidence,
            "wall_seconds": self.wall_seconds,
            "episodes_per_second": self.episodes_per_second,
        }


def _resolve_mdp(mdp):
    if isinstance(mdp, str):
        from theorylab.mdps import make

        return make(mdp)
    return mdp


def env_spec(mdp, *, known_rewards: bool = True) -> EnvSpec:
    """The learner's view of ``mdp``: sizes, horizon, mu0 and (optionally) the mean rewards."""
    if mdp.horizon is None:
        raise ValueError(f"{mdp!r} has no finite horizon; online episodic runs need one")
    return EnvSpec(
        S=mdp.S,
        A=mdp.A,
        H=mdp.horizon,
        reward=np.asarray(mdp.R) if known_rewards else None,
        mu0=np.asarray(mdp.mu0),
        stage_dependent=mdp.stage_dependent,
        reward_model=mdp.reward_model,
        features=getattr(mdp, "features", None),
    )


class BackendRiskNeutral:
    """The risk-neutral objective (:data:`theorylab.objectives.RISK_NEUTRAL`) with its exact
    policy evaluation and its rollouts run by a backend. With the numpy backend the numbers are
    RISK_NEUTRAL's, bit for bit; rollouts give the same trajectories on every backend."""

    name = RISK_NEUTRAL.name

    def __init__(self, backend) -> None:
        self.backend = backend

    def optimal_value(self, mdp) -> float:
        return RISK_NEUTRAL.optimal_value(mdp)

    def policy_values(self, mdp, policies: np.ndarray) -> np.ndarray:
        from theorylab.algorithms.planning import evaluate_policies

        V = evaluate_policies(mdp, policies, batched=True, backend=self.backend)
        # sum_s mu0(s) V(s) as a row sum (numpy's pairwise order, the same for every batch
        # size), not ``V @ mu0`` (BLAS: gemv for one seed and a blocked kernel for many, whose
        # last bits differ), so a seed's regret is the same alone or batched and the
        # whole-run kernel (algorithms/online/whole_run_kernel.py) reproduces it
        return (V[:, 0] * mdp.mu0).sum(axis=-1)

    def rollout(self, mdp, policies: np.ndarray, rngs):
        from theorylab.mdps import Trajectories

        return Trajectories(*self.backend.rollout_mdp(mdp, policies, list(rngs)))


def run(
    algorithm,
    mdp,
    episodes: int,
    seeds: int | Sequence[int] = 1,
    *,
    seed: int = 0,
    known_rewards: bool = True,
    progress: bool = False,
    backend: str = "numpy",
    device: str = "cpu",
    **params,
) -> RunResult:
    """Run ``algorithm`` on ``mdp`` for ``episodes`` episodes and every seed, with exact regret.

    algorithm: a registered name/spec (``"ucbvi-hoeffding"``, ``"ucbvi-bernstein:delta=0.05"``)
        or an agent class following ``theorylab.agent``'s protocol.
    mdp: a TabularMDP or a family spec (``"riverswim:S=6,H=20"``).
    seeds: B (indices 0..B-1) or explicit seed indices; seed i is reproducible alone or batched.
    seed: the root seed of the SeedSequence.
    known_rewards: give the learner the mean rewards (Azar et al.'s setting).
    backend, device: where the hot kernels run (:func:`theorylab.backends.get_backend`):
        "numpy" (default: the reference numbers, bit for bit), "numba", "torch" or "auto" (numba
        on the CPU, torch on CUDA). The backend drives the exact regret (policy evaluation on the
        true model) and the rollouts of the risk-neutral objective, and is passed to the agent
        when its constructor takes ``backend`` (UCBVI does). Rollouts are the same integers on
        every backend; values agree to round-off (see theorylab/backends/base.py).
    params: algorithm parameters (``delta=0.1``, ...).
    """
    from theorylab.algorithms.registry import make_agent

    if isinstance(episodes, bool) or int(episodes) != episodes or episodes < 1:
        raise ValueError(f"episodes must be a positive integer, got {episodes!r}")
    episodes = int(episodes)
    mdp = _resolve_mdp(mdp)
    idx = seed_indices(seeds)
    B = len(idx)
    env = env_spec(mdp, known_rewards=known_rewards)
    env_rngs = generators(seed, idx, ENV_STREAM)
    agent_rngs = generators(seed, idx, AGENT_STREAM)
    if isinstance(algorithm, str):
        from theorylab.algorithms.registry import ALGORITHMS, load_algorithms

        load_algorithms()
        cls = ALGORITHMS.get(parse_spec(algorithm)[0])
    else:
        cls = algorithm
    bk = get_backend(backend, device)
    agent_params = dict(params)
    accepted = inspect.signature(cls).parameters
    if "episodes" in accepted:
        agent_params.setdefault("episodes", episodes)  # K enters the confidence widths (T = KH)
    spec_params = parse_spec(algorithm)[1] if isinstance(algorithm, str) else {}
    if "backend" in accepted and "backend" not in spec_params:  # a spec's own backend wins
        agent_params.setdefault("backend", bk)
    if isinstance(algorithm, str):
        agent = make_agent(algorithm, env, B, agent_rngs, **agent_params)
        algo_name = algorithm
    else:
        agent = cls(env, B, agent_rngs, **agent_params)
        algo_name = getattr(cls, "name", cls.__name__)

    # What regret measures: the agent's own objective (e.g. CVaR at its tau), else expected return.
    objective = getattr(agent, "objective", None) or RISK_NEUTRAL
    v_star = objective.optimal_value(mdp)
    if objective is RISK_NEUTRAL:  # exact regret and rollouts through the backend's kernels
        objective = BackendRiskNeutral(bk)
    regret = np.empty((B, episodes))
    returns = np.empty((B, episodes))
    estimates = np.full((B, episodes), np.nan)
    has_estimate = hasattr(agent, "value_estimate")
    bar = None
    if progress:
        from tqdm.auto import tqdm

        bar = tqdm(total=episodes, desc=f"{algo_name} on {mdp.name}", unit="ep", leave=False)
    t0 = time.perf_counter()
    for k in range(episodes):
        pi = agent.policy()
        if has_estimate:
            estimates[:, k] = agent.value_estimate()
        regret[:, k] = v_star - objective.policy_values(mdp, pi)
        traj = objective.rollout(mdp, pi, env_rngs)
        returns[:, k] = traj.returns()
        agent.update(traj)
        if bar is not None:
            bar.update(1)
    wall = time.perf_counter() - t0
    if bar is not None:
        bar.close()
    config = {
        "algorithm": algo_name,
        "mdp": mdp.name,
        "S": mdp.S,
        "A": mdp.A,
        "H": mdp.horizon,
        "episodes": episodes,
        "seeds": idx,
        "seed": seed,
        "known_rewards": known_rewards,
        "objective": objective.name,
        "backend": bk.name,
        "device": bk.device,
        "params": {k: v for k, v in params.items()},
        "versions": package_versions(),
    }
    return RunResult(regret, returns, estimates, float(v_star), wall, config)


def __getattr__(name: str):
    # ARCHITECTURE.md names the sweep ``theorylab.experiment.sweep``; it lives in theorylab.sweep.
    if name in ("sweep", "Grid", "Cell", "SweepResult", "open_sweep"):
        import theorylab.sweep as _sweep

        return getattr(_sweep, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
