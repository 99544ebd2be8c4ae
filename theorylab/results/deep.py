"""Deep-twin runs: exact metrics of a tabular twin's policy along training (``kind="deep"``;
``tl.run("grpo-twin", "tokentree:V=4,L=3", steps=1500)``).

Every curve is ``(B, n)``: B seeds by n recorded steps (exact mode is deterministic: B = 1).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from theorylab.results.base import Result, register_result

CURVES = ("tv_predicted", "kl_predicted", "kl_optimum", "expected_reward", "accuracy", "pass_at_k")


@register_result("deep")
@dataclass
class DeepResult(Result):
    """A twin's training curve of exact metrics.

    steps: (n,) recorded steps; tv_predicted, kl_predicted: (B, n) mean over prompts of the TV and
    KL to the twin's predicted fixed point (for cvar-grpo: the mass outside the CVaR-optimal
    responses); kl_optimum: (B, n) KL to pi*_beta; expected_reward, accuracy, pass_at_k: (B, n);
    final_seq_logp: (B, P, Y) the final policies; predicted_seq_logp, optimum_seq_logp: (P, Y).
    """

    steps: np.ndarray
    tv_predicted: np.ndarray
    kl_predicted: np.ndarray
    kl_optimum: np.ndarray
    expected_reward: np.ndarray
    accuracy: np.ndarray
    pass_at_k: np.ndarray
    final_seq_logp: np.ndarray
    predicted_seq_logp: np.ndarray
    optimum_seq_logp: np.ndarray
    wall_seconds: float
    config: dict[str, Any] = field(default_factory=dict)

    @property
    def n_seeds(self) -> int:
        return int(self.tv_predicted.shape[0])

    def arrays(self) -> dict[str, np.ndarray]:
        out = {name: np.asarray(getattr(self, name)) for name in CURVES}
        out["steps"] = np.asarray(self.steps, dtype=np.int64)
        for name in ("final_seq_logp", "predicted_seq_logp", "optimum_seq_logp"):
            out[name] = np.asarray(getattr(self, name))
        return out

    @classmethod
    def from_stored(cls, meta: dict[str, Any], arrays: dict[str, np.ndarray]) -> DeepResult:
        return cls(
            **{name: arrays[name] for name in CURVES},
            steps=arrays["steps"],
            final_seq_logp=arrays["final_seq_logp"],
            predicted_seq_logp=arrays["predicted_seq_logp"],
            optimum_seq_logp=arrays["optimum_seq_logp"],
            wall_seconds=float(meta["wall_seconds"]),
            config=meta["config"],
        )

    def summary(self, confidence: float = 0.95) -> dict[str, Any]:
        """The final exact metrics (mean over seeds)."""
        return {
            "algorithm": self.config.get("algorithm"),
            "task": self.config.get("task"),
            "steps": int(np.asarray(self.steps)[-1]),
            "seeds": self.n_seeds,
            **{name: float(np.mean(np.asarray(getattr(self, name))[:, -1])) for name in CURVES},
            "wall_seconds": self.wall_seconds,
        }

    def table_row(self) -> dict[str, str]:
        s = self.summary()
        return {
            "algorithm": str(s["algorithm"]),
            "task": str(s["task"]),
            "steps": str(s["steps"]),
            "TV to predicted": f"{s['tv_predicted']:.3g}",
            "KL to pi*_beta": f"{s['kl_optimum']:.3g}",
            "reward": f"{s['expected_reward']:.4g}",
            "accuracy": f"{s['accuracy']:.4g}",
            f"pass@{self.config.get('k', 4)}": f"{s['pass_at_k']:.4g}",
        }

    def frame_columns(self, resolution: str = "full") -> dict[str, np.ndarray]:
        """One row per seed x recorded step: seed, step and the six exact metrics."""
        B = self.n_seeds
        return {
            **self.long_index(B, self.steps, "step"),
            **{name: np.asarray(getattr(self, name)).ravel() for name in CURVES},
        }

    def plot(self, path=None, *, ax=None, **kwargs):
        """TV to the predicted fixed point and KL to pi*_beta against the step (log scale)."""
        from theorylab.plotting import plot_twin_curves

        label = str(self.config.get("algorithm", "twin"))
        kwargs.setdefault("title", f"{label} on {self.config.get('task', '?')}")
        ax = plot_twin_curves(
            {label: (self.steps, self.tv_predicted, self.kl_optimum)}, ax=ax, **kwargs
        )
        return self._finish_plot(ax, path)
