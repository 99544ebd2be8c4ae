"""Stochastic shortest path learners (``kind="ssp"``; ``tl.run("ssp-ca", "ssp-trap:S=8,A=3",
iterations=20000, seeds=8)``): per seed and recorded iteration, the exact sup-norm errors of the
critic V_n and of the current policy's cost J^{pi_n} against the optimal cost-to-go J*."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from theorylab.results.base import Result, register_result

_ARRAYS = ("grid", "critic_error", "policy_error", "optimal_cost")


@register_result("ssp")
@dataclass
class SSPResult(Result):
    """grid ``(M,)`` the iterations recorded (0: the start); critic_error ``(B, M)``
    ``max_s |V_n(s) - J*(s)|``; policy_error ``(B, M)`` ``max_s |J^{pi_n}(s) - J*(s)|`` (the
    current policy's exact cost; inf for an improper policy); optimal_cost ``(S,)`` J*."""

    grid: np.ndarray
    critic_error: np.ndarray
    policy_error: np.ndarray
    optimal_cost: np.ndarray
    wall_seconds: float
    config: dict[str, Any] = field(default_factory=dict)

    def arrays(self) -> dict[str, np.ndarray]:
        return {name: np.asarray(getattr(self, name)) for name in _ARRAYS}

    @classmethod
    def from_stored(cls, meta: dict[str, Any], arrays: dict[str, np.ndarray]):
        return cls(**{name: arrays[name] for name in _ARRAYS},
                   wall_seconds=float(meta["wall_seconds"]), config=meta["config"])  # fmt: skip

    def rate(self, metric: str = "policy_error", start: int = 100) -> float:
        """The least-squares slope of log(mean error over seeds) against log n for n >= start
        (finite errors only): the measured convergence rate (error ~ n^slope); NaN with fewer
        than two such points."""
        n = np.asarray(self.grid)
        err = np.mean(getattr(self, metric), axis=0)  # (M,), inf where an iterate is improper
        keep = (n >= start) & np.isfinite(err) & (err > 0)
        if keep.sum() < 2:
            return float("nan")
        return float(np.polyfit(np.log(n[keep]), np.log(err[keep]), 1)[0])

    def summary(self, confidence: float = 0.95) -> dict[str, Any]:
        """Final mean errors over seeds, their start values and the measured rate."""
        return {
            "algorithm": self.config.get("algorithm"),
            "problem": self.config.get("problem"),
            "iterations": int(self.grid[-1]),
            "seeds": int(np.asarray(self.critic_error).shape[0]),
            "optimal_cost_max": float(np.max(self.optimal_cost)),
            "critic_error": float(np.mean(self.critic_error[:, -1])),
            "policy_error": float(np.mean(self.policy_error[:, -1])),
            "policy_error_start": float(np.mean(self.policy_error[:, 0])),
            "rate": self.rate(),
            "wall_seconds": self.wall_seconds,
        }

    def table_row(self) -> dict[str, str]:
        s = self.summary()
        return {
            "algorithm": str(s["algorithm"]),
            "n": str(s["iterations"]),
            "seeds": str(s["seeds"]),
            "max J*": f"{s['optimal_cost_max']:.4g}",
            "|V_n - J*|": f"{s['critic_error']:.3g}",
            "|J^pi_n - J*|": f"{s['policy_error']:.3g}",
            "rate": f"n^{s['rate']:.2f}",
        }

    def frame_columns(self, resolution: str = "full") -> dict[str, np.ndarray]:
        """One row per seed x recorded iteration: seed, iteration, critic_error, policy_error."""
        B = np.asarray(self.critic_error).shape[0]
        return {
            **self.long_index(B, self.grid, "iteration"),
            "critic_error": np.asarray(self.critic_error).ravel(),
            "policy_error": np.asarray(self.policy_error).ravel(),
        }

    def plot(self, path=None, *, ax=None, **kwargs):
        """Both exact errors against n (log-log), with bands over seeds."""
        from theorylab.plotting import plot_regret

        n = np.asarray(self.grid)[1:]
        label = str(self.config.get("algorithm", "learner"))
        kwargs.setdefault("title", f"{label} on {self.config.get('problem', '?')}")
        ax = plot_regret({f"{label}: |J^pi_n - J*|": self.policy_error[:, 1:],
                          f"{label}: |V_n - J*|": self.critic_error[:, 1:]}, x=n, ax=ax,
                         xlabel="iteration n", ylabel="sup-norm error", loglog=True,
                         **kwargs)  # fmt: skip
        return self._finish_plot(ax, path)
