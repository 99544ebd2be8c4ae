"""Constrained occupancy problems (``kind="constrained"``), one row per level or per iterate.

Two shapes of run share this result, told apart by ``config["axis"]``:

* ``"epsilon"`` -- a KL-constrained solve at each constraint level (``tl.run("reps", mdp,
  epsilon=[0.01, 0.1])``): ``levels`` are the epsilons, ``constraint`` is KL(mu || q).
* ``"iteration"`` -- a primal-dual run on a cost-constrained MDP (``tl.run("reload", mdp,
  iterations=2000)``): ``levels`` are the iterations t = 1..T, each row the iterate d_t;
  ``constraint`` is the largest cost excess ``max_i V_ci(d_t) - b_i`` (<= 0: feasible),
  ``optimum`` the CMDP LP's value V* the iterate is measured against, and ``average_*`` the same
  numbers of the running average of d_1..d_t.

Deterministic: every array is ``(M,)`` over the M rows (``occupancy (M, S, A)``); NaN marks a
number a row's kind does not have (the dual of a primal-dual iterate, the LP optimum of a REPS
solve whose own dual certifies it).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from theorylab.results.base import Result, register_result

_ARRAYS = (
    "levels",
    "primal",
    "dual",
    "constraint",
    "stationarity",
    "multiplier",
    "optimum",
    "average_primal",
    "average_constraint",
    "seconds",
    "occupancy",
)


@register_result("constrained")
@dataclass
class ConstrainedResult(Result):
    """levels ``(M,)`` epsilons or iterations (``config["axis"]``); primal ``(M,)`` the objective
    of the returned occupancy (REPS: the average reward ``sum mu r``; a CMDP: ``V_r(mu0)``);
    dual ``(M,)`` the dual function at the returned multipliers (NaN where the constraint does
    not bind, or for a primal-dual iterate); constraint ``(M,)`` KL(mu || q), or the largest cost
    excess ``max_i V_ci - b_i``; stationarity ``(M,)`` the max-norm residual of the flow or
    stationarity constraint; multiplier ``(M,)`` eta, or lambda_t; optimum ``(M,)`` the exact
    optimum measured against (NaN for a KL solve); average_primal, average_constraint ``(M,)``
    those of the running average iterate (NaN for a KL solve); seconds ``(M,)``; occupancy
    ``(M, S, A)``."""

    levels: np.ndarray
    primal: np.ndarray
    dual: np.ndarray
    constraint: np.ndarray
    stationarity: np.ndarray
    multiplier: np.ndarray
    optimum: np.ndarray
    average_primal: np.ndarray
    average_constraint: np.ndarray
    seconds: np.ndarray
    occupancy: np.ndarray
    wall_seconds: float
    config: dict[str, Any] = field(default_factory=dict)

    @property
    def axis(self) -> str:
        """``"epsilon"`` (one KL-constrained solve per level) or ``"iteration"``."""
        return str(self.config.get("axis", "epsilon"))

    @property
    def epsilons(self) -> np.ndarray:
        """The KL levels of an ``"epsilon"`` run."""
        if self.axis != "epsilon":
            raise AttributeError(f"a run over {self.axis}s has no epsilons; use levels")
        return self.levels

    @property
    def gap(self) -> np.ndarray:
        """dual - primal (NaN where there is no dual)."""
        return self.dual - self.primal

    @property
    def reward_gap(self) -> np.ndarray:
        """``|primal - optimum|`` per row (a primal-dual run: the last iterate's value error)."""
        return np.abs(self.primal - self.optimum)

    @property
    def violation(self) -> np.ndarray:
        """``max(constraint, 0)`` of a cost-constrained run: the last iterate's excess cost."""
        return np.maximum(self.constraint, 0.0)

    def last_iterate_error(self) -> np.ndarray:
        """``max(|V_r(d_t) - V*|, max_i (V_ci(d_t) - b_i)^+)`` per iterate ``(M,)``."""
        return np.maximum(self.reward_gap, self.violation)

    def average_iterate_error(self) -> np.ndarray:
        """The same for the running average of the iterates ``(M,)``."""
        return np.maximum(
            np.abs(self.average_primal - self.optimum), np.maximum(self.average_constraint, 0.0)
        )

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
        """KL solves: the solve at the smallest epsilon, with the worst certificate numbers over
        all. Primal-dual runs: the last iterate and the largest error over the last 10%."""
        head = {"algorithm": self.config.get("algorithm"), "mdp": self.config.get("mdp")}
        if self.axis == "iteration":
            tail = max(1, len(self.levels) // 10)
            return {
                **head,
                "iterations": int(self.levels[-1]),
                "optimum": float(self.optimum[-1]),
                "primal": float(self.primal[-1]),
                "excess_cost": float(self.constraint[-1]),
                "multiplier": float(self.multiplier[-1]),
                "tail_last_iterate_error": float(self.last_iterate_error()[-tail:].max()),
                "tail_average_iterate_error": float(self.average_iterate_error()[-tail:].max()),
                "max_stationarity": float(np.max(self.stationarity)),
                "wall_seconds": self.wall_seconds,
            }
        return {
            **head,
            "epsilon": float(self.levels[0]),
            "primal": float(self.primal[0]),
            "dual": float(self.dual[0]),
            "kl": float(self.constraint[0]),
            "max_abs_gap": float(np.nanmax(np.abs(self.gap), initial=0.0)),
            "max_stationarity": float(np.max(self.stationarity)),
            "wall_seconds": self.wall_seconds,
        }

    def table_row(self) -> dict[str, str]:
        if self.axis == "iteration":
            s = self.summary()
            return {
                "algorithm": str(s["algorithm"]),
                "iterations": str(s["iterations"]),
                "V*": f"{s['optimum']:.10g}",
                "last iterate": f"{s['primal']:.10g}",
                "tail error (last, average)": f"{s['tail_last_iterate_error']:.2e}, "
                f"{s['tail_average_iterate_error']:.2e}",
                "max stationarity": f"{s['max_stationarity']:.2e}",
            }
        return {
            "algorithm": str(self.config.get("algorithm")),
            "epsilons": ", ".join(f"{e:g}" for e in self.levels),
            "primal": ", ".join(f"{v:.10g}" for v in self.primal),
            "KL": ", ".join(f"{v:.6g}" for v in self.constraint),
            "max |gap|": f"{np.nanmax(np.abs(self.gap), initial=0.0):.2e}",
            "max stationarity": f"{np.max(self.stationarity):.2e}",
        }

    def frame_columns(self, resolution: str = "full") -> dict[str, np.ndarray]:
        """One row per epsilon or per iterate."""
        return {name: np.asarray(getattr(self, name)) for name in _ARRAYS if name != "occupancy"}

    def plot(self, path=None, *, ax=None, **kwargs):
        """KL solves: the optimum and KL(mu || q) against epsilon. Primal-dual runs: the last
        and the average iterate's error against t (log-log)."""
        from theorylab.plotting import new_axes, plot_lines

        ax = new_axes() if ax is None else ax
        title = kwargs.pop(
            "title", f"{self.config.get('algorithm', 'constrained')} on {self.config.get('mdp')}"
        )
        if self.axis == "iteration":
            floor = 1e-16  # exact zeros cannot be drawn on a log axis
            plot_lines(
                self.levels,
                {
                    "last iterate": np.maximum(self.last_iterate_error(), floor),
                    "average iterate": np.maximum(self.average_iterate_error(), floor),
                },
                xlabel="iteration t",
                ylabel="max(|V_r - V*|, cost excess)",
                title=title,
                logx=True,
                logy=True,
                ax=ax,
            )
            return self._finish_plot(ax, path)
        plot_lines(
            self.levels,
            {"sum mu r": self.primal, "KL(mu || q)": self.constraint},
            xlabel="epsilon",
            ylabel="value",
            title=title,
            logx=True,
            ax=ax,
        )
        return self._finish_plot(ax, path)
