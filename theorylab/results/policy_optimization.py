"""Exact policy-optimisation iterations (``kind="policy-optimization"``;
``tl.run("kl-pg", "tokentree:V=3,L=3", iterations=500)``). Deterministic: every curve is
``(K+1,)`` over the iterates k = 0..K, exact (no sampling, no seeds)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from theorylab.results.base import Result, register_result

_ARRAYS = ("objective", "regularised", "entropy", "target_gap", "policies")
_CURVES = _ARRAYS[:4]
_LABELS = {
    "objective": "objective (E r or J)",
    "regularised": "regularised objective",
    "entropy": "entropy (nats)",
    "target_gap": "KL(pi_k || stated limit)",
}


@register_result("policy-optimization")
@dataclass
class PolicyOptimizationResult(Result):
    """objective, regularised, entropy, target_gap: ``(K+1,)`` exact metrics of the iterates
    (prompts or start states averaged); policies: the iterates ``(K+1, ...)`` (see
    :class:`theorylab.algorithms.policy_optimization.path.PolicyPath`); target_value: the
    regularised objective of the stated limit (NaN where the algorithm states none)."""

    objective: np.ndarray
    regularised: np.ndarray
    entropy: np.ndarray
    target_gap: np.ndarray
    policies: np.ndarray
    target_value: float
    wall_seconds: float
    config: dict[str, Any] = field(default_factory=dict)

    @property
    def iterations(self) -> int:
        return int(self.objective.size - 1)

    def arrays(self) -> dict[str, np.ndarray]:
        return {name: np.asarray(getattr(self, name)) for name in _ARRAYS}

    @classmethod
    def from_stored(cls, meta: dict[str, Any], arrays: dict[str, np.ndarray]):
        return cls(
            **{name: arrays[name] for name in _ARRAYS},
            target_value=float(meta["target_value"]),
            wall_seconds=float(meta["wall_seconds"]),
            config=meta["config"],
        )

    def metadata(self) -> dict[str, Any]:
        return {"target_value": self.target_value}

    def summary(self, confidence: float = 0.95) -> dict[str, Any]:
        """The last iterate's exact metrics."""
        return {
            "algorithm": self.config.get("algorithm"),
            "problem": self.config.get("problem"),
            "iterations": self.iterations,
            "objective": float(self.objective[-1]),
            "regularised": float(self.regularised[-1]),
            "target_value": self.target_value,
            "entropy": float(self.entropy[-1]),
            "target_gap": float(self.target_gap[-1]),
            "wall_seconds": self.wall_seconds,
        }

    def table_row(self) -> dict[str, str]:
        s = self.summary()
        return {
            "algorithm": str(s["algorithm"]),
            "K": str(s["iterations"]),
            "objective": f"{s['objective']:.10g}",
            "regularised": f"{s['regularised']:.10g}",
            "limit's value": f"{s['target_value']:.10g}",
            "entropy": f"{s['entropy']:.6g}",
            "KL to limit": f"{s['target_gap']:.3e}",
        }

    def frame_columns(self) -> dict[str, np.ndarray]:
        """One row per iterate."""
        return {
            "iteration": np.arange(self.objective.size),
            **{name: np.asarray(getattr(self, name)) for name in _CURVES},
        }

    def plot(self, path=None, *, ax=None, metric: str = "target_gap", **kwargs):
        """One exact curve against k: ``metric`` in objective, regularised, entropy,
        target_gap (default; log scale)."""
        from theorylab.plotting import new_axes, plot_policy_path

        if metric not in _CURVES:
            raise ValueError(f"metric must be one of {', '.join(_CURVES)}, got {metric!r}")
        ax = new_axes() if ax is None else ax
        title = kwargs.pop(
            "title", f"{self.config.get('algorithm')} on {self.config.get('problem')}"
        )
        plot_policy_path(
            {_LABELS[metric]: getattr(self, metric)},
            ylabel=_LABELS[metric],
            title=title,
            logy=metric == "target_gap",
            ax=ax,
        )
        return self._finish_plot(ax, path)
