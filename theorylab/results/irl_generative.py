"""Inverse RL with a generative model (``kind="irl-generative"``; ``tl.run("us-irl",
"irl-trap:S=4,A=3,H=5", samples=[64, 256, 1024])``): per seed and n, the exact distance of the
true reward to the estimated feasible set, a lower bound on the Hausdorff distance between the
true and the estimated sets, and the learner's confidence radius."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from theorylab.results.base import Result, register_result


@register_result("irl-generative")
@dataclass
class FeasibleSetResult(Result):
    """distance ``(B, M)`` d(r*, R_{p_hat}) per seed and n; hausdorff_lower ``(B, M)`` a lower
    bound on the Hausdorff distance; radius ``(M,)`` the learner's eps(n, delta); samples
    ``(M,)`` n per triple; triples: H S A (total draws = triples * n)."""

    distance: np.ndarray
    hausdorff_lower: np.ndarray
    radius: np.ndarray
    samples: np.ndarray
    triples: int
    wall_seconds: float
    config: dict[str, Any] = field(default_factory=dict)

    def coverage(self) -> np.ndarray:
        """``(M,)`` the fraction of seeds whose true reward lies within the radius of the
        estimated set."""
        return np.mean(np.asarray(self.distance) <= np.asarray(self.radius)[None, :], axis=0)

    def arrays(self) -> dict[str, np.ndarray]:
        return {
            "distance": np.asarray(self.distance),
            "hausdorff_lower": np.asarray(self.hausdorff_lower),
            "radius": np.asarray(self.radius),
            "samples": np.asarray(self.samples),
        }

    def metadata(self) -> dict[str, Any]:
        return {"triples": int(self.triples)}

    @classmethod
    def from_stored(cls, meta: dict[str, Any], arrays: dict[str, np.ndarray]):
        return cls(
            distance=arrays["distance"],
            hausdorff_lower=arrays["hausdorff_lower"],
            radius=arrays["radius"],
            samples=arrays["samples"],
            triples=int(meta["triples"]),
            wall_seconds=float(meta["wall_seconds"]),
            config=meta["config"],
        )

    def summary(self, confidence: float = 0.95) -> dict[str, Any]:
        """Per n: mean distance, mean Hausdorff lower bound, radius and coverage over seeds."""
        return {
            "algorithm": self.config.get("algorithm"),
            "problem": self.config.get("problem"),
            "seeds": int(np.asarray(self.distance).shape[0]),
            "samples": [int(n) for n in self.samples],
            "total_samples": [int(n) * self.triples for n in self.samples],
            "mean_distance": [float(d) for d in np.mean(self.distance, axis=0)],
            "mean_hausdorff_lower": [float(d) for d in np.mean(self.hausdorff_lower, axis=0)],
            "radius": [float(r) for r in self.radius],
            "coverage": [float(c) for c in self.coverage()],
            "wall_seconds": self.wall_seconds,
        }

    def table_row(self) -> dict[str, str]:
        s = self.summary()
        return {
            "algorithm": str(s["algorithm"]),
            "seeds": str(s["seeds"]),
            "d(r*, R_hat) per n": ", ".join(
                f"n={n}: {d:.3g}" for n, d in zip(s["samples"], s["mean_distance"], strict=True)
            ),
            "coverage": ", ".join(f"{c:.2f}" for c in s["coverage"]),
        }

    def frame_columns(self, resolution: str = "full") -> dict[str, np.ndarray]:
        """One row per seed x n: seed, samples, distance, hausdorff_lower, radius."""
        B = np.asarray(self.distance).shape[0]
        return {
            **self.long_index(B, self.samples, "samples"),
            "distance": np.asarray(self.distance).ravel(),
            "hausdorff_lower": np.asarray(self.hausdorff_lower).ravel(),
            "radius": np.broadcast_to(self.radius, np.shape(self.distance)).ravel(),
        }

    def plot(self, path=None, *, ax=None, **kwargs):
        """d(r*, R_hat) and the Hausdorff lower bound against n (log-log), with the radius."""
        from theorylab.plotting import plot_regret

        label = str(self.config.get("algorithm", "estimate"))
        kwargs.setdefault("title", f"{label} on {self.config.get('problem', '?')}")
        kwargs.setdefault("references", {"radius eps(n, delta)": np.asarray(self.radius)})
        ax = plot_regret(
            {"d(r*, R_hat)": np.asarray(self.distance),
             "Hausdorff (lower bound)": np.asarray(self.hausdorff_lower)},
            x=np.asarray(self.samples), ax=ax, xlabel="draws per (h, s, a)",
            ylabel="L-inf distance", loglog=True, **kwargs,
        )  # fmt: skip
        return self._finish_plot(ax, path)
