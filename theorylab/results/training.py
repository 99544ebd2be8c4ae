"""Deep training runs: a curve of exact metrics per training step (``theorylab train``).

A transformer trained on a token-tree task is evaluated from its full log-probability table over
the task's responses, so every metric is exact, not sampled (``algorithms/deep/trainer.py``).
Metric arrays are ``(B, E)``: B seeds by E evaluation steps; ``loss`` is ``(B, steps)``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from theorylab.results.base import Result, register_result

#: The exact metrics of every evaluation (mean over prompts).
METRICS = ("accuracy", "expected_reward", "kl_optimum", "kl_ref", "pass_at_k")
LABELS = {
    "accuracy": "exact accuracy P(correct)",
    "expected_reward": "exact expected reward",
    "kl_optimum": "exact KL(pi || pi*_beta)",
    "kl_ref": "exact KL(pi || pi_ref)",
    "pass_at_k": "exact pass@k",
    "loss": "training loss",
}


@register_result("training")
@dataclass
class TrainingResult(Result):
    """Exact metrics along training.

    steps: ``(E,)`` the optimiser steps at which the model was evaluated (0: before training);
    accuracy, expected_reward, kl_optimum, kl_ref, pass_at_k: ``(B, E)`` exact, averaged over the
    prompts; loss: ``(B, steps)`` the loss of every step; optimum_accuracy, optimum_reward:
    ``(B,)`` the accuracy and expected reward of pi*_beta (relative to each seed's reference).
    """

    steps: np.ndarray
    accuracy: np.ndarray
    expected_reward: np.ndarray
    kl_optimum: np.ndarray
    kl_ref: np.ndarray
    pass_at_k: np.ndarray
    loss: np.ndarray
    optimum_accuracy: np.ndarray
    optimum_reward: np.ndarray
    wall_seconds: float
    config: dict[str, Any] = field(default_factory=dict)
    info: dict[str, Any] = field(default_factory=dict)

    @property
    def n_seeds(self) -> int:
        return int(self.accuracy.shape[0])

    def arrays(self) -> dict[str, np.ndarray]:
        names = (*METRICS, "steps", "loss", "optimum_accuracy", "optimum_reward")
        return {name: np.asarray(getattr(self, name)) for name in names}

    def metadata(self) -> dict[str, Any]:
        return {"info": self.info}

    @classmethod
    def from_stored(cls, meta: dict[str, Any], arrays: dict[str, np.ndarray]) -> TrainingResult:
        return cls(
            **arrays,
            wall_seconds=float(meta["wall_seconds"]),
            config=meta["config"],
            info=meta.get("info", {}),
        )

    def summary(self, confidence: float = 0.95) -> dict[str, Any]:
        """Initial and final exact metrics (mean over seeds with a Student t interval for the
        final accuracy and KL), the worst seed's final accuracy and KL reduction."""
        from theorylab.stats import final_ci

        acc = final_ci(self.accuracy[:, -1], confidence, support=(0.0, 1.0))
        kl = final_ci(self.kl_optimum[:, -1], confidence, support=(0.0, None))
        ratio = self.kl_optimum[:, 0] / np.maximum(self.kl_optimum[:, -1], 1e-300)
        return {
            "loss": self.config.get("loss"),
            "model": self.config.get("model"),
            "task": self.config.get("task"),
            "steps": int(self.steps[-1]),
            "seeds": self.n_seeds,
            "accuracy_initial": float(self.accuracy[:, 0].mean()),
            "accuracy_final": acc.mean,
            "accuracy_final_ci_low": acc.ci_low,
            "accuracy_final_ci_high": acc.ci_high,
            "accuracy_final_ci_clipped": acc.clipped,
            "accuracy_final_worst": float(self.accuracy[:, -1].min()),
            "optimum_accuracy": float(self.optimum_accuracy.mean()),
            "kl_optimum_initial": float(self.kl_optimum[:, 0].mean()),
            "kl_optimum_final": kl.mean,
            "kl_reduction_worst": float(ratio.min()),
            "pass_at_k_final": float(self.pass_at_k[:, -1].mean()),
            "confidence": confidence,
            "wall_seconds": self.wall_seconds,
        }

    def table_row(self) -> dict[str, str]:
        s = self.summary()
        return {
            "loss": str(s["loss"]),
            "model": str(s["model"]),
            "steps": str(s["steps"]),
            "seeds": str(s["seeds"]),
            "accuracy (start -> end)": f"{s['accuracy_initial']:.3f} -> {s['accuracy_final']:.3f}",
            "worst seed": f"{s['accuracy_final_worst']:.3f}",
            "pi* accuracy": f"{s['optimum_accuracy']:.3f}",
            "KL(pi||pi*) (start -> end)": f"{s['kl_optimum_initial']:.3g} -> "
            f"{s['kl_optimum_final']:.3g}",
        }

    def frame_columns(self, resolution: str = "full") -> dict[str, np.ndarray]:
        B, E = self.accuracy.shape
        cols = self.long_index(B, self.steps, "step")
        for name in METRICS:
            cols[name] = np.asarray(getattr(self, name)).reshape(-1)
        return cols

    def plot(self, path=None, *, ax=None, metric: str = "accuracy", **kwargs):
        """The mean curve of one exact metric over seeds with its bootstrap band; for accuracy
        and expected reward, pi*_beta's value is drawn dashed."""
        from theorylab.plotting import plot_regret

        if metric not in (*METRICS, "loss"):
            raise ValueError(f"unknown metric {metric!r}; expected one of {METRICS + ('loss',)}")
        arr = np.asarray(getattr(self, metric))
        x = np.arange(1, arr.shape[1] + 1) if metric == "loss" else np.asarray(self.steps)
        label = f"{self.config.get('loss')}, model {self.config.get('model')}"
        bound = None
        if metric in ("accuracy", "expected_reward"):
            opt = self.optimum_accuracy if metric == "accuracy" else self.optimum_reward
            bound = {"pi*_beta (exact)": np.full(x.shape, float(np.mean(opt)))}
        beta = self.config.get("target_beta")
        kwargs.setdefault(
            "title", f"{self.config.get('task', '').split(',reward')[0]}, beta={beta}"
        )
        ax = plot_regret(
            {label: arr},
            bound,
            x=x,
            ax=ax,
            xlabel="training step",
            ylabel=LABELS[metric],
            **kwargs,
        )
        if metric.startswith("kl"):
            ax.set_yscale("log")
        return self._finish_plot(ax, path)
