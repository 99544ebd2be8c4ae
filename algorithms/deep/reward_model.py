"""A learned reward model: linear in fixed features, fitted to preference pairs by the BTL MLE.

r(x, y) = <theta, phi(x, y)> with theta the constrained Bradley-Terry-Luce maximum-likelihood
estimate of :func:`theorylab.algorithms.preference.mle.btl_mle` (Zhu, Jordan, Jiao 2023, sec. 3.1:
``Theta_B = {1^T theta = 0, ||theta||_2 <= B}``, Newton / More-Sorensen, exact to 1e-12) on the
differences x_i = phi(x_i, y_w,i) - phi(x_i, y_l,i) with label 1 (the chosen response won). This is
the reward model of RLHF (Ouyang et al. 2022, eq. (1): -log sigma(r(x, y_w) - r(x, y_l))) with a
linear head on fixed features instead of a fine-tuned LM; the estimator and its solver are the
library's, not rewritten here. Two feature maps:

* ``"tree"`` -- token trees: phi(x, y) = one-hot of y within prompt x, fitted prompt by prompt
  (one MLE per prompt on its Y-dimensional one-hot: the per-prompt shift of r is not identified
  from comparisons within a prompt, and the sum-zero constraint picks one). The fitted table
  ``r_hat (P, Y)`` differs from the true mean reward by a per-prompt constant plus estimation
  error, and pi*_beta ∝ pi_ref exp(r/beta) is invariant to per-prompt constants, so a consistent
  fit recovers the exact optimum (tests/test_reward_model.py measures KL(pi*_rhat || pi*_r));
* ``"ngram:n=3,d=512"`` -- text: counts of the character 1..n-grams of ``prompt + completion +
  "\\x03"`` (the end mark makes the completion's length visible), hashed (CRC-32) into d buckets.

:meth:`RewardModel.score_texts` drives the prompt trainer (``reward=RewardModel`` or
``reward="reward-model:PATH"``; DPO labels by Bradley-Terry with it, GRPO uses it as the
reward); :func:`tree_task_with_rewards` gives the token-tree trainer a task whose rewards are the
model's (the ``correct`` table stays the true one, so accuracy is still measured truthfully).
"""

from __future__ import annotations

import dataclasses
import json
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from theorylab.algorithms.preference.mle import btl_mle
from theorylab.errors import TheorylabError
from theorylab.registry import convert_parameters, parse_spec

NGRAM_DEFAULTS = {"n": 3, "d": 512}
END = "\x03"


class RewardModelError(TheorylabError, ValueError):
    """A reward model that cannot be fitted, loaded or applied."""


def ngram_features(prompts: Sequence[str], completions: Sequence[str], n: int, d: int):
    """Hashed character 1..n-gram counts (N, d) of ``prompt + completion + END``."""
    out = np.zeros((len(prompts), d))
    for i, (p, c) in enumerate(zip(prompts, completions, strict=True)):
        s = p + c + END
        for k in range(1, n + 1):
            for j in range(len(s) - k + 1):
                out[i, zlib.crc32(s[j : j + k].encode()) % d] += 1.0
    return out


def parse_features(spec: str) -> tuple[str, dict[str, int]]:
    name, raw = parse_spec(spec)
    if name == "tree":
        return name, {}
    if name != "ngram":
        raise RewardModelError(f"unknown features {spec!r}; expected 'tree' or 'ngram:n=3,d=512'")
    try:
        kw = {**NGRAM_DEFAULTS, **convert_parameters(name, "features", raw, NGRAM_DEFAULTS)}
    except ValueError as exc:
        raise RewardModelError(str(exc)) from None
    if kw["n"] < 1 or kw["d"] < 2:
        raise RewardModelError(f"ngram features need n >= 1 and d >= 2, got {spec!r}")
    return name, kw


