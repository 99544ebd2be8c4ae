"""Preference-based runs: exact regret or sub-optimality AND preference queries, per seed.

``kind="preference"`` (online, a comparison oracle; ``tl.run(..., episodes=K, feedback="btl")``):
``values`` is the per-episode exact regret ``(B, K)`` and ``queries`` the cumulative number of
comparisons asked by the end of each episode ``(B, K)``. ``kind="preference-offline"`` (a
comparison dataset; ``dataset_size=n`` or a list): ``values`` is the exact sub-optimality
``(B, M)`` at each of the M dataset sizes and ``queries`` the comparisons in each dataset.
``kind="preference-game"`` (self-play on a preference game; ``iterations=T``): ``values`` is the
exact duality gap of the algorithm's output iterate ``(B, T + 1)`` at iterations 0..T and
``queries`` the comparisons asked by then.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from theorylab.results.base import Result, register_result

MEASURES = ("regret", "suboptimality", "duality-gap")
_FINAL = {"regret": "final_regret", "suboptimality": "suboptimality", "duality-gap": "duality_gap"}
_STEP = {"regret": "episode", "suboptimality": "n", "duality-gap": "iteration"}


@register_result("preference")
@dataclass
class PreferenceResult(Result):
    """measure: "regret" (online), "suboptimality" (offline) or "duality-gap" (game); values,
    queries: ``(B, T)``; steps: ``(T,)`` episodes 1..K, dataset sizes or iterations 0..T;
    optimal_value: J(pi*), V*_1(mu0) (0 for a game: the gap's optimum);
    extra: named ``(B, T)`` arrays (e.g. P2R's branch counts, the Theorem 3.2 bound)."""

    measure: str
    values: np.ndarray
    queries: np.ndarray
    steps: np.ndarray
    optimal_value: float
    wall_seconds: float
    config: dict[str, Any] = field(default_factory=dict)
    extra: dict[str, np.ndarray] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.measure not in MEASURES:
            raise ValueError(f"measure must be one of {MEASURES}, got {self.measure!r}")
        v, q = np.asarray(self.values), np.asarray(self.queries)
        if v.ndim != 2 or q.shape != v.shape or np.shape(self.steps) != (v.shape[1],):
            raise ValueError(
                f"values and queries must be (B, T) with steps (T,), got {v.shape}, {q.shape}, "
                f"{np.shape(self.steps)}"
            )

    @property
    def n_seeds(self) -> int:
        return int(np.asarray(self.values).shape[0])

    @property
    def curve(self) -> np.ndarray:
        """``(B, T)``: cumulative regret (online), else the measure itself."""
        v = np.asarray(self.values, dtype=float)
        return np.cumsum(v, axis=1) if self.measure == "regret" else v

    @property
    def cumulative_regret(self) -> np.ndarray:
        if self.measure != "regret":
            raise AttributeError("an offline preference result has sub-optimality, not regret")
        return self.curve

    # ---------------------------------------------------------------- the Result protocol
    def arrays(self) -> dict[str, np.ndarray]:
        out = {
            "values": np.asarray(self.values, dtype=float),
            "queries": np.asarray(self.queries, dtype=np.int64),
            "steps": np.asarray(self.steps, dtype=np.int64),
        }
        out.update({f"extra_{k}": np.asarray(v) for k, v in self.extra.items()})
        return out

    def metadata(self) -> dict[str, Any]:
        return {"measure": self.measure, "optimal_value": float(self.optimal_value)}

    @classmethod
    def from_stored(cls, meta: dict[str, Any], arrays: dict[str, np.ndarray]):
        return cls(
            measure=meta["measure"],
            values=arrays["values"],
            queries=arrays["queries"],
            steps=arrays["steps"],
            optimal_value=float(meta["optimal_value"]),
            wall_seconds=float(meta["wall_seconds"]),
            config=meta["config"],
            extra={k[6:]: v for k, v in arrays.items() if k.startswith("extra_")},
        )

    def summary(self, confidence: float = 0.95) -> dict[str, Any]:
        """Final cumulative regret (or sub-optimality at the largest n, or the last duality gap)
        and final queries, each as mean and Student t interval over seeds."""
        from theorylab.stats import final_ci

        name = _FINAL[self.measure]
        v = final_ci(self.curve[:, -1], confidence, support=(0.0, None))  # all three are >= 0
        q = final_ci(np.asarray(self.queries, dtype=float)[:, -1], confidence, support=(0.0, None))
        return {
            "algorithm": self.config.get("algorithm"),
            "problem": self.config.get("mdp"),
            "measure": self.measure,
            "steps": int(np.asarray(self.steps)[-1]),
            "seeds": self.n_seeds,
            "optimal_value": self.optimal_value,
            f"{name}_mean": v.mean,
            f"{name}_ci_low": v.ci_low,
            f"{name}_ci_high": v.ci_high,
            f"{name}_ci_clipped": v.clipped,
            "queries_mean": q.mean,
            "queries_ci_low": q.ci_low,
            "queries_ci_high": q.ci_high,
            "confidence": confidence,
            "wall_seconds": self.wall_seconds,
        }

    def table_row(self) -> dict[str, str]:
        s = self.summary()
        name = _FINAL[self.measure]
        step = {"regret": "K", "suboptimality": "n", "duality-gap": "T"}[self.measure]
        return {
            "algorithm": str(self.config.get("algorithm")),
            "problem": str(self.config.get("mdp")),
            step: str(s["steps"]),
            "seeds": str(self.n_seeds),
            f"{name.replace('_', ' ')} (mean)": f"{s[f'{name}_mean']:.4g}",
            "95% CI": f"[{s[f'{name}_ci_low']:.4g}, {s[f'{name}_ci_high']:.4g}]"
            + (" clipped at 0" if s[f"{name}_ci_clipped"] else ""),
            "queries (mean)": f"{s['queries_mean']:.0f}",
            "queries 95% CI": f"[{s['queries_ci_low']:.0f}, {s['queries_ci_high']:.0f}]",
        }

    def json_summary(self) -> dict[str, Any]:
        return {
            **self.summary(),
            "config": self.config,
            "steps_list": np.asarray(self.steps).tolist(),
            "curve": np.round(self.curve, 10).tolist(),
            "queries": np.asarray(self.queries).tolist(),
        }

    def frame_columns(self, resolution: str = "full") -> dict[str, np.ndarray]:
        """One row per seed x step: seed, episode (or n), the measure, its cumulative curve
        (online) and the queries."""
        B, T = np.asarray(self.values).shape
        step_name = _STEP[self.measure]
        cols = {
            **self.long_index(B, np.asarray(self.steps), step_name),
            self.measure.replace("-", "_"): np.asarray(self.values, dtype=float).ravel(),
            "queries": np.asarray(self.queries).ravel(),
        }
        if self.measure == "regret":
            cols["cumulative_regret"] = self.curve.ravel()
        return cols

    def plot(self, path=None, *, ax=None, **kwargs):
        """The regret / sub-optimality curve with its band and the queries on a right axis
        (:func:`theorylab.plotting.plot_regret_and_queries`)."""
        from theorylab.plotting import plot_regret_and_queries

        label = str(self.config.get("algorithm", self.measure))
        kwargs.setdefault(
            "title", f"{label} on {self.config.get('mdp', '?')} ({self.n_seeds} seeds)"
        )
        if self.measure == "suboptimality":
            kwargs.setdefault("xlabel", "comparisons n")
            kwargs.setdefault("ylabel", "sub-optimality J(pi*) - J(pi_hat)")
        if self.measure == "duality-gap":
            kwargs.setdefault("xlabel", "iteration t")
            kwargs.setdefault("ylabel", "exact duality gap")
        ax = plot_regret_and_queries(
            {label: self.curve},
            {label: np.asarray(self.queries, dtype=float)},
            x=np.asarray(self.steps, dtype=float),
            ax=ax,
            **kwargs,
        )
        return self._finish_plot(ax, path)
