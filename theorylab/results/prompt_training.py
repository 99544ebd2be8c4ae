"""Prompt-dataset training runs (``theorylab train grpo arithmetic``): sampled, not exact, metrics.

A model trained on a prompt dataset (``algorithms/deep/prompt_trainer.py``) has no finite response
set to enumerate, so its metrics are estimates: ``accuracy (B, E)`` the greedy exact-match
accuracy on the held-out prompts at each evaluation step (0: before training); ``train_reward``,
``loss``, ``lr``, ``grad_norm`` ``(B, steps)`` the mean sampled reward, loss, learning rate and
pre-clipping gradient norm of every optimiser step.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from theorylab.results.base import Result, register_result

PER_STEP = ("train_reward", "loss", "lr", "grad_norm")


@register_result("prompt-training")
@dataclass
class PromptTrainingResult(Result):
    """Held-out accuracy per evaluation and the per-step training curves (module docstring)."""

    steps: np.ndarray
    accuracy: np.ndarray
    train_reward: np.ndarray
    loss: np.ndarray
    lr: np.ndarray
    grad_norm: np.ndarray
    wall_seconds: float
    config: dict[str, Any] = field(default_factory=dict)
    info: dict[str, Any] = field(default_factory=dict)

    def arrays(self) -> dict[str, np.ndarray]:
        return {n: np.asarray(getattr(self, n)) for n in ("steps", "accuracy", *PER_STEP)}

    def metadata(self) -> dict[str, Any]:
        return {"info": self.info}

    @classmethod
    def from_stored(cls, meta: dict[str, Any], arrays: dict[str, np.ndarray]):
        return cls(**arrays, wall_seconds=float(meta["wall_seconds"]), config=meta["config"],
                   info=meta.get("info", {}))  # fmt: skip

    def summary(self, confidence: float = 0.95) -> dict[str, Any]:
        tail = max(1, self.train_reward.shape[1] // 10)
        return {
            "loss": self.config.get("loss"),
            "model": self.config.get("model"),
            "data": self.config.get("data"),
            "steps": int(self.steps[-1]),
            "seeds": int(self.accuracy.shape[0]),
            "heldout_accuracy_initial": float(self.accuracy[:, 0].mean()),
            "heldout_accuracy_final": float(self.accuracy[:, -1].mean()),
            "train_reward_last_10pct": float(self.train_reward[:, -tail:].mean()),
            "wall_seconds": self.wall_seconds,
        }

    def table_row(self) -> dict[str, str]:
        s = self.summary()
        return {
            "loss": str(s["loss"]),
            "model": str(s["model"]),
            "steps": str(s["steps"]),
            "held-out accuracy (start -> end)": f"{s['heldout_accuracy_initial']:.3f} -> "
            f"{s['heldout_accuracy_final']:.3f}",
            "train reward (last 10%)": f"{s['train_reward_last_10pct']:.3f}",
            "wall s": f"{s['wall_seconds']:.1f}",
        }

    def frame_columns(self, resolution: str = "full") -> dict[str, np.ndarray]:
        B = self.accuracy.shape[0]
        n = self.train_reward.shape[1]
        cols = self.long_index(B, np.arange(1, n + 1), "step")
        for name in PER_STEP:
            cols[name] = np.asarray(getattr(self, name)).reshape(-1)
        return cols

    def plot(self, path=None, *, ax=None, metric: str = "accuracy", **kwargs):
        """Held-out accuracy against the step (or a per-step curve: train_reward, loss, lr)."""
        from theorylab.plotting import plot_regret

        if metric not in ("accuracy", *PER_STEP):
            raise ValueError(f"unknown metric {metric!r}; expected accuracy or one of {PER_STEP}")
        arr = np.asarray(getattr(self, metric))
        x = np.asarray(self.steps) if metric == "accuracy" else np.arange(1, arr.shape[1] + 1)
        label = f"{self.config.get('loss')}, model {self.config.get('model')}"
        kwargs.setdefault("title", str(self.config.get("data", "")))
        ax = plot_regret({label: arr}, None, x=x, ax=ax, xlabel="training step",
                         ylabel=metric.replace("_", " "), **kwargs)  # fmt: skip
        return self._finish_plot(ax, path)
