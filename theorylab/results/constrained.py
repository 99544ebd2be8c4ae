"""KL-constrained occupancy solves at one or more constraint levels (``kind="constrained"``;
``tl.run("reps", mdp, epsilon=[0.01, 0.1])``). Deterministic: every array is ``(M,)`` over the M
levels (``occupancy (M, S, A)``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from theorylab.results.base import Result, register_result

_ARRAYS = (
    "epsilons",
    "primal",
    "dual",
    "constraint",
    "stationarity",
    "multiplier",
    "seconds",
    "occupancy",
)


@register_result("constrained")
@dataclass
class ConstrainedResult(Result):
    """epsilons ``(M,)``; primal ``(M,)`` the average reward ``sum mu r`` of the returned mu;
    dual ``(M,)`` the dual function at the returned multipliers (NaN where the constraint does not
    bind); constraint ``(M,)`` KL(mu || q); stationarity ``(M,)`` the max-norm residual of the
    stationarity constraint; multiplier ``(M,)`` eta; occupancy ``(M, S, A)`` mu."""

    epsilons: np.ndarray
    primal: np.ndarray
    dual: np.ndarray
    constraint: np.ndarray
    stationarity: np.ndarray
    multiplier: np.ndarray
    seconds: np.ndarray
    occupancy: np.ndarray
    wall_seconds: float
    config: dict[str, Any] = field(default_factory=dict)

    @property
    def gap(self) -> np.ndarray:
        return self.dual - self.primal

    def arrays(self) -> dict[str, np.ndarray]:
        return {name: np.asarray(getattr(self, name)) for name in _ARRAYS}

    @classmethod
    def from_stored(cls, meta: dict[str, Any], arrays: dict[str, np.ndarray]):
        return cls(
            **{name: arrays[name] for name in _ARRAYS},
            wall_seconds=float(meta["wall_seconds"]),
            config=meta["config"],
        )

    def summary(self, confidence: float = 0.95) -> dict[str, Any]:
        """The solve at the smallest epsilon, with the worst certificate numbers over all."""
        return {
            "algorithm": self.config.get("algorithm"),
            "mdp": self.config.get("mdp"),
            "epsilon": float(self.epsilons[0]),
            "primal": float(self.primal[0]),
            "dual": float(self.dual[0]),
            "kl": float(self.constraint[0]),
            "max_abs_gap": float(np.nanmax(np.abs(self.gap), initial=0.0)),
            "max_stationarity": float(np.max(self.stationarity)),
            "wall_seconds": self.wall_seconds,
        }

    def table_row(self) -> dict[str, str]:
        return {
            "algorithm": str(self.config.get("algorithm")),
            "epsilons": ", ".join(f"{e:g}" for e in self.epsilons),
            "primal": ", ".join(f"{v:.10g}" for v in self.primal),
            "KL": ", ".join(f"{v:.6g}" for v in self.constraint),
            "max |gap|": f"{np.nanmax(np.abs(self.gap), initial=0.0):.2e}",
            "max stationarity": f"{np.max(self.stationarity):.2e}",
        }

    def frame_columns(self, resolution: str = "full") -> dict[str, np.ndarray]:
        """One row per epsilon."""
        return {name: np.asarray(getattr(self, name)) for name in _ARRAYS if name != "occupancy"}

    def plot(self, path=None, *, ax=None, **kwargs):
        """The optimum and KL(mu || q) against epsilon."""
        from theorylab.plotting import new_axes, plot_lines

        ax = new_axes() if ax is None else ax
        title = kwargs.pop(
            "title", f"{self.config.get('algorithm', 'constrained')} on {self.config.get('mdp')}"
        )
        plot_lines(
            self.epsilons,
            {"sum mu r": self.primal, "KL(mu || q)": self.constraint},
            xlabel="epsilon",
            ylabel="value",
            title=title,
            logx=True,
            ax=ax,
        )
        return self._finish_plot(ax, path)
