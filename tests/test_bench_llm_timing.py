"""``theorylab bench llm``'s timing and reproducibility code on fake clocks (no timing asserted).

The contenders of a loss run in the same rounds, in an order shuffled per round, each timed sample
``k`` steps long; ratios are medians of per-round paired ratios; ``--runs`` reports how far each
row's ratios spread across runs. Fake clocks that advance by a fixed cost per step make every
figure exact, so these tests check the arithmetic and the bookkeeping, not the machine.
"""

from __future__ import annotations

import gc
import math
import subprocess
import sys

import pytest

import theorylab.bench.llm as llm


@pytest.fixture
def fake_clock(monkeypatch):
    """Every clock of ``llm.CLOCKS`` reads one counter that the fake steps advance."""
    now = {"t": 0.0}
    monkeypatch.setattr(llm, "CLOCKS", {c: (lambda: now["t"]) for c in llm.CLOCKS})
    return now


def test_contenders_share_rounds_in_shuffled_order_and_samples_last_min_sample_s(fake_clock):
    calls: list[str] = []

    def step(name, cost):
        def fn():
            calls.append(name)
            fake_clock["t"] += cost

        return fn

    fns = {"a": step("a", 0.03), "b": step("b", 0.06), "c": step("c", 0.12)}
    out = llm._time_alternately(fns, warmup=2, rounds=12, min_sample_s=0.1)
    k = math.ceil(0.1 / 0.03)  # the fastest warm-up step sets k: every sample >= 0.1 s
    assert out["steps_per_sample"] == k == 4 and out["rounds"] == 12
    assert out["clock"] == llm.CLOCK
    assert len(calls) == 3 * 2 + 3 * 12 * k
    timed = calls[6:]
    rounds = [timed[i : i + 3 * k] for i in range(0, len(timed), 3 * k)]
    # every contender once per round, k consecutive steps; the order is not always the same
    assert all(sorted(set(r)) == ["a", "b", "c"] and r == sorted(r, key=r.index) for r in rounds)
    orders = {tuple(dict.fromkeys(r)) for r in rounds}
    assert len(orders) > 1
    for clock in llm.CLOCKS:
        for name, cost in (("a", 0.03), ("b", 0.06), ("c", 0.12)):
            assert out["samples"][clock][name] == pytest.approx([cost] * 12)  # per step


def test_no_warmup_means_one_step_per_sample(fake_clock):
    out = llm._time_alternately({"a": lambda: None}, warmup=0, rounds=3)
    assert out["steps_per_sample"] == 1 and len(out["samples"][llm.CLOCK]["a"]) == 3


def test_paired_ratio_is_the_median_of_per_round_ratios_not_a_ratio_of_medians():
    reference, contender = [1.0, 2.0, 10.0], [1.0, 1.0, 20.0]
    # per round 1, 2, 0.5: median 1; the medians' ratio would say 2
    got = llm.paired_ratio(reference, contender)
    assert got["median"] == 1.0 and got["q1"] <= 1.0 <= got["q3"]
    assert llm.paired_ratio([2.0], [1.0]) == {"median": 2.0, "q1": 2.0, "q3": 2.0}
    assert math.isnan(llm.paired_ratio([], [])["median"])
    with pytest.raises(ValueError):
        llm.paired_ratio([1.0, 2.0], [1.0])  # rounds must pair


def _timing(samples_by_name, rounds):
    return {
        "samples": {c: samples_by_name for c in llm.CLOCKS},
        "clock": llm.CLOCK,
        "steps_per_sample": 2,
        "rounds": rounds,
        "load": (1.0, 2.0),
    }


def _rows(trl_ms, padded_ms, run):
    timing = _timing({"padded": padded_ms, "plain": [2 * x for x in padded_ms], "trl": trl_ms}, 3)
    checks = {k: (0.5, 0.0, 0.0) for k in ("padded", "plain", "trl")}
    cfg = llm.CONFIGS["quick"]
    rows = llm._rows("DPO step", cfg, 100, timing, checks, "cpu", "torch.float32")
    return [dict(r, run=run) for r in rows]


