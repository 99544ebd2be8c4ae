"""Inverse RL runs (``kind="irl"``; ``tl.run("irl-expert-resets", "combination-lock:H=6,A=2,
code_seed=3", rounds=20, seeds=8)``): per seed and round t, the exact moment gap and value gap
of the mixture of the first t policies against the expert, and the transitions drawn."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from theorylab.results.base import Result, register_result

_ARRAYS = ("moment_gap", "value_gap", "round_value_gap", "inner_samples", "moment_samples")


@register_result("irl")
@dataclass
class IRLResult(Result):
    """moment_gap ``(B, T)``: sup over the moment class of E_expert f - E_mixture f (the L1
    distance of the masked occupancies) of the mixture of pi_1..pi_t; value_gap ``(B, T)``:
    V^E(mu0) - V^{mixture}(mu0) on the true reward; round_value_gap ``(B, T)``: that of pi_t
    alone; inner_samples, moment_samples ``(B, T)``: transitions drawn in round t by the policy
    search and by the moment estimates; expert_value: V^E(mu0)."""

    moment_gap: np.ndarray
    value_gap: np.ndarray
    round_value_gap: np.ndarray
    inner_samples: np.ndarray
    moment_samples: np.ndarray
    expert_value: float
    wall_seconds: float
    config: dict[str, Any] = field(default_factory=dict)

    @property
    def rounds(self) -> int:
        return int(np.asarray(self.moment_gap).shape[1])

    def arrays(self) -> dict[str, np.ndarray]:
        return {name: np.asarray(getattr(self, name)) for name in _ARRAYS}

    def metadata(self) -> dict[str, Any]:
        return {"expert_value": float(self.expert_value)}

    @classmethod
    def from_stored(cls, meta: dict[str, Any], arrays: dict[str, np.ndarray]):
        return cls(
            **{name: arrays[name] for name in _ARRAYS},
            expert_value=float(meta["expert_value"]),
            wall_seconds=float(meta["wall_seconds"]),
            config=meta["config"],
        )

    def summary(self, confidence: float = 0.95) -> dict[str, Any]:
        """The last round's mean gaps over seeds and the mean transitions drawn per seed."""
        return {
            "algorithm": self.config.get("algorithm"),
            "problem": self.config.get("problem"),
            "rounds": self.rounds,
            "seeds": int(np.asarray(self.moment_gap).shape[0]),
            "expert_value": self.expert_value,
            "moment_gap": float(np.mean(np.asarray(self.moment_gap)[:, -1])),
            "value_gap": float(np.mean(np.asarray(self.value_gap)[:, -1])),
            "inner_samples": float(np.mean(np.asarray(self.inner_samples).sum(axis=1))),
            "wall_seconds": self.wall_seconds,
        }

    def table_row(self) -> dict[str, str]:
        s = self.summary()
        return {
            "algorithm": str(s["algorithm"]),
            "T": str(s["rounds"]),
            "seeds": str(s["seeds"]),
            "moment gap": f"{s['moment_gap']:.4g}",
            "value gap": f"{s['value_gap']:.4g}",
            "inner samples": f"{s['inner_samples']:.4g}",
        }

    def frame_columns(self, resolution: str = "full") -> dict[str, np.ndarray]:
        """One row per seed x round."""
        B, T = np.asarray(self.moment_gap).shape
        return {
            **self.long_index(B, np.arange(1, T + 1), "round"),
            **{name: np.asarray(getattr(self, name)).ravel() for name in _ARRAYS},
        }

    def plot(self, path=None, *, ax=None, **kwargs):
        """The mixture's moment gap against the round, with bands over seeds."""
        from theorylab.plotting import plot_regret

        label = str(self.config.get("algorithm", "irl"))
        kwargs.setdefault("title", f"{label} on {self.config.get('problem', '?')}")
        T = self.rounds
        ax = plot_regret({f"{label} moment gap": np.asarray(self.moment_gap)},
                         x=np.arange(1, T + 1), ax=ax, xlabel="round t",
                         ylabel="moment gap of the mixture", **kwargs)  # fmt: skip
        return self._finish_plot(ax, path)
