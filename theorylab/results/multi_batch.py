"""Multi-batch policy evaluation (``kind="multi-batch"``; ``tl.run("multi-batch-pe",
"pointer-chase:d=16,H=8", queries=256, batches=[1, 2, 4, 8])``): per seed and number of batches
K, the value estimate from n queries, with the exact value it estimates."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from theorylab.results.base import Result, register_result


@register_result("multi-batch")
@dataclass
class MultiBatchResult(Result):
    """estimates ``(B, M)`` V_hat per seed and K; batches ``(M,)`` the K; queries: n per seed
    (all batches together); true_value: the exact V; ``errors = estimates - true_value``."""

    estimates: np.ndarray
    batches: np.ndarray
    queries: int
    true_value: float
    wall_seconds: float
    config: dict[str, Any] = field(default_factory=dict)

    @property
    def errors(self) -> np.ndarray:
        return np.asarray(self.estimates) - self.true_value

    def mean_abs_error(self) -> np.ndarray:
        """``(M,)`` the mean |V_hat - V| over seeds per K."""
        return np.mean(np.abs(self.errors), axis=0)

    def arrays(self) -> dict[str, np.ndarray]:
        return {"estimates": np.asarray(self.estimates), "batches": np.asarray(self.batches)}

    def metadata(self) -> dict[str, Any]:
        return {"true_value": float(self.true_value), "queries": int(self.queries)}

    @classmethod
    def from_stored(cls, meta: dict[str, Any], arrays: dict[str, np.ndarray]):
        return cls(
            estimates=arrays["estimates"],
            batches=arrays["batches"],
            queries=int(meta["queries"]),
            true_value=float(meta["true_value"]),
            wall_seconds=float(meta["wall_seconds"]),
            config=meta["config"],
        )

    def summary(self, confidence: float = 0.95) -> dict[str, Any]:
        """Per K: the mean |error| over seeds; and the true value."""
        return {
            "algorithm": self.config.get("algorithm"),
            "problem": self.config.get("problem"),
            "queries": self.queries,
            "seeds": int(np.asarray(self.estimates).shape[0]),
            "true_value": self.true_value,
            "batches": [int(k) for k in self.batches],
            "mean_abs_error": [float(e) for e in self.mean_abs_error()],
            "wall_seconds": self.wall_seconds,
        }

    def table_row(self) -> dict[str, str]:
        s = self.summary()
        return {
            "algorithm": str(s["algorithm"]),
            "n": str(s["queries"]),
            "seeds": str(s["seeds"]),
            "V": f"{self.true_value:.6g}",
            "|error| per K": ", ".join(
                f"K={k}: {e:.3g}" for k, e in zip(s["batches"], s["mean_abs_error"], strict=True)
            ),
        }

    def frame_columns(self, resolution: str = "full") -> dict[str, np.ndarray]:
        """One row per seed x K: seed, batches, estimate, error."""
        B = np.asarray(self.estimates).shape[0]
        return {
            **self.long_index(B, self.batches, "batches"),
            "estimate": np.asarray(self.estimates).ravel(),
            "error": self.errors.ravel(),
        }

    def plot(self, path=None, *, ax=None, **kwargs):
        """|V_hat - V| against the number of batches K, with bands over seeds."""
        from theorylab.plotting import plot_regret

        label = str(self.config.get("algorithm", "estimate"))
        kwargs.setdefault("title", f"{label} on {self.config.get('problem', '?')}, n = "
                                   f"{self.queries}")  # fmt: skip
        ax = plot_regret({label: np.abs(self.errors)}, x=np.asarray(self.batches), ax=ax,
                         xlabel="batches K", ylabel="|V_hat - V|", **kwargs)  # fmt: skip
        return self._finish_plot(ax, path)
