"""Off-policy evaluation runs (``kind="ope"``): an estimate of V^pi(mu0) per seed and dataset
size, with the exact value it estimates (``tl.run("dualdice", mdp, dataset_size=[...])``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from theorylab.results.base import Result, register_result

_ARRAYS = ("estimates", "dataset_sizes", "seconds")


@register_result("ope")
@dataclass
class OPEResult(Result):
    """estimates ``(B, M)`` ``V_hat(mu0)`` per seed and dataset size; dataset_sizes ``(M,)``;
    true_value: the exact ``V^pi(mu0)``; seconds ``(M,)`` the estimator's time per N (all seeds);
    ``errors = estimates - true_value`` ``(B, M)``."""

    estimates: np.ndarray
    dataset_sizes: np.ndarray
    true_value: float
    seconds: np.ndarray
    wall_seconds: float
    config: dict[str, Any] = field(default_factory=dict)

    @property
    def errors(self) -> np.ndarray:
        return np.asarray(self.estimates) - self.true_value

    def rmse(self) -> np.ndarray:
        """``(M,)`` root mean squared error over seeds."""
        return np.sqrt(np.mean(self.errors**2, axis=0))

    def arrays(self) -> dict[str, np.ndarray]:
        return {name: np.asarray(getattr(self, name)) for name in _ARRAYS}

    def metadata(self) -> dict[str, Any]:
        return {"true_value": float(self.true_value)}

    @classmethod
    def from_stored(cls, meta: dict[str, Any], arrays: dict[str, np.ndarray]):
        return cls(
            **{name: arrays[name] for name in _ARRAYS},
            true_value=float(meta["true_value"]),
            wall_seconds=float(meta["wall_seconds"]),
            config=meta["config"],
        )

    def summary(self, confidence: float = 0.95) -> dict[str, Any]:
        """At the largest N: the mean estimate, the RMSE and the true value."""
        return {
            "algorithm": self.config.get("algorithm"),
            "mdp": self.config.get("mdp"),
            "target": self.config.get("target"),
            "dataset_size": int(np.asarray(self.dataset_sizes)[-1]),
            "seeds": int(np.asarray(self.estimates).shape[0]),
            "true_value": self.true_value,
            "estimate_mean": float(np.mean(np.asarray(self.estimates)[:, -1])),
            "rmse": float(self.rmse()[-1]),
            "wall_seconds": self.wall_seconds,
        }

    def table_row(self) -> dict[str, str]:
        s = self.summary()
        return {
            "algorithm": str(s["algorithm"]),
            "mdp": str(s["mdp"]),
            "target": str(s["target"]),
            "N": str(s["dataset_size"]),
            "seeds": str(s["seeds"]),
            "V^pi(mu0)": f"{self.true_value:.6g}",
            "estimate (mean)": f"{s['estimate_mean']:.6g}",
            "RMSE": f"{s['rmse']:.3g}",
        }

    def frame_columns(self, resolution: str = "full") -> dict[str, np.ndarray]:
        """One row per seed x dataset size: seed, dataset_size, estimate, error."""
        B = np.asarray(self.estimates).shape[0]
        return {
            **self.long_index(B, self.dataset_sizes, "dataset_size"),
            "estimate": np.asarray(self.estimates).ravel(),
            "error": self.errors.ravel(),
        }

    def plot(self, path=None, *, ax=None, **kwargs):
        """|error| against N on log-log axes with the N^(-1/2) reference (needs two or more N)."""
        from theorylab.plotting import plot_loglog
        from theorylab.stats import loglog_slope

        N = np.asarray(self.dataset_sizes, dtype=float)
        if N.size < 2:
            raise ValueError(
                f"an OPE plot needs two or more dataset sizes, this run has N = {N.tolist()} "
                "(run with dataset_size=[...])"
            )
        label = str(self.config.get("algorithm", "estimate"))
        kwargs.setdefault("title", f"{label} on {self.config.get('mdp', '?')}")
        err = np.maximum(np.abs(self.errors), 1e-300)  # (B, M)
        ax = plot_loglog(
            N,
            {label: err},
            {label: loglog_slope(N, err, fit_range=(0.0, 1.0))},
            bound_exponent=-0.5,
            x_name="N",
            ax=ax,
            xlabel="dataset size N",
            ylabel="|V_hat - V^pi(mu0)|",
            **kwargs,
        )
        return self._finish_plot(ax, path)