def test_rows_hold_paired_ratios_on_every_clock_and_absolute_times():
    pytest.importorskip("torch")
    rows = {r["trainer"]: r for r in _rows([3.0, 3.0, 3.0], [1.0, 1.5, 3.0], 1)}
    padded = rows["theorylab padded"]
    assert padded["ratio_vs_trl"] == 2.0  # rounds: 3, 2, 1
    assert padded["ratio_vs_plain"] == 2.0
    assert set(padded["ratio_vs_trl_by_clock"]) == set(llm.CLOCKS)
    assert padded["ms_median"] == 1500.0 and padded["clock"] == llm.CLOCK
    assert padded["rounds"] == 3 and padded["steps_per_sample"] == 2
    assert padded["samples_ms"] == [1000.0, 1500.0, 3000.0]
    assert rows["TRL"]["ratio_vs_trl"] == 1.0 and padded["ratio_vs_peer"] == 2.0


def test_reproducibility_flags_rows_whose_ratio_spreads_over_the_limit():
    pytest.importorskip("torch")
    rows = (
        _rows([3.0] * 3, [1.5] * 3, 1)  # padded 2.0 vs TRL
        + _rows([3.0] * 3, [1.4] * 3, 2)  # 2.14
        + _rows([3.0] * 3, [1.25] * 3, 3)  # 2.4: spread 20%
    )
    entries = {e["trainer"]: e for e in llm.reproducibility(rows)}
    padded = entries["theorylab padded"]
    assert padded["runs"] == 3
    assert padded["ratio_vs_trl"] == pytest.approx([2.0, 3 / 1.4, 2.4])
    assert padded["spread_vs_trl"] == pytest.approx(0.2)
    assert padded["flag"] == ["trl"]
    # plain PyTorch is twice padded's time in every run: its ratio to plain does not spread
    assert padded["spread_vs_plain"] == pytest.approx(0.0)
    assert "spread_vs_trl" not in entries["TRL"]  # TRL's own ratio to itself is not a figure
    table = llm.format_table(rows)
    assert "Reproducibility across runs" in table and "> 10%" in table
    assert "2.00 / 2.14 / 2.40" in table and "20.0%" in table
    assert "of 3 rows over 10%" in table and "worst ratio spread by clock" in table
    assert all(line == line.rstrip() for line in table.splitlines())
    steady = llm.reproducibility(rows, limit=0.25)
    assert not any(e["flag"] for e in steady)


def test_bench_llm_refuses_a_bad_runs_count():
    for bad in (0, -2, True, 1.5):
        with pytest.raises(ValueError, match=r"--runs must be a positive integer"):
            llm.bench_llm(quick=True, runs=bad)


def test_agreement_check_follows_the_weights_dtype():
    # float32: 1e-5 absolute on loss and every gradient entry
    llm._check("x", 0.5, 0.5 + 9e-6, 9e-6)
    with pytest.raises(AssertionError, match="float32"):
        llm._check("x", 0.5, 0.5 + 2e-5, 0.0)
    with pytest.raises(AssertionError, match="max gradient difference"):
        llm._check("x", 0.5, 0.5, 2e-5)
    # bfloat16 guards against O(1) errors only (the strict check runs at float32 first): the gaps
    # measured between layouts on the quick batches and on the H200 (relative gradient gap
    # 2.75e-2) pass ...
    llm._check("x", 0.5982, 0.5981, 1.3e-3, 4.9e-3, "bfloat16")
    llm._check("x", 0.30400, 0.30338, 2e-3, 2.75e-2, "bfloat16")
    # ... a relative loss gap of 6e-2 (5e-2 * |loss| is the limit) or a relative gradient gap of
    # 0.25 (the limit is 0.2) does not; nor does an O(1) error such as a flipped sign
    with pytest.raises(AssertionError, match="bfloat16"):
        llm._check("x", 0.634, 0.598, 0.0, 0.0, "bfloat16")
    with pytest.raises(AssertionError, match="relative gradient difference 0.25"):
        llm._check("x", 0.598, 0.598, 0.0, 0.25, "bfloat16")
    with pytest.raises(AssertionError):
        llm._check("x", -0.598, 0.598, 0.0, 2.0, "bfloat16")
    # below |loss| = 1e-3 the loss tolerance is 5e-2 * 1e-3 = 5e-5 absolute
    llm._check("x", 4.2e-4, 4.2e-4 + 4e-5, 0.0, 0.0, "bfloat16")
    with pytest.raises(AssertionError):
        llm._check("x", 4.2e-4, 4.2e-4 + 6e-5, 0.0, 0.0, "bfloat16")


