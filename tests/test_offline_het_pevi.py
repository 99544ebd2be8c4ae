"""Tests of HetPEVI (algorithms/offline/het_pevi.py; seed-catalogue-000.md#71).

Oracles: the penalty written out from the module's formula (c_n H sqrt(iota / n) +
c_K H sqrt(iota / K), iota = log(2 S A H K / delta)) on a one-state instance worked by hand; the
per-source average (sources weigh equally whatever their counts); the claim with its two
mutations failing it.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import theorylab as tl
from theorylab.algorithms.offline.dataset import InvalidDatasetError, OfflineDataset
from theorylab.algorithms.offline.het_pevi import concat_sources, het_pevi


def _bandit_source(rewards: list[float], action: int) -> OfflineDataset:
    """H = 1, one state, A = 2: one row per reward, all with the given action."""
    n = len(rewards)
    return OfflineDataset(
        states=np.zeros((1, n), dtype=np.int64),
        actions=np.full((1, n), action, dtype=np.int64),
        rewards=np.asarray([rewards], dtype=float),
        next_states=np.zeros((1, n), dtype=np.int64),
        stages=np.zeros((1, n), dtype=np.int64),
        S=1,
        A=2,
        horizon=1,
        gamma=None,
        mu0=np.array([1.0]),
    )


def test_penalty_and_source_average_by_hand():
    # source 0: action 0 seen 3 times (mean 1), source 1: action 0 seen once (reward 0.2)
    data = concat_sources([_bandit_source([1.0, 1.0, 1.0], 0), _bandit_source([0.2], 0)])
    delta, c_n, c_K = 0.1, 0.01, 0.02
    res = het_pevi(data, delta=delta, c_n=c_n, c_K=c_K)
    iota = math.log(2 * 1 * 2 * 1 * 2 / delta)  # S A H K
    gamma = c_n * 1 * math.sqrt(iota / 4) + c_K * 1 * math.sqrt(iota / 2)
    expected = (1.0 + 0.2) / 2 - gamma  # per-source average, not the pooled 0.8
    assert res.Q[0, 0, 0, 0] == pytest.approx(expected, rel=1e-12)
    assert res.Q[0, 0, 0, 1] == 0.0  # action 1 never seen
    assert res.info["sources"] == 2
    # one source alone: K = 1 in both the penalty and iota
    single = het_pevi(data, delta=delta, c_n=c_n, c_K=c_K, single_source=0)
    iota1 = math.log(2 * 1 * 2 * 1 * 2 / delta)  # iota keeps the dataset's K = 2
    g1 = c_n * math.sqrt(iota1 / 3) + c_K * math.sqrt(iota1 / 1)
    assert single.Q[0, 0, 0, 0] == pytest.approx(1.0 - g1, rel=1e-12)


def test_default_constants_are_one():
    res = het_pevi(_bandit_source([1.0] * 10_000, 0))
    iota = math.log(2 * 2 * 1 / 0.1)
    assert res.Q[0, 0, 0, 0] == pytest.approx(
        max(0.0, 1.0 - math.sqrt(iota / 1e4) - math.sqrt(iota))
    )
    assert res.params == {"delta": 0.1, "c_n": 1.0, "c_K": 1.0, "single_source": None}


def test_bad_input():
    data = _bandit_source([1.0], 0)
    with pytest.raises(ValueError, match="delta must lie in"):
        het_pevi(data, delta=1.5)
    with pytest.raises(ValueError, match="c_K must be >= 0"):
        het_pevi(data, c_K=-1.0)
    with pytest.raises(InvalidDatasetError, match="at least one source"):
        concat_sources([])
    other = OfflineDataset(**{**data.__dict__, "S": 2, "mu0": np.array([1.0, 0.0])})
    with pytest.raises(InvalidDatasetError, match="same seeds, S, A and horizon"):
        concat_sources([data, other])


def test_runs_through_tl_run():
    out = tl.run("het-pevi:c_K=0.1", "random:S=3,A=2,H=3,seed=1", dataset_size=300, coverage=0.5)
    assert np.isfinite(out.summary()["suboptimality_mean"])


@pytest.mark.slow
def test_claim_passes_and_mutations_fail_it():
    import theorylab.validations.mutations  # noqa: F401
    from theorylab.validations.controls import get_control
    from theorylab.validations.registry import VALIDATIONS

    claim = VALIDATIONS.get("het-pevi-source-floor")
    assert claim.run("quick").passed
    expected = {
        "het-pevi-single-source": "the floor falls with K",
        "het-pevi-source-term-dropped": "pessimism on the target",
    }
    for control, check in expected.items():
        with get_control(control).applied(claim):
            rep = claim.run("quick")
        assert check in {c.name for c in rep.checks if c.status == "FAIL"}
