"""Online runs: exact per-episode regret (``kind="online"``; ``tl.run(..., episodes=K)``).

``RegretResult`` (``RunResult`` is the same class, its name before the result family existed):
arrays have a leading seed axis B and an episode axis K.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from theorylab.results.base import Result, register_result


@register_result("regret")
@dataclass
class RegretResult(Result):
    """Everything one online run produced.

    regret: ``(B, K)`` exact per-episode regret; returns: ``(B, K)`` realised returns;
    value_estimates: ``(B, K)`` the agent's own V_1(mu0) estimate before each episode (NaN when the
    agent has none); optimal_value: V*_1(mu0) (or the objective's optimum); config: algorithm,
    MDP, params, seeds, versions.
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

    # ---------------------------------------------------------------- the Result protocol
    def arrays(self) -> dict[str, np.ndarray]:
        return {
            "regret": np.asarray(self.regret),
            "returns": np.asarray(self.returns),
            "value_estimates": np.asarray(self.value_estimates),
        }

    def metadata(self) -> dict[str, Any]:
        return {"optimal_value": float(self.optimal_value)}

    @classmethod
    def from_stored(cls, meta: dict[str, Any], arrays: dict[str, np.ndarray]) -> RegretResult:
        return cls(
            regret=arrays["regret"],
            returns=arrays["returns"],
            value_estimates=arrays["value_estimates"],
            optimal_value=float(meta["optimal_value"]),
            wall_seconds=float(meta["wall_seconds"]),
            config=meta["config"],
        )

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

    def table_row(self) -> dict[str, str]:
        """One line of ``theorylab run``'s table."""
        s = self.summary()
        return {
            "algorithm": str(self.config.get("algorithm")),
            "mdp": str(self.config.get("mdp")),
            "K": str(self.episodes),
            "seeds": str(self.n_seeds),
            "final regret (mean)": f"{s['final_regret_mean']:.2f}",
            "95% CI": f"[{s['final_regret_ci_low']:.2f}, {s['final_regret_ci_high']:.2f}]",
            "episodes/s (seed-episodes)": f"{self.episodes_per_second:.0f}",
        }

    def json_summary(self) -> dict[str, Any]:
        """What ``theorylab run --json`` writes: the summary, the config and the per-seed
        cumulative regret curves."""
        s = self.summary()
        return {
            "algorithm": self.config.get("algorithm"),
            "mdp": self.config.get("mdp"),
            "config": self.config,
            "optimal_value": self.optimal_value,
            "final_regret_mean": s["final_regret_mean"],
            "final_regret_ci": [s["final_regret_ci_low"], s["final_regret_ci_high"]],
            "episodes_per_second": self.episodes_per_second,
            "wall_seconds": self.wall_seconds,
            "cumulative_regret": np.round(self.cumulative_regret, 10).tolist(),
        }

    def frame_columns(self) -> dict[str, np.ndarray]:
        """One row per seed x episode: seed, episode (1..K), regret, cumulative_regret,
        return, value_estimate."""
        B, K = self.regret.shape
        return {
            **self.long_index(B, np.arange(1, K + 1), "episode"),
            "regret": np.asarray(self.regret, dtype=float).ravel(),
            "cumulative_regret": self.cumulative_regret.ravel(),
            "return": np.asarray(self.returns, dtype=float).ravel(),
            "value_estimate": np.asarray(self.value_estimates, dtype=float).ravel(),
        }

    def plot(self, path=None, *, ax=None, bound_curves=None, rescale_bound=False, **kwargs):
        """Mean cumulative regret with a bootstrap band over seeds (and bound curves ``{label:
        (K,)}`` when given), via :func:`theorylab.plotting.plot_regret`."""
        from theorylab.plotting import plot_regret

        label = str(self.config.get("algorithm", "regret"))
        kwargs.setdefault(
            "title", f"{label} on {self.config.get('mdp', '?')} ({self.n_seeds} seeds)"
        )
        ax = plot_regret(
            {label: self.cumulative_regret},
            bound_curves=bound_curves,
            rescale_bound=rescale_bound,
            ax=ax,
            **kwargs,
        )
        return self._finish_plot(ax, path)


RunResult = RegretResult
