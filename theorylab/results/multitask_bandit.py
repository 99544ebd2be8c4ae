"""Multi-task linear bandits (``kind="multitask-bandit"``; ``tl.run("douexpdes",
"multitask-linear:d=16,k=2,M=32", rounds=10**7)``): per seed and task the recommended arm against
the brute-force best arm and the pulls spent, or the exact per-task pseudo-regret per round; the
representation a learner ends on."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from theorylab.results.base import Result, register_result
from theorylab.stats import final_ci


@register_result("multitask-bandit")
@dataclass
class MultitaskBanditResult(Result):
    """recommended, samples ``(B, M)``; stopped ``(B, M)`` (by the learner's own rule); regret
    ``(B, T)`` cumulative pseudo-regret averaged over tasks (T = 0 for identification); selected
    ``(B,)`` the representation index (-1: none); best ``(M,)`` the brute-force best arms;
    true_representation: the class index of the true one (-1: no class); diagnostics: the
    learner's per-seed arrays."""

    recommended: np.ndarray
    samples: np.ndarray
    stopped: np.ndarray
    regret: np.ndarray
    selected: np.ndarray
    best: np.ndarray
    true_representation: int
    wall_seconds: float
    diagnostics: dict[str, np.ndarray] = field(default_factory=dict)
    config: dict[str, Any] = field(default_factory=dict)

    def correct(self) -> np.ndarray:
        """``(B,)`` whether every task's recommendation is its best arm."""
        return np.all(np.asarray(self.recommended) == np.asarray(self.best)[None, :], axis=1)

    def per_task_samples(self) -> np.ndarray:
        """``(B,)`` pulls per task (the mean over tasks)."""
        return np.asarray(self.samples).mean(axis=1)

    def per_task_regret(self) -> np.ndarray:
        """``(B,)`` the final cumulative pseudo-regret per task (0 for identification)."""
        R = np.asarray(self.regret)
        return R[:, -1] if R.shape[1] else np.zeros(R.shape[0])

    def arrays(self) -> dict[str, np.ndarray]:
        out = {key: np.asarray(getattr(self, key)) for key in
               ("recommended", "samples", "stopped", "regret", "selected", "best")}  # fmt: skip
        out.update({f"diag_{key}": np.asarray(v) for key, v in self.diagnostics.items()})
        return out

    def metadata(self) -> dict[str, Any]:
        return {"true_representation": int(self.true_representation)}

    @classmethod
    def from_stored(cls, meta: dict[str, Any], arrays: dict[str, np.ndarray]):
        return cls(
            **{key: arrays[key] for key in
               ("recommended", "samples", "stopped", "regret", "selected", "best")},
            true_representation=int(meta["true_representation"]),
            wall_seconds=float(meta["wall_seconds"]),
            diagnostics={key[5:]: v for key, v in arrays.items() if key.startswith("diag_")},
            config=meta["config"],
        )  # fmt: skip

    def summary(self, confidence: float = 0.95) -> dict[str, Any]:
        """Fraction of seeds with every task identified, pulls per task, final per-task regret
        (means with intervals over seeds), how often the true representation was selected."""
        sel = np.asarray(self.selected)
        return {
            "algorithm": self.config.get("algorithm"),
            "problem": self.config.get("problem"),
            "seeds": int(np.asarray(self.samples).shape[0]),
            "correct": float(np.mean(self.correct())),
            "stopped": float(np.mean(np.asarray(self.stopped))),
            "samples_per_task": final_ci(self.per_task_samples(), confidence, (0.0, None)),
            "regret_per_task": final_ci(self.per_task_regret(), confidence, (0.0, None)),
            "true_representation_selected": (float(np.mean(sel == self.true_representation))
                                             if self.true_representation >= 0 else None),
            "wall_seconds": self.wall_seconds,
        }  # fmt: skip

    def table_row(self) -> dict[str, str]:
        s = self.summary()
        row = {"algorithm": str(s["algorithm"]), "seeds": str(s["seeds"]),
               "all tasks correct": f"{s['correct']:.3f}"}  # fmt: skip
        if np.asarray(self.regret).shape[1]:
            row["regret per task"] = f"{s['regret_per_task'].mean:.4g}"
        else:
            row["pulls per task"] = f"{s['samples_per_task'].mean:.4g}"
        if s["true_representation_selected"] is not None:
            row["true phi selected"] = f"{s['true_representation_selected']:.3f}"
        return row

    def frame_columns(self, resolution: str = "full") -> dict[str, np.ndarray]:
        """One row per seed x task: seed, task, recommended, best, samples, stopped."""
        B, M = np.asarray(self.samples).shape
        return {
            **self.long_index(B, np.arange(M), "task"),
            "recommended": np.asarray(self.recommended).ravel(),
            "best": np.tile(np.asarray(self.best), B),
            "samples": np.asarray(self.samples).ravel(),
            "stopped": np.asarray(self.stopped).ravel(),
        }

    def plot(self, path=None, *, ax=None, **kwargs):
        """Per-task pseudo-regret against rounds (regret learners), else pulls per task against
        the task index, with bands over seeds."""
        from theorylab.plotting import plot_regret

        label = str(self.config.get("algorithm", "learner"))
        kwargs.setdefault("title", f"{label} on {self.config.get('problem', '?')}")
        R = np.asarray(self.regret)
        if R.shape[1]:
            ax = plot_regret({label: R}, ax=ax, xlabel="round", ylabel="regret per task",
                             **kwargs)  # fmt: skip
        else:
            S = np.asarray(self.samples, dtype=float)
            ax = plot_regret({label: S}, x=np.arange(S.shape[1]), ax=ax, xlabel="task",
                             ylabel="pulls", **kwargs)  # fmt: skip
        return self._finish_plot(ax, path)
