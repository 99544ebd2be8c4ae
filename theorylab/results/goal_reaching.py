"""Goal-reaching quasimetrics (``kind="goal-reaching"``; ``tl.run("qrl", "digraph:S=12")``).

Per seed the learned distance matrix ``distances`` ``(B, S, S)`` (d(s, g) over all ordered pairs)
and the true optimal goal-conditioned cost-to-go ``target`` ``(S, S)`` (shortest paths on a
deterministic model), both capped at ``cap``; the greedy policy of each learned d scored on the
true model (``policy_cost`` ``(B, S, S)``). All exact: the only randomness is which transitions a
seed observed (``transitions=n``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from theorylab.results.base import Result, register_result

_ARRAYS = ("distances", "target", "policy_cost")


def triangle_violation(d: np.ndarray) -> float:
    """``max_{s, w, g} d(s, g) - d(s, w) - d(w, g)`` (<= 0 for a quasimetric) of ``(S, S)`` d."""
    return float(np.max(d[:, None, :] - d[:, :, None] - d[None, :, :]))


@register_result("goal-reaching")
@dataclass
class GoalReachingResult(Result):
    """distances: ``(B, S, S)`` learned d; target: ``(S, S)`` true cost-to-go; policy_cost:
    ``(B, S, S)`` expected cost of the greedy policy of each d on the true model; cap: the cap
    of all three (unreachable goals)."""

    distances: np.ndarray
    target: np.ndarray
    policy_cost: np.ndarray
    cap: float
    wall_seconds: float
    config: dict[str, Any] = field(default_factory=dict)

    def arrays(self) -> dict[str, np.ndarray]:
        return {name: np.asarray(getattr(self, name)) for name in _ARRAYS}

    @classmethod
    def from_stored(cls, meta: dict[str, Any], arrays: dict[str, np.ndarray]):
        return cls(
            **{name: arrays[name] for name in _ARRAYS},
            cap=float(meta["cap"]),
            wall_seconds=float(meta["wall_seconds"]),
            config=meta["config"],
        )

    def metadata(self) -> dict[str, Any]:
        return {"cap": self.cap}

    @property
    def distance_error(self) -> np.ndarray:
        """``(B,)`` max over pairs of |d(s, g) - d*(s, g)|."""
        return np.abs(self.distances - self.target[None]).max(axis=(1, 2))

    @property
    def policy_gap(self) -> np.ndarray:
        """``(B,)`` max over pairs of the greedy policy's cost minus the optimal cost."""
        return (self.policy_cost - self.target[None]).max(axis=(1, 2))

    @property
    def asymmetry(self) -> np.ndarray:
        """``(B,)`` max over pairs of |d(s, g) - d(g, s)|."""
        return np.abs(self.distances - self.distances.transpose(0, 2, 1)).max(axis=(1, 2))

    def summary(self, confidence: float = 0.95) -> dict[str, Any]:
        """Worst seed's errors (exact quantities; no intervals)."""
        return {
            "algorithm": self.config.get("algorithm"),
            "problem": self.config.get("problem"),
            "seeds": int(self.distances.shape[0]),
            "distance_error": float(self.distance_error.max()),
            "triangle_violation": max(triangle_violation(d) for d in self.distances),
            "asymmetry": float(self.asymmetry.max()),
            "true_asymmetry": float(np.abs(self.target - self.target.T).max()),
            "policy_gap": float(self.policy_gap.max()),
            "wall_seconds": self.wall_seconds,
        }

    def table_row(self) -> dict[str, str]:
        s = self.summary()
        return {
            "algorithm": str(s["algorithm"]),
            "max |d - d*|": f"{s['distance_error']:.3e}",
            "triangle violation": f"{s['triangle_violation']:.2e}",
            "asymmetry (true)": f"{s['asymmetry']:.4g} ({s['true_asymmetry']:.4g})",
            "greedy policy gap": f"{s['policy_gap']:.3e}",
        }

    def frame_columns(self, resolution: str = "full") -> dict[str, np.ndarray]:
        """One row per seed x ordered pair (s, g)."""
        B, S, _ = self.distances.shape
        s, g = np.meshgrid(np.arange(S), np.arange(S), indexing="ij")
        seeds = np.asarray(self.seeds if len(self.seeds) == B else range(B), dtype=np.int64)
        return {
            "seed": np.repeat(seeds, S * S),
            "state": np.tile(s.ravel(), B),
            "goal": np.tile(g.ravel(), B),
            "distance": self.distances.reshape(-1),
            "target": np.tile(self.target.ravel(), B),
            "policy_cost": self.policy_cost.reshape(-1),
        }

    def plot(self, path=None, *, ax=None, **kwargs):
        """Learned against true distances, every pair, the first seed."""
        from theorylab.plotting import new_axes, plot_goal_distances

        ax = new_axes() if ax is None else ax
        title = kwargs.pop(
            "title", f"{self.config.get('algorithm')} on {self.config.get('problem')}"
        )
        plot_goal_distances(
            self.target, {str(self.config.get("algorithm")): self.distances[0]}, title=title, ax=ax
        )
        return self._finish_plot(ax, path)
