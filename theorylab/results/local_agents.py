"""A global agent over many local agents (``kind="local-agents"``; ``tl.run("subsample-q",
"local-agents:n=256", k=[4, 8, 16], seeds=2)``): per seed and number k of sub-sampled agents, the
exact optimality gap of the deployed policy on the n-agent system."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from theorylab.results.base import Result, register_result


@register_result("local-agents")
@dataclass
class LocalAgentsResult(Result):
    """sup_gap ``(B, M)``: ``max_s V*(s) - V^pi(s)`` over the n-agent system's states (the worst
    over which agents are in state 1); mu0_gap ``(B, M)``: the gap at the initial distribution;
    bellman_noise ``(B, M)``: ``||Q_hat - Q*_k||_inf`` on the k-agent system; ks ``(M,)``;
    draws ``(M,)``: generative-model draws of the learner per seed (0: exact operator); n:
    the number of local agents; samples: m (None: exact)."""

    sup_gap: np.ndarray
    mu0_gap: np.ndarray
    bellman_noise: np.ndarray
    ks: np.ndarray
    draws: np.ndarray
    n: int
    samples: int | None
    wall_seconds: float
    config: dict[str, Any] = field(default_factory=dict)

    def arrays(self) -> dict[str, np.ndarray]:
        return {"sup_gap": np.asarray(self.sup_gap), "mu0_gap": np.asarray(self.mu0_gap),
                "bellman_noise": np.asarray(self.bellman_noise), "ks": np.asarray(self.ks),
                "draws": np.asarray(self.draws)}  # fmt: skip

    def metadata(self) -> dict[str, Any]:
        return {"n": int(self.n), "samples": self.samples}

    @classmethod
    def from_stored(cls, meta: dict[str, Any], arrays: dict[str, np.ndarray]):
        return cls(
            sup_gap=arrays["sup_gap"],
            mu0_gap=arrays["mu0_gap"],
            bellman_noise=arrays["bellman_noise"],
            ks=arrays["ks"],
            draws=arrays["draws"],
            n=int(meta["n"]),
            samples=None if meta["samples"] is None else int(meta["samples"]),
            wall_seconds=float(meta["wall_seconds"]),
            config=meta["config"],
        )

    def summary(self, confidence: float = 0.95) -> dict[str, Any]:
        """Per k: the mean over seeds of the sup gap, the gap at mu0 and the Bellman noise."""
        return {
            "algorithm": self.config.get("algorithm"),
            "problem": self.config.get("problem"),
            "n": self.n,
            "samples": self.samples,
            "seeds": int(np.asarray(self.sup_gap).shape[0]),
            "k": [int(k) for k in self.ks],
            "sup_gap": [float(v) for v in np.mean(self.sup_gap, axis=0)],
            "mu0_gap": [float(v) for v in np.mean(self.mu0_gap, axis=0)],
            "bellman_noise": [float(v) for v in np.mean(self.bellman_noise, axis=0)],
            "wall_seconds": self.wall_seconds,
        }

    def table_row(self) -> dict[str, str]:
        s = self.summary()
        return {
            "algorithm": str(s["algorithm"]),
            "n": str(s["n"]),
            "m": "exact" if s["samples"] is None else str(s["samples"]),
            "seeds": str(s["seeds"]),
            "sup gap per k": ", ".join(
                f"k={k}: {g:.3g}" for k, g in zip(s["k"], s["sup_gap"], strict=True)
            ),
        }

    def frame_columns(self, resolution: str = "full") -> dict[str, np.ndarray]:
        """One row per seed x k: seed, k, sup_gap, mu0_gap, bellman_noise."""
        B = np.asarray(self.sup_gap).shape[0]
        return {
            **self.long_index(B, self.ks, "k"),
            "sup_gap": np.asarray(self.sup_gap).ravel(),
            "mu0_gap": np.asarray(self.mu0_gap).ravel(),
            "bellman_noise": np.asarray(self.bellman_noise).ravel(),
        }

    def plot(self, path=None, *, ax=None, **kwargs):
        """The sup gap against k, with bands over seeds."""
        from theorylab.plotting import plot_regret

        label = str(self.config.get("algorithm", "gap"))
        kwargs.setdefault("title", f"{label} on {self.config.get('problem', '?')}")
        ax = plot_regret({label: np.asarray(self.sup_gap)}, x=np.asarray(self.ks), ax=ax,
                         xlabel="sub-sampled agents k", ylabel="max_s V*(s) - V^pi(s)",
                         **kwargs)  # fmt: skip
        return self._finish_plot(ax, path)
