"""Multi-batch policy evaluation (``kind="multi-batch"``; seed row 001#25,
``algorithms/linear/multi_batch.py``): the pointer-chase instance against enumeration, the
learners' errors against the count of unreachable stages, input errors, the claim and its
control."""

from __future__ import annotations

import numpy as np
import pytest

import theorylab as tl
from theorylab.errors import InvalidMDPError
from theorylab.mdps import make
from theorylab.validations.claims.multi_batch import value_by_enumeration


def test_instance_features_rewards_and_value_by_enumeration():
    p = make("pointer-chase:d=5,H=4,seed=3")
    s = np.array([0, 1, 31])
    phi = p.features(s)  # (3, 5)
    want = np.array([[-1] * 5, [1, -1, -1, -1, -1], [1] * 5]) / np.sqrt(5)
    np.testing.assert_allclose(phi, want)
    np.testing.assert_allclose(p.reward(s), [-1.0, 1.0, 1.0])  # 2 b_0 - 1
    assert np.all(p.reward(p.chain) == p.sign)
    assert p.value == 4 * p.sign == value_by_enumeration(p)
    for h in range(3):  # the chain is the target policy's path from the start
        assert p.successor(h, p.chain[h]) == p.chain[h + 1]
    assert p.successor(3, p.chain[3]) == -1


def test_noise_free_learner_error_counts_the_unreached_stages():
    # noise 0: the error of K batches is exactly H - K - 1 stages of reward sign, 0 at K >= H
    p = make("pointer-chase:d=10,H=6,noise=0,seed=1")
    r = tl.run("multi-batch-pe", p, queries=120, batches=[1, 2, 5, 6, 10], seeds=2)
    want = np.array([4.0, 3.0, 0.0, 0.0, 0.0])
    np.testing.assert_allclose(np.abs(r.errors), np.broadcast_to(want, (2, 5)), atol=1e-9)
    ex = tl.run("batch-exhaustive-pe", "pointer-chase:d=4,H=3,noise=0", queries=48, batches=1)
    assert abs(ex.errors[0, 0]) <= 1e-12


def test_frozen_frontier_learns_no_more_than_one_batch():
    from theorylab.validations.multi_batch_mutations import multi_batch_frozen_frontier

    p = make("pointer-chase:d=10,H=6,noise=0,seed=1")
    with multi_batch_frozen_frontier():
        r = tl.run("multi-batch-pe", p, queries=120, batches=[1, 6], seeds=1)
    np.testing.assert_allclose(np.abs(r.errors), [[5.0, 5.0]], atol=1e-9)


@pytest.mark.parametrize(
    "spec, match",
    [
        ("pointer-chase:d=1", "d must be an integer in"),
        ("pointer-chase:H=0", "H must be an integer >= 1"),
        ("pointer-chase:noise=-1", "noise must be a finite number >= 0"),
    ],
)
def test_instance_input_errors(spec, match):
    with pytest.raises(InvalidMDPError, match=match):
        make(spec)


def test_learner_input_errors():
    p = make("pointer-chase:d=4,H=3")
    with pytest.raises(ValueError, match="queries = 3 must be >= 2 \\* batches"):
        tl.run("multi-batch-pe", p, queries=3, batches=2)
    with pytest.raises(ValueError, match="batches must be"):
        tl.run("multi-batch-pe", p, queries=30, batches=[4, 2])
    with pytest.raises(ValueError, match="batches must be 1"):
        tl.run("batch-exhaustive-pe", p, queries=480, batches=2)
    with pytest.raises(ValueError, match="queries = 10 < H 2\\^d = 48"):
        tl.run("batch-exhaustive-pe", p, queries=10, batches=1)
    with pytest.raises(ValueError, match="needs a query problem"):
        tl.run("multi-batch-pe", "riverswim:S=4,H=5", queries=30, batches=1)


@pytest.mark.slow  # test_validations runs the claim and its control at quick scale
def test_claim_passes_and_control_fails():
    from theorylab.validations import validate

    rep = validate("multi-batch-error-vs-batches", "quick")
    assert rep.verdict == "PASS", rep.format()
    assert {c["control"]: c["verdict"] for c in rep.controls} == {
        "multi-batch-frozen-frontier": "FAIL"
    }


def test_result_summarises_plots_frames_and_round_trips(tmp_path):
    from theorylab.results import MultiBatchResult, load_result

    r = tl.run("multi-batch-pe", "pointer-chase:d=6,H=3,noise=0", queries=36, batches=[1, 3],
               seeds=2)  # fmt: skip
    assert isinstance(r, MultiBatchResult)
    np.testing.assert_allclose(r.mean_abs_error(), [1.0, 0.0], atol=1e-9)
    back = load_result(r.save(tmp_path / "run"))
    np.testing.assert_array_equal(back.estimates, r.estimates)
    assert back.true_value == r.true_value and back.queries == 36
    cols = r.frame_columns()
    assert len(cols["error"]) == 4 and set(cols["batches"]) == {1, 3}
    r.plot(tmp_path / "mb.png")
    assert (tmp_path / "mb.png").exists() and "K=3: 0" in r.table_row()["|error| per K"]