def test_cuda_size_is_a_100m_gpt2():
    cfg = llm.CONFIGS["gpu"]
    d, L, V = cfg["n_embd"], cfg["n_layer"], cfg["vocab"]
    positions = cfg["prompt"] + cfg["completion"] + 8
    # GPT-2 with a tied head: token and position embeddings, per block two LayerNorms (2 x 2d),
    # attention (d x 3d + 3d, d x d + d) and MLP (d x 4d + 4d, 4d x d + d), a final LayerNorm
    per_block = 4 * d + (3 * d * d + 3 * d) + (d * d + d) + (4 * d * d + 4 * d) + (4 * d * d + d)
    params = V * d + positions * d + L * per_block + 2 * d
    assert 100e6 <= params <= 120e6
    assert llm.ROUNDS["gpu"] >= 10


def test_timed_rounds_run_without_the_cyclic_gc_and_restore_it(fake_clock):
    seen: list[bool] = []

    def step():
        seen.append(gc.isenabled())
        fake_clock["t"] += 0.05

    assert gc.isenabled()
    llm._time_alternately({"a": step, "b": step}, warmup=1, rounds=4)
    assert seen[:2] == [True, True]  # warm-up: as the process runs
    assert seen[2:] and not any(seen[2:])  # every timed step: no collection can land in it
    assert gc.isenabled()


def test_page_faults_are_recorded_per_step(fake_clock, monkeypatch):
    faults = {"n": 0}
    monkeypatch.setattr(llm, "minor_faults", lambda: faults["n"])

    def step(cost, n):
        def fn():
            faults["n"] += n
            fake_clock["t"] += cost

        return fn

    out = llm._time_alternately({"a": step(0.05, 300), "b": step(0.1, 0)}, warmup=1, rounds=3)
    assert out["steps_per_sample"] == 2
    assert out["faults"] == {"a": [300.0] * 3, "b": [0.0] * 3}


def test_bench_llm_refuses_an_unknown_allocator_before_any_work():
    with pytest.raises(ValueError, match=r"^--allocator must be one of heap, system, got 'tc'$"):
        llm.bench_llm(quick=True, allocator="tc")


def test_allocator_applies_to_bench_llm_only():
    from theorylab.bench.suite import run_benchmarks

    with pytest.raises(ValueError, match=r"--allocator applies to theorylab bench llm only"):
        run_benchmarks("planning", quick=True, allocator="heap")
    with pytest.raises(ValueError, match=r"--allocator must be one of"):
        run_benchmarks("llm", quick=True, allocator="jemalloc")


_FAULTS = """
import sys, numpy as np
from theorylab.bench.allocator import minor_faults, set_allocator
print(set_allocator(sys.argv[1]))
for _ in range(3):
    np.ones(6 * 2**20).sum()  # 48 MiB: above the 32 MiB cap of glibc's dynamic mmap threshold
f0 = minor_faults()
for _ in range(10):
    np.ones(6 * 2**20).sum()
print(minor_faults() - f0)
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's mallopt")
def test_heap_allocator_removes_the_page_faults_of_freed_blocks():
    """The mechanism, in fresh processes (the setting is process-wide): a 48 MiB array allocated
    and freed 10 times is mapped afresh each time under glibc's defaults (measured: 5,360 faults,
    transparent huge pages serving much of it), and faults not once when freed memory stays in the
    heap."""

    def faults(setting: str) -> tuple[str, int]:
        out = subprocess.run([sys.executable, "-c", _FAULTS, setting], capture_output=True,
                             text=True, check=True).stdout.split("\n")  # fmt: skip
        return out[0], int(out[1])

    heap_line, heap = faults("heap")
    system_line, system = faults("system")
    assert heap_line.startswith("heap (glibc mallopt") and system_line.startswith("system")
    assert system >= 10 * 24  # every allocation faults afresh: 24 pages even if all are 2 MiB
    assert heap <= 10
