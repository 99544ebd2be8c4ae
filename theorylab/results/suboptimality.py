"""Offline runs: exact sub-optimality against the dataset size N (``kind="offline"``;
``tl.run(..., dataset_size=N)`` or ``dataset_size=[N1, N2, ...]`` for nested datasets).

Every array is ``(B, M)``: B seeds by M dataset sizes (M = 1 for a single N).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from theorylab.results.base import Result, register_result

_ARRAYS = ("suboptimality", "policy_value", "value_estimate", "pessimism_holds")


@register_result("suboptimality")
@dataclass
class SuboptimalityResult(Result):
    """Everything one offline run produced.

    suboptimality: ``(B, M)`` exact ``V*(mu0) - V^{pi_hat}(mu0)``; policy_value: ``(B, M)``
    ``V^{pi_hat}(mu0)``; value_estimate: ``(B, M)`` the algorithm's own ``V_hat(mu0)`` (NaN if it
    has none); pessimism_holds: ``(B, M)`` bool, ``V_hat <= V^{pi_hat}`` up to round-off;
    dataset_sizes: ``(M,)`` N; optimal_value: V*(mu0); coverage: the exact concentrability of the
    data distribution (``C_star``, ``C_star_clipped``) and the behaviour mixture; pevi_coverage:
    ``(B, M)`` PEVI's coverage term (finite horizon) or None.
    """

    suboptimality: np.ndarray
    policy_value: np.ndarray
    value_estimate: np.ndarray
    pessimism_holds: np.ndarray
    dataset_sizes: np.ndarray
    optimal_value: float
    wall_seconds: float
    config: dict[str, Any] = field(default_factory=dict)
    coverage: dict[str, Any] = field(default_factory=dict)
    pevi_coverage: np.ndarray | None = None
    pessimistic: bool = False
    info: dict[str, Any] = field(default_factory=dict)

    @property
    def n_seeds(self) -> int:
        return int(self.suboptimality.shape[0])

    # ---------------------------------------------------------------- the Result protocol
    def arrays(self) -> dict[str, np.ndarray]:
        out = {name: np.asarray(getattr(self, name)) for name in _ARRAYS}
        out["dataset_sizes"] = np.asarray(self.dataset_sizes, dtype=np.int64)
        if self.pevi_coverage is not None:
            out["pevi_coverage"] = np.asarray(self.pevi_coverage)
        return out

    def metadata(self) -> dict[str, Any]:
        return {
            "optimal_value": float(self.optimal_value),
            "coverage": self.coverage,
            "pessimistic": bool(self.pessimistic),
            "info": self.info,
        }

    @classmethod
    def from_stored(cls, meta: dict[str, Any], arrays: dict[str, np.ndarray]):
        return cls(
            **{name: arrays[name] for name in _ARRAYS},
            dataset_sizes=arrays["dataset_sizes"],
            optimal_value=float(meta["optimal_value"]),
            wall_seconds=float(meta["wall_seconds"]),
            config=meta["config"],
            coverage=meta.get("coverage", {}),
            pevi_coverage=arrays.get("pevi_coverage"),
            pessimistic=bool(meta.get("pessimistic", False)),
            info=meta.get("info", {}),
        )

    def summary(self, confidence: float = 0.95) -> dict[str, Any]:
        """Mean sub-optimality with a Student t interval over seeds at the largest N (cut at 0:
        ``suboptimality_ci_clipped``), and how often the pessimism invariant held."""
        from theorylab.stats import final_ci

        sub = final_ci(self.suboptimality[:, -1], confidence, support=(0.0, None))
        return {
            "algorithm": self.config.get("algorithm"),
            "mdp": self.config.get("mdp"),
            "dataset_size": int(np.asarray(self.dataset_sizes)[-1]),
            "seeds": self.n_seeds,
            "optimal_value": self.optimal_value,
            "suboptimality_mean": sub.mean,
            "suboptimality_ci_low": sub.ci_low,
            "suboptimality_ci_high": sub.ci_high,
            "suboptimality_ci_clipped": sub.clipped,
            "confidence": confidence,
            "pessimism_holds": int(np.sum(self.pessimism_holds[:, -1])),
            "pessimistic": self.pessimistic,
            **{k: v for k, v in self.coverage.items() if isinstance(v, (int, float, str))},
            "wall_seconds": self.wall_seconds,
        }

    def table_row(self) -> dict[str, str]:
        """One line of ``theorylab run``'s table (at the largest N)."""
        s = self.summary()
        cov = self.coverage
        return {
            "algorithm": str(self.config.get("algorithm")),
            "mdp": str(self.config.get("mdp")),
            "N": str(s["dataset_size"]),
            "coverage": f"{cov.get('coverage')} ({cov.get('other')})",
            "seeds": str(self.n_seeds),
            "sub-optimality (mean)": f"{s['suboptimality_mean']:.4g}",
            "95% CI": f"[{s['suboptimality_ci_low']:.4g}, {s['suboptimality_ci_high']:.4g}]"
            + (" clipped at 0" if s["suboptimality_ci_clipped"] else ""),
            "C*": f"{cov.get('C_star', float('nan')):.4g}",
            "pessimism holds": f"{s['pessimism_holds']}/{self.n_seeds}",
        }

    def json_summary(self) -> dict[str, Any]:
        """What ``theorylab run --json`` writes (the keys of the former ``run_offline`` dict,
        per seed at the largest N, plus the mean and its interval)."""
        cfg = self.config
        s = self.summary()
        out = {
            "algorithm": cfg.get("algorithm"),
            "mdp": cfg.get("mdp"),
            "N": int(np.asarray(self.dataset_sizes)[-1]),
            "dataset_sizes": np.asarray(self.dataset_sizes).tolist(),
            "kind": cfg.get("sampling"),
            "coverage": self.coverage.get("coverage"),
            "other": self.coverage.get("other"),
            "seeds": cfg.get("seeds"),
            "seed": cfg.get("seed"),
            "S": cfg.get("S"),
            "A": cfg.get("A"),
            "H": cfg.get("H"),
            "gamma": cfg.get("gamma"),
            "C_star": self.coverage.get("C_star"),
            "C_star_clipped": self.coverage.get("C_star_clipped"),
            "optimal_value": self.optimal_value,
            "suboptimality": self.suboptimality[:, -1].tolist(),
            "policy_value": self.policy_value[:, -1].tolist(),
            "value_estimate": self.value_estimate[:, -1].tolist(),
            "pessimism_holds": self.pessimism_holds[:, -1].tolist(),
            "pessimistic": self.pessimistic,
            "params": cfg.get("fitted_params", {}),
            "info": self.info,
            "config": cfg,
            "suboptimality_mean": s["suboptimality_mean"],
            "suboptimality_ci": [s["suboptimality_ci_low"], s["suboptimality_ci_high"]],
            "wall_seconds": self.wall_seconds,
        }
        if self.pevi_coverage is not None:
            out["pevi_coverage"] = self.pevi_coverage[:, -1].tolist()
        return out

    def frame_columns(self, resolution: str = "full") -> dict[str, np.ndarray]:
        """One row per seed x dataset size: seed, dataset_size, suboptimality, policy_value,
        value_estimate, pessimism_holds."""
        B = self.suboptimality.shape[0]
        return {
            **self.long_index(B, self.dataset_sizes, "dataset_size"),
            **{name: np.asarray(getattr(self, name)).ravel() for name in _ARRAYS},
        }

    def plot(self, path=None, *, ax=None, **kwargs):
        """Sub-optimality against N (mean with a band over seeds; log-x), or the per-seed values
        at a single N, via :mod:`theorylab.plotting`."""
        from theorylab.plotting import plot_suboptimality_lines, plot_suboptimality_seeds

        label = str(self.config.get("algorithm", "sub-optimality"))
        kwargs.setdefault("title", f"{label} on {self.config.get('mdp', '?')}")
        if len(self.dataset_sizes) == 1:
            ax = plot_suboptimality_seeds(
                {label: self.suboptimality[:, 0]}, N=int(self.dataset_sizes[0]), ax=ax, **kwargs
            )
        else:
            ax = plot_suboptimality_lines(
                self.dataset_sizes, {label: self.suboptimality}, ax=ax, **kwargs
            )
        return self._finish_plot(ax, path)
