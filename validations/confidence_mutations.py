"""Known-bug mutations of confidence sets and query rules (issue 26).

Registered as controls of ``validations/claims/confidence_sets.py`` (and appended to
``theorylab.validations.mutations.MUTATIONS``, which imports this module at its end). A shrunk
radius must FAIL the claim's coverage check, an inflated one its size check:

* ``zjj-radius-gamma-inverted``: Zhu-Jordan-Jiao's Lemma 3.1 curvature gamma returned as
  1/gamma (``pessimistic.curvature``), so the radius f shrinks by about gamma^2;
* ``zjj-radius-log-dropped``: f with d + 1/delta where d + log(1/delta) belongs (inflated);
* ``oful-radius-halved``: LinUCB's sqrt(beta_t) halved (``LinUCB.radius``);
* ``oful-noise-one``: OFUL's radius with R = 1 whatever the noise parameter says (rewards in
  [0, 1] are 1/2-sub-Gaussian; inflated);
* ``dueling-kappa-at-h``: Dueling RL's kappa = sigma'(H) (the library's value before issue 26:
  the slope at the true rewards' range, not over the MLE's set Theta_B; shrinks beta by 2 on
  random:S=2,A=2,H=2);
* ``dueling-radius-without-kappa``: Dueling RL's radius without its 1/kappa (kappa = 1);
* ``p2r-no-confident-branch``: P2R's version space returns an unbounded interval, so every
  uncached pair is queried (the confident branch never fires);
* ``pr-lsvi-threshold-squared``: PR-LSVI's query test on ||x||^2_(Sigma^-1) instead of
  ||x||_(Sigma^-1) (a control of ``pr-lsvi-regret-and-queries-sublinear``'s query-rule check).
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Iterator

from theorylab.validations.controls import Control, register_control
from theorylab.validations.controls import patched as _patched


@contextlib.contextmanager
def zjj_radius_gamma_inverted(claim=None) -> Iterator[None]:
    from theorylab.algorithms.preference import pessimistic

    original = pessimistic.curvature

    def inverted(L, B):
        return 1.0 / original(L, B)  # the bug: gamma where 1/gamma belongs

    with _patched(pessimistic, "curvature", inverted):
        yield


@contextlib.contextmanager
def zjj_radius_log_dropped(claim=None) -> Iterator[None]:
    from theorylab.algorithms.preference import pessimistic

    def no_log(n, d, delta, lam, B, L, C=1.0):
        g = pessimistic.curvature(L, B)
        return C * math.sqrt((d + 1.0 / delta) / (g * g * n) + lam * B * B)  # the bug

    with _patched(pessimistic, "mle_radius", no_log):
        yield


@contextlib.contextmanager
def oful_radius_halved(claim=None) -> Iterator[None]:
    from theorylab.algorithms.online.linucb import LinUCB

    original = LinUCB.radius.fget
    with _patched(LinUCB, "radius", property(lambda self: 0.5 * original(self))):
        yield


@contextlib.contextmanager
def oful_noise_one(claim=None) -> Iterator[None]:
    from theorylab.algorithms.online import linucb

    original = linucb.oful_radius

    def noise_one(logdet_ratio, *, noise, delta, lam, theta_norm):
        return original(logdet_ratio, noise=1.0, delta=delta, lam=lam, theta_norm=theta_norm)

    with _patched(linucb, "oful_radius", noise_one):
        yield


@contextlib.contextmanager
def dueling_kappa_at_h(claim=None) -> Iterator[None]:
    from theorylab.algorithms.preference import dueling
    from theorylab.mdps.preference import sigmoid_slope_min

    def at_h(H, B):
        return sigmoid_slope_min(float(H))  # the bug: the slope at the true rewards' range

    with _patched(dueling, "glm_kappa", at_h):
        yield


@contextlib.contextmanager
def dueling_radius_without_kappa(claim=None) -> Iterator[None]:
    from theorylab.algorithms.preference import dueling

    with _patched(dueling, "glm_kappa", lambda H, B: 1.0):  # the bug: 1/kappa lost
        yield


@contextlib.contextmanager
def p2r_no_confident_branch(claim=None) -> Iterator[None]:
    from theorylab.algorithms.preference.p2r import VersionSpace

    def unbounded(self, x):
        return -math.inf, math.inf  # the bug: the version space never certifies a label

    with _patched(VersionSpace, "interval", unbounded):
        yield


@contextlib.contextmanager
def pr_lsvi_threshold_squared(claim=None) -> Iterator[None]:
    import functools

    from theorylab.algorithms.preference.pr_lsvi import PRLSVI

    original = PRLSVI.__init__

    @functools.wraps(original)  # the runner reads the constructor's signature
    def squared(self, *args, **kwargs):
        original(self, *args, **kwargs)
        # the bug: ||x||^2_(Sigma^-1) > eps where ||x||_(Sigma^-1) > eps belongs
        self.threshold = math.sqrt(self.threshold)

    with _patched(PRLSVI, "__init__", squared):
        yield


MUTATIONS = tuple(
    register_control(Control(name, "mutation", description, mutation))
    for name, description, mutation in (
        (
            "zjj-radius-gamma-inverted",
            "Zhu-Jordan-Jiao's MLE radius with gamma inverted (shrinks by ~gamma^2)",
            zjj_radius_gamma_inverted,
        ),
        (
            "zjj-radius-log-dropped",
            "Zhu-Jordan-Jiao's MLE radius with d + 1/delta for d + log(1/delta) (inflated)",
            zjj_radius_log_dropped,
        ),
        ("oful-radius-halved", "LinUCB / OFUL's sqrt(beta_t) halved", oful_radius_halved),
        (
            "pr-lsvi-threshold-squared",
            "PR-LSVI asks iff ||x||^2_(Sigma^-1) > eps (the square misplaced)",
            pr_lsvi_threshold_squared,
        ),
        (
            "p2r-no-confident-branch",
            "P2R's version space never certifies a label (every uncached pair is queried)",
            p2r_no_confident_branch,
        ),
        (
            "dueling-kappa-at-h",
            "Dueling RL's kappa = sigma'(H) (the true rewards' range), not over Theta_B",
            dueling_kappa_at_h,
        ),
        (
            "dueling-radius-without-kappa",
            "Dueling RL's GLM radius without its 1/kappa factor (kappa taken as 1)",
            dueling_radius_without_kappa,
        ),
        (
            "oful-noise-one",
            "LinUCB / OFUL's radius with R = 1 whatever the noise parameter (inflated)",
            oful_noise_one,
        ),
    )
)
