"""Dual-RL solver runs: the f-regularised occupancy problem solved at one or more alphas
(``kind="dual"``; ``tl.run("dual-v", mdp, alpha=0.1, f="kl")`` or ``alpha=[...]``).

The solvers are deterministic, so there is no seed axis: every array is ``(M,)`` over the M
alphas (``V (M, S)``, ``occupancy (M, S, A)``; finite horizon ``V (M, H+1, S)``,
``occupancy (M, H, S, A)``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from theorylab.results.base import Result, register_result

_ARRAYS = ("alphas", "primal", "dual", "gap", "flow_residual", "seconds", "V", "occupancy")


@register_result("dual")
@dataclass
class DualResult(Result):
    """alphas ``(M,)``; primal ``(M,)`` ``E_d[r] - alpha D_f(d || d^O)`` at the returned d;
    dual ``(M,)`` the dual-V objective at the returned V; gap = dual - primal; flow_residual
    ``(M,)`` max-norm; seconds ``(M,)`` solve times; V ``(M, S)``; occupancy ``(M, S, A)``
    (finite horizon ``(M, H+1, S)`` and ``(M, H, S, A)``); lp_value: the unregularised optimum
    ``(1 - gamma) V*(mu0)`` (the alpha -> 0 limit), in the same normalised units as primal and
    dual (finite horizon: ``V*_0(mu0)``); divergence: the f used."""

    alphas: np.ndarray
    primal: np.ndarray
    dual: np.ndarray
    gap: np.ndarray
    flow_residual: np.ndarray
    seconds: np.ndarray
    V: np.ndarray
    occupancy: np.ndarray
    lp_value: float
    divergence: str
    wall_seconds: float
    config: dict[str, Any] = field(default_factory=dict)

    def arrays(self) -> dict[str, np.ndarray]:
        return {name: np.asarray(getattr(self, name)) for name in _ARRAYS}

    def metadata(self) -> dict[str, Any]:
        return {"lp_value": float(self.lp_value), "divergence": self.divergence}

    @classmethod
    def from_stored(cls, meta: dict[str, Any], arrays: dict[str, np.ndarray]):
        return cls(
            **{name: arrays[name] for name in _ARRAYS},
            lp_value=float(meta["lp_value"]),
            divergence=str(meta["divergence"]),
            wall_seconds=float(meta["wall_seconds"]),
            config=meta["config"],
        )

    def summary(self, confidence: float = 0.95) -> dict[str, Any]:
        """The solve at the smallest alpha (the last one of an increasing list is the largest;
        the summary reports the first), with the worst gap and residual over all alphas."""
        return {
            "algorithm": self.config.get("algorithm"),
            "mdp": self.config.get("mdp"),
            "divergence": self.divergence,
            "alpha": float(self.alphas[0]),
            "primal": float(self.primal[0]),
            "dual": float(self.dual[0]),
            "gap": float(self.gap[0]),
            "flow_residual": float(self.flow_residual[0]),
            "lp_value": self.lp_value,
            "max_abs_gap": float(np.max(np.abs(self.gap))),
            "max_flow_residual": float(np.max(self.flow_residual)),
            "wall_seconds": self.wall_seconds,
        }

    def table_row(self) -> dict[str, str]:
        return {
            "algorithm": str(self.config.get("algorithm")),
            "f": self.divergence,
            "alphas": ", ".join(f"{a:g}" for a in self.alphas),
            "primal": ", ".join(f"{v:.10g}" for v in self.primal),
            "dual": ", ".join(f"{v:.10g}" for v in self.dual),
            "max |gap|": f"{np.max(np.abs(self.gap)):.2e}",
            "max flow residual": f"{np.max(self.flow_residual):.2e}",
            ("LP V*_0" if self.config.get("H") else "LP (1-gamma)V*"): f"{self.lp_value:.10g}",
        }

    def frame_columns(self, resolution: str = "full") -> dict[str, np.ndarray]:
        """One row per alpha: alpha, primal, dual, gap, flow_residual, seconds."""
        return {
            name: np.asarray(getattr(self, name))
            for name in ("alphas", "primal", "dual", "gap", "flow_residual", "seconds")
        }

    def plot(self, path=None, *, ax=None, **kwargs):
        """J(alpha) and the LP value against alpha, with the gap J_LP - J(alpha) on log axes."""
        from theorylab.plotting import plot_regularised_values

        kwargs.setdefault(
            "title",
            f"{self.config.get('algorithm', 'dual')} ({self.divergence}) on "
            f"{self.config.get('mdp', '?')}",
        )
        ax = plot_regularised_values(self.alphas, self.primal, self.lp_value, ax=ax, **kwargs)
        return self._finish_plot(ax, path)