@dataclass(frozen=True)
class RewardModel:
    """theta (d,) for ``"ngram:..."`` features, or (P, Y) per-prompt tables for ``"tree"``."""

    theta: np.ndarray
    features: str
    bound: float

    def score_texts(self, prompts: Sequence[str], completions: Sequence[str]) -> np.ndarray:
        """r(x, y) (N,) of text pairs (ngram features)."""
        name, kw = parse_features(self.features)
        if name != "ngram":
            raise RewardModelError("a 'tree' reward model scores token-tree responses, not text")
        return ngram_features(prompts, completions, kw["n"], kw["d"]) @ self.theta

    def table(self) -> np.ndarray:
        """r_hat (P, Y) of a ``"tree"`` model."""
        if self.features != "tree":
            raise RewardModelError(f"a {self.features!r} reward model has no token-tree table")
        return self.theta

    def save(self, path: str) -> Path:
        from theorylab.store import atomic_write_json

        return atomic_write_json(path, {"features": self.features, "bound": self.bound,
                                        "theta": self.theta.tolist()})  # fmt: skip

    @classmethod
    def load(cls, path: str) -> RewardModel:
        try:
            meta = json.loads(Path(path).read_text())
            return cls(np.asarray(meta["theta"], dtype=float), meta["features"],
                       float(meta["bound"]))  # fmt: skip
        except (OSError, ValueError, KeyError) as exc:
            raise RewardModelError(f"reward model {path!r} could not be read: {exc}") from None


def _fit(X: np.ndarray, bound: float) -> np.ndarray:
    """BTL MLE on differences X (n, d) with every label 1 (the first response won)."""
    return btl_mle(X[None], np.ones((1, X.shape[0])), bound)[0]


def fit_text_reward_model(
    prompts: Sequence[str], chosen: Sequence[str], rejected: Sequence[str], *,
    features: str = "ngram:n=3,d=512", bound: float = 50.0,
) -> RewardModel:  # fmt: skip
    """Fit r on text preference pairs (prompt, chosen, rejected) (module docstring)."""
    name, kw = parse_features(features)
    if name != "ngram":
        raise RewardModelError("text pairs need ngram features, e.g. 'ngram:n=3,d=512'")
    if not len(prompts) == len(chosen) == len(rejected) or not len(prompts):
        raise RewardModelError(
            f"need equally many prompts, chosen and rejected (>= 1), got {len(prompts)}, "
            f"{len(chosen)}, {len(rejected)}"
        )
    X = ngram_features(prompts, chosen, **kw) - ngram_features(prompts, rejected, **kw)
    return RewardModel(_fit(X, bound), features, bound)


def fit_tree_reward_model(
    n_prompts: int, n_responses: int, x: np.ndarray, chosen: np.ndarray, rejected: np.ndarray,
    *, bound: float = 50.0,
) -> RewardModel:  # fmt: skip
    """Fit r_hat (P, Y) from index pairs x, chosen, rejected (n,), one MLE per prompt."""
    x, chosen, rejected = (np.asarray(a, dtype=np.int64) for a in (x, chosen, rejected))
    table = np.zeros((n_prompts, n_responses))
    eye = np.eye(n_responses)
    for p in range(n_prompts):
        rows = x == p
        if not rows.any():
            raise RewardModelError(f"prompt {p} has no preference pair; every prompt needs some")
        table[p] = _fit(eye[chosen[rows]] - eye[rejected[rows]], bound)
    return RewardModel(table, "tree", bound)


def bradley_terry_tree_pairs(task, n_per_prompt: int, rng: np.random.Generator):
    """n pairs per prompt: responses uniform, the winner drawn with P(a > b) = sigmoid(r(a) -
    r(b)) from the task's mean reward. Returns x, chosen, rejected (P n,)."""
    P, Y = task.n_prompts, task.n_responses
    x = np.repeat(np.arange(P), n_per_prompt)
    a, b = rng.integers(0, Y, size=(2, len(x)))
    r = task.mean_reward
    a_wins = rng.random(len(x)) < 1.0 / (1.0 + np.exp(-(r[x, a] - r[x, b])))
    return x, np.where(a_wins, a, b), np.where(a_wins, b, a)


def tree_task_with_rewards(task, model: RewardModel):
    """The token-tree task with deterministic rewards r_hat (the model's table)."""
    r = model.table()
    if r.shape != (task.n_prompts, task.n_responses):
        raise RewardModelError(
            f"the reward model's table is {r.shape}, the task needs "
            f"{(task.n_prompts, task.n_responses)}"
        )
    return dataclasses.replace(
        task, reward_values=r[..., None], reward_probs=np.ones((*r.shape, 1)),
        name=f"{task.name},reward=learned",
    )  # fmt: skip
