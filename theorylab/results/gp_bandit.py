"""GP bandits on a finite grid (``kind="gp-bandit"``; ``tl.run("config", "gp-constrained:m=50",
iterations=400, seeds=8)``): per seed and round, the exact regret and constraint violation of the
grid point chosen, and the round at which the learner declared the problem infeasible."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from theorylab.results.base import Result, register_result

_DIAG = "diag_"


@register_result("gp-bandit")
@dataclass
class GPBanditResult(Result):
    """regret, violation: ``(B, T)`` per round (the problem's own scoring: CONFIG's
    ``[f(x_t) - f*]^+`` and ``[g(x_t)]^+``; MBTL's coverage gap of the first t tasks, violation
    0); choices: ``(B, T)`` grid indices (-1: none); declared: ``(B,)`` the round of an
    infeasibility declaration (0: never); optimum: f* or the best coverage (NaN when the problem
    is infeasible); feasible: what enumeration of the grid says."""

    regret: np.ndarray
    violation: np.ndarray
    choices: np.ndarray
    declared: np.ndarray
    optimum: float
    feasible: bool
    wall_seconds: float
    diagnostics: dict[str, np.ndarray] = field(default_factory=dict)
    config: dict[str, Any] = field(default_factory=dict)

    @property
    def T(self) -> int:
        return int(self.regret.shape[1])

    @property
    def rounds(self) -> np.ndarray:
        """``(T,)`` 1..T."""
        return np.arange(1, self.T + 1)

    def cumulative_regret(self) -> np.ndarray:
        """``(B, T)`` sum of the per-round regret up to t."""
        return np.cumsum(self.regret, axis=1)

    def cumulative_violation(self) -> np.ndarray:
        """``(B, T)`` sum of the per-round violation up to t."""
        return np.cumsum(self.violation, axis=1)

    def arrays(self) -> dict[str, np.ndarray]:
        return {
            "regret": np.asarray(self.regret),
            "violation": np.asarray(self.violation),
            "choices": np.asarray(self.choices),
            "declared": np.asarray(self.declared),
            **{_DIAG + k: np.asarray(v) for k, v in self.diagnostics.items()},
        }

    def metadata(self) -> dict[str, Any]:
        return {"optimum": self.optimum, "feasible": self.feasible}

    @classmethod
    def from_stored(cls, meta: dict[str, Any], arrays: dict[str, np.ndarray]):
        return cls(
            regret=arrays["regret"],
            violation=arrays["violation"],
            choices=arrays["choices"],
            declared=arrays["declared"],
            optimum=float(meta["optimum"]),
            feasible=bool(meta["feasible"]),
            wall_seconds=float(meta["wall_seconds"]),
            diagnostics={k[len(_DIAG) :]: v for k, v in arrays.items() if k.startswith(_DIAG)},
            config=meta["config"],
        )

    def summary(self, confidence: float = 0.95) -> dict[str, Any]:
        """Means over seeds at T: cumulative regret and violation, declarations."""
        R, V = self.cumulative_regret()[:, -1], self.cumulative_violation()[:, -1]
        B = R.size
        se = lambda a: float(a.std(ddof=1) / np.sqrt(B)) if B > 1 else float("nan")  # noqa: E731
        return {
            "algorithm": self.config.get("algorithm"),
            "problem": self.config.get("problem"),
            "T": self.T,
            "seeds": B,
            "feasible": self.feasible,
            "optimum": self.optimum,
            "regret": float(R.mean()),
            "regret_se": se(R),
            "violation": float(V.mean()),
            "violation_se": se(V),
            "declared_fraction": float(np.mean(self.declared > 0)),
            "wall_seconds": self.wall_seconds,
        }

    def table_row(self) -> dict[str, str]:
        s = self.summary()
        return {
            "algorithm": str(s["algorithm"]),
            "T": str(s["T"]),
            "B": str(s["seeds"]),
            "regret(T)": f"{s['regret']:.5g} +- {s['regret_se']:.2g}",
            "violation(T)": f"{s['violation']:.5g} +- {s['violation_se']:.2g}",
            "declared": f"{s['declared_fraction']:.2f}",
        }

    def frame_columns(self, resolution: str = "full") -> dict[str, np.ndarray]:
        B = self.regret.shape[0]
        return {
            **self.long_index(B, self.rounds, "round"),
            "regret": self.regret.ravel(),
            "violation": self.violation.ravel(),
            "choice": self.choices.ravel(),
        }

    def plot(self, path=None, *, ax=None, **kwargs):
        """Cumulative regret and (where there is any) cumulative violation against the round,
        with bands over seeds."""
        from theorylab.plotting import plot_regret

        title = kwargs.pop(
            "title", f"{self.config.get('algorithm')} on {self.config.get('problem')}"
        )
        curves = {}
        if self.feasible:
            curves["cumulative regret"] = self.cumulative_regret()
        if np.any(self.violation) or not self.feasible:  # none for an unconstrained problem
            curves["cumulative violation"] = self.cumulative_violation()
        ax = plot_regret(curves, x=self.rounds, xlabel="round t", title=title, ax=ax, **kwargs)
        return self._finish_plot(ax, path)
