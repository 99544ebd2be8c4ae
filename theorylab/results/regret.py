"""Online runs: exact per-episode regret (``kind="online"``; ``tl.run(..., episodes=K)``).

``RegretResult`` (``RunResult`` is the same class, its name before the result family existed):
arrays have a leading seed axis B and an episode axis K.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from theorylab.results.base import Result, register_result

FULL_CURVE_EPISODES = 10_000
"""Runs up to this many episodes keep every episode in their JSON summary and in
``theorylab run --csv``; longer runs keep a log-spaced grid of K there, and the CLI says so (the
full curves: ``to_frame(resolution="full")``, and the binary store, ``save()``)."""


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
        """Seed-episodes per second: B x the episodes this process ran (K, less those of a
        resumed checkpoint: ``config["episodes_this_run"]``) / wall time (which leaves out the
        compile time, ``config["compile_seconds"]``)."""
        ran = self.config.get("episodes_this_run", self.episodes)
        return self.n_seeds * ran / max(self.wall_seconds, 1e-12)

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
        episode, each as mean and Student t interval over seeds (``theorylab.stats.final_ci``),
        cut at 0 (both are >= 0) with ``*_ci_clipped`` saying whether the cut was needed."""
        from theorylab.stats import final_ci

        regret = final_ci(self.cumulative_regret[:, -1], confidence, support=(0.0, None))
        ret = final_ci(self.returns.mean(axis=1), confidence, support=(0.0, None))
        return {
            "algorithm": self.config.get("algorithm"),
            "mdp": self.config.get("mdp"),
            "episodes": self.episodes,
            "seeds": self.n_seeds,
            "optimal_value": self.optimal_value,
            "final_regret_mean": regret.mean,
            "final_regret_ci_low": regret.ci_low,
            "final_regret_ci_high": regret.ci_high,
            "final_regret_ci_clipped": regret.clipped,
            "mean_return": ret.mean,
            "mean_return_ci_low": ret.ci_low,
            "mean_return_ci_high": ret.ci_high,
            "mean_return_ci_clipped": ret.clipped,
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
            "95% CI": f"[{s['final_regret_ci_low']:.2f}, {s['final_regret_ci_high']:.2f}]"
            + (" clipped at 0" if s["final_regret_ci_clipped"] else ""),
            "regret per episode, last 10%": f"{self.tail_rate():.4g}",
            "episodes/s (seed-episodes)": f"{self.episodes_per_second:.0f}",
        }

    def episode_grid(self) -> np.ndarray:
        """Episode counts that summaries carry: all of them up to ``FULL_CURVE_EPISODES``, else
        a log-spaced grid of K (:func:`theorylab.curves.log_grid`, 20 per decade, 1 and K
        included); the full curves stay in ``save()``'s binary store."""
        from theorylab.curves import log_grid

        K = self.episodes
        return np.arange(1, K + 1) if K <= FULL_CURVE_EPISODES else log_grid(K, 20)

    def tail_rate(self, fraction: float = 0.1) -> float:
        """Mean exact regret per episode over the last ``fraction`` of the episodes (all seeds):
        near 0 once the learner has converged, near the null agent's while it has not."""
        K = self.episodes
        return float(self.regret[:, K - max(1, int(K * fraction)) :].mean())

    def json_summary(self) -> dict[str, Any]:
        """What ``theorylab run --json`` writes: the summary, the config and the per-seed
        cumulative regret at the episode counts ``K_grid`` (:meth:`episode_grid`), whose last
        entry is K (the final values)."""
        s = self.summary()
        grid = self.episode_grid()
        return {
            "algorithm": self.config.get("algorithm"),
            "mdp": self.config.get("mdp"),
            "config": self.config,
            "optimal_value": self.optimal_value,
            "final_regret_mean": s["final_regret_mean"],
            "final_regret_ci": [s["final_regret_ci_low"], s["final_regret_ci_high"]],
            "final_regret_ci_clipped": s["final_regret_ci_clipped"],
            "episodes_per_second": self.episodes_per_second,
            "wall_seconds": self.wall_seconds,
            "K_grid": grid.tolist(),
            "cumulative_regret": np.round(self.cumulative_regret[:, grid - 1], 10).tolist(),
        }

    def frame_columns(self, resolution: str = "full") -> dict[str, np.ndarray]:
        """One row per seed x episode: seed, episode, regret, cumulative_regret, return,
        value_estimate; every episode 1..K (``resolution="full"``) or only those of the
        log-spaced :meth:`episode_grid` (``"grid"``: a long run's table stays small)."""
        B, K = self.regret.shape
        grid = self.episode_grid() if resolution == "grid" else np.arange(1, K + 1)
        at = grid - 1
        return {
            **self.long_index(B, grid, "episode"),
            "regret": np.asarray(self.regret, dtype=float)[:, at].ravel(),
            "cumulative_regret": self.cumulative_regret[:, at].ravel(),
            "return": np.asarray(self.returns, dtype=float)[:, at].ravel(),
            "value_estimate": np.asarray(self.value_estimates, dtype=float)[:, at].ravel(),
        }

    def thinning(self) -> str | None:
        """What the ``"grid"`` table leaves out (None up to ``FULL_CURVE_EPISODES`` episodes)."""
        n = len(self.episode_grid())
        if n == self.episodes:
            return None
        return f"{n} log-spaced episodes of {self.episodes:,} per seed"

    def default_resolution(self) -> str:
        return "full" if self.episodes <= FULL_CURVE_EPISODES else "grid"

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
