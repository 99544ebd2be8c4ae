"""Regret of non-episodic learners (``kind="average-reward"``;
``tl.run("ucrl2", "riverswim:S=6", steps=100_000, seeds=4)``): one trajectory of T steps per seed,
scored exactly on a log-spaced grid of steps against the optimal gain g*."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from theorylab.results.base import Result, register_result

_DIAG = "diag_"


@register_result("average-reward")
@dataclass
class AverageRewardResult(Result):
    """steps: ``(G,)`` step counts t (log-spaced, ending at T); regret: ``(B, G)`` exact
    ``t g* - sum_{u <= t} r(s_u, a_u)`` (mean rewards of the pairs played); gain_star: g*;
    span: sp(h*); diagnostics: the algorithm's per-seed arrays ``(B, K)`` (UCRL2: per epoch)."""

    steps: np.ndarray
    regret: np.ndarray
    gain_star: float
    span: float
    wall_seconds: float
    diagnostics: dict[str, np.ndarray] = field(default_factory=dict)
    config: dict[str, Any] = field(default_factory=dict)

    @property
    def T(self) -> int:
        return int(self.steps[-1])

    def final(self) -> np.ndarray:
        """Regret at T per seed, ``(B,)``."""
        return self.regret[:, -1]

    def arrays(self) -> dict[str, np.ndarray]:
        return {
            "steps": np.asarray(self.steps),
            "regret": np.asarray(self.regret),
            **{_DIAG + k: np.asarray(v) for k, v in self.diagnostics.items()},
        }

    def metadata(self) -> dict[str, Any]:
        return {"gain_star": self.gain_star, "span": self.span}

    @classmethod
    def from_stored(cls, meta: dict[str, Any], arrays: dict[str, np.ndarray]):
        return cls(
            steps=arrays["steps"],
            regret=arrays["regret"],
            gain_star=float(meta["gain_star"]),
            span=float(meta["span"]),
            wall_seconds=float(meta["wall_seconds"]),
            diagnostics={k[len(_DIAG) :]: v for k, v in arrays.items() if k.startswith(_DIAG)},
            config=meta["config"],
        )

    def summary(self, confidence: float = 0.95) -> dict[str, Any]:
        """Mean and standard error of the regret at T over seeds."""
        f = self.final()
        se = float(f.std(ddof=1) / np.sqrt(f.size)) if f.size > 1 else float("nan")
        return {
            "algorithm": self.config.get("algorithm"),
            "problem": self.config.get("problem"),
            "T": self.T,
            "seeds": int(f.size),
            "gain_star": self.gain_star,
            "span": self.span,
            "regret": float(f.mean()),
            "regret_se": se,
            "average_gain": float(self.gain_star - f.mean() / self.T),
            "wall_seconds": self.wall_seconds,
        }

    def table_row(self) -> dict[str, str]:
        s = self.summary()
        return {
            "algorithm": str(s["algorithm"]),
            "T": str(s["T"]),
            "B": str(s["seeds"]),
            "g*": f"{s['gain_star']:.6g}",
            "sp(h*)": f"{s['span']:.4g}",
            "regret(T)": f"{s['regret']:.5g} +- {s['regret_se']:.2g}",
            "gain played": f"{s['average_gain']:.6g}",
        }

    def frame_columns(self, resolution: str = "full") -> dict[str, np.ndarray]:
        """One row per seed x recorded step (the grid is already log-spaced)."""
        B = self.regret.shape[0]
        return {**self.long_index(B, self.steps, "step"), "regret": self.regret.ravel()}

    def plot(self, path=None, *, ax=None, **kwargs):
        """Mean regret against the step t with a bootstrap band over seeds."""
        from theorylab.plotting import plot_regret

        title = kwargs.pop(
            "title", f"{self.config.get('algorithm')} on {self.config.get('problem')}"
        )
        ax = plot_regret(
            {str(self.config.get("algorithm")): self.regret},
            x=self.steps,
            xlabel="step t",
            title=title,
            ax=ax,
            **kwargs,
        )
        return self._finish_plot(ax, path)


def samples_to_eps(gaps: np.ndarray, samples: np.ndarray, eps: float, level: float) -> float:
    """The least n of the ladder ``samples (N,)`` from which (at it and every larger n) at least
    ``level`` of the rows of ``gaps (B, N)`` are <= eps; inf when there is none."""
    ok = (np.asarray(gaps) <= eps).mean(axis=0) >= level  # (N,)
    tail = np.flip(np.logical_and.accumulate(np.flip(ok)))
    return float(np.asarray(samples)[np.argmax(tail)]) if tail.any() else float("inf")


@register_result("average-reward-generative")
@dataclass
class GenerativeGainResult(Result):
    """samples: ``(N,)`` draws per pair; gain_gap: ``(B, N)`` exact ``g* - g(pi_hat)`` of the
    policy returned at each n; gain_estimate: ``(B, N)`` the estimator's own gain estimate (NaN
    where it gives none); gain_star: g*."""

    samples: np.ndarray
    gain_gap: np.ndarray
    gain_estimate: np.ndarray
    gain_star: float
    wall_seconds: float
    config: dict[str, Any] = field(default_factory=dict)

    def arrays(self) -> dict[str, np.ndarray]:
        return {
            "samples": np.asarray(self.samples),
            "gain_gap": np.asarray(self.gain_gap),
            "gain_estimate": np.asarray(self.gain_estimate),
        }

    def metadata(self) -> dict[str, Any]:
        return {"gain_star": self.gain_star}

    @classmethod
    def from_stored(cls, meta: dict[str, Any], arrays: dict[str, np.ndarray]):
        return cls(
            samples=arrays["samples"],
            gain_gap=arrays["gain_gap"],
            gain_estimate=arrays["gain_estimate"],
            gain_star=float(meta["gain_star"]),
            wall_seconds=float(meta["wall_seconds"]),
            config=meta["config"],
        )

    def samples_to(self, eps: float, level: float = 0.9) -> float:
        """:func:`samples_to_eps` of this run's gain gaps."""
        return samples_to_eps(self.gain_gap, self.samples, eps, level)

    def summary(self, confidence: float = 0.95) -> dict[str, Any]:
        """At the largest n: mean gain gap and the fraction of seeds with an optimal policy."""
        last = self.gain_gap[:, -1]
        return {
            "algorithm": self.config.get("algorithm"),
            "problem": self.config.get("problem"),
            "samples": int(self.samples[-1]),
            "seeds": int(last.size),
            "gain_star": self.gain_star,
            "gain_gap": float(last.mean()),
            "optimal_fraction": float(np.mean(last <= 1e-12)),
            "wall_seconds": self.wall_seconds,
        }

    def frame_columns(self, resolution: str = "full") -> dict[str, np.ndarray]:
        B = self.gain_gap.shape[0]
        return {
            **self.long_index(B, self.samples, "samples"),
            "gain_gap": self.gain_gap.ravel(),
            "gain_estimate": self.gain_estimate.ravel(),
        }

    def plot(self, path=None, *, ax=None, **kwargs):
        """Mean gain gap against n (log-log) with a bootstrap band over seeds."""
        from theorylab.plotting import plot_regret

        title = kwargs.pop(
            "title", f"{self.config.get('algorithm')} on {self.config.get('problem')}"
        )
        ax = plot_regret(
            {str(self.config.get("algorithm")): self.gain_gap},
            x=self.samples,
            xlabel="draws per pair n",
            ylabel="gain gap g* - g(pi_hat)",
            title=title,
            ax=ax,
            **kwargs,
        )
        return self._finish_plot(ax, path)
