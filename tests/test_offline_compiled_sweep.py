"""The compiled N-sweep of the offline runner returns the Python loop's numbers, bit for bit.

``tl.run(..., loop="compiled")`` (theorylab.algorithms.offline.compiled_sweep) draws, counts and
plans every seed's sweep in one numba call; ``loop="python"`` draws with make_dataset and fits
every head(N). The same streams and the same arithmetic give identical arrays: sub-optimality,
policy values, value estimates (every per-pair sum enters these), the pessimism flags, PEVI's
coverage term (the counts) and the recorded parameters. Negative controls show the comparison
fails on a one-ulp change of a constant and on uniforms taken from the wrong rows.
"""

from __future__ import annotations

import numpy as np
import pytest

import theorylab as tl
from theorylab.algorithms.offline import compiled_sweep, dataset
from theorylab.algorithms.offline.sweep_kernel import searchsorted_right
from theorylab.mdps import make
from theorylab.mdps.families.offline_instances import covariate_shift_distribution

SIZES = [300, 900, 2400]
SEEDS = [0, 3, 5]
FIELDS = ("suboptimality", "policy_value", "value_estimate", "pessimism_holds", "pevi_coverage")

CASES = [
    # (algorithm, problem, budget and parameters)
    ("pessimistic-vi-hoeffding", "multiscale-bandit", {"coverage": 0.25, "other": "adversarial"}),
    ("pessimistic-vi-hoeffding", "random:S=5,A=3,H=4,seed=3", {"coverage": 0.3}),
    ("pessimistic-vi-bernstein", "random:S=5,A=3,H=4,seed=3", {"coverage": 0.3, "c_b": 0.1}),
    (
        "pessimistic-vi-bernstein",
        "random-sparse:S=30,A=3,b=4,H=4",
        {"coverage": 0.5, "sampling": "samples", "bernstein_form": "max", "c_b": 0.5},
    ),
    ("pevi-tabular", "random-sparse:S=30,A=3,b=4,H=4", {"coverage": 0.5, "beta": 0.5}),
    (
        "pevi-tabular",
        "offline-linear:d=2,H=2",
        {"coverage": 0.2, "sampling": "samples", "c_beta": 0.02},
    ),
    # stage-dependent transitions and rewards (P_h, R_h): one sampler stage per h
    (
        "pessimistic-vi-bernstein",
        "linear-simplex:S=6,A=3,d=3,H=4",
        {"coverage": 0.3, "sampling": "samples", "c_b": 0.1},
    ),
    ("pevi-tabular", "linear-simplex:S=6,A=3,d=3,H=4", {"coverage": 0.3, "beta": 0.3}),
    ("vi-lcb", "multiscale-bandit:gamma=0.5", {"coverage": 0.9, "c_L": 0.5}),
    # a model with H and gamma, solved as the discounted problem by the runner
    ("vi-lcb", "random:S=5,A=3,H=4,gamma=0.9,seed=1", {"coverage": 0.5, "c_L": 0.001}),
    (
        "vi-lcb",
        "random:S=6,A=3,gamma=0.9,seed=2",
        {"coverage": 0.5, "initial_policy": "random", "c_L": 0.001},
    ),
    (
        "vi-lcb",
        "random-sparse:S=30,A=3,b=4,gamma=0.8",
        {"other": "adversarial", "coverage": 0.4, "c_L": 0.005, "initial_policy": "uniform"},
    ),
]


def _both(algorithm, problem, sizes=SIZES, seeds=SEEDS, **kw):
    return [
        tl.run(algorithm, problem, seeds=seeds, seed=7, dataset_size=sizes, loop=loop, **kw)
        for loop in ("python", "compiled")
    ]


def _mismatches(a, b) -> list[str]:
    bad = [
        f
        for f in FIELDS
        if getattr(a, f) is not None and not np.array_equal(getattr(a, f), getattr(b, f))
    ]
    if a.config["fitted_params"] != b.config["fitted_params"]:
        bad.append("fitted_params")
    if a.coverage != b.coverage or not np.array_equal(a.dataset_sizes, b.dataset_sizes):
        bad.append("coverage or sizes")
    return bad


@pytest.mark.parametrize(("algorithm", "problem", "kw"), CASES)
def test_compiled_sweep_equals_the_python_loop(algorithm, problem, kw):
    py, comp = _both(algorithm, problem, **kw)
    assert py.config["loop"] == "python" and comp.config["loop"] == "compiled"
    assert _mismatches(py, comp) == []
    assert np.unique(py.value_estimate).size > 1  # the comparison sees non-trivial numbers


def test_compiled_sweep_with_a_data_distribution_and_bernoulli_rewards():
    mdp = make("multiscale-bandit:n_gap=20,gap_ratio=0.7,n_mass=0,junk=true")
    assert mdp.reward_model == "bernoulli"
    mu = covariate_shift_distribution(mdp, 8)
    py, comp = _both(
        "pessimistic-vi-hoeffding", mdp, sizes=[5000], sampling="samples", data_distribution=mu
    )
    assert _mismatches(py, comp) == []


def test_a_seed_alone_equals_its_row_of_a_batch():
    alone = tl.run("vi-lcb", "multiscale-bandit:gamma=0.5", seeds=[3], seed=7,
                   dataset_size=SIZES, loop="compiled", c_L=0.5)  # fmt: skip
    batch = tl.run("vi-lcb", "multiscale-bandit:gamma=0.5", seeds=SEEDS, seed=7,
                   dataset_size=SIZES, loop="compiled", c_L=0.5)  # fmt: skip
    assert np.array_equal(alone.value_estimate[0], batch.value_estimate[1])


# ------------------------------------------------------------------------ negative controls
def test_the_comparison_fails_on_a_one_ulp_change_of_a_constant():
    """c_h one ulp above 1 moves every penalty by round-off: the value estimates differ."""
    problem, kw = "random:S=5,A=3,H=4,seed=3", {"coverage": 0.3}
    py = tl.run("pessimistic-vi-hoeffding", problem, seeds=SEEDS, seed=7, dataset_size=SIZES,
                loop="python", **kw)  # fmt: skip
    comp = tl.run("pessimistic-vi-hoeffding", problem, seeds=SEEDS, seed=7, dataset_size=SIZES,
                  loop="compiled", c_h=np.nextafter(1.0, 2.0), **kw)  # fmt: skip
    assert "value_estimate" in _mismatches(py, comp)


def test_the_comparison_fails_when_the_uniforms_come_from_the_wrong_rows(monkeypatch):
    """A known-bug mutation of the driver: the next-state and reward uniforms swapped (rows 1
    and 2 of make_dataset's g.random((3, n)))."""
    original = dataset._pcg64_offsets

    def swapped(rngs, offsets):
        offsets = tuple(offsets)
        if len(offsets) == 3:
            offsets = (offsets[0], offsets[2], offsets[1])
        return original(rngs, offsets)

    monkeypatch.setattr(dataset, "_pcg64_offsets", swapped)
    py, comp = _both("vi-lcb", "multiscale-bandit:gamma=0.5", coverage=0.9, c_L=0.5)
    assert "value_estimate" in _mismatches(py, comp)


# ------------------------------------------------------------------------ the pieces
def test_searchsorted_right_is_numpys_even_on_an_unsorted_array():
    """numpy's binary search carries the previous key's bounds over; on an array that round-off
    left unsorted the answer depends on it, and the kernel's search reproduces it."""
    rng = np.random.default_rng(0)
    for _ in range(200):
        n = int(rng.integers(1, 12))
        arr = np.round(rng.random(n) * 4, 1)  # unsorted, with ties
        if rng.random() < 0.5:
            arr = np.sort(arr)
        keys = np.round(rng.random(int(rng.integers(1, 30))) * 4, 1)
        state = np.array([[0, n]], np.int64)
        fstate = np.array([-np.inf])
        ours = [searchsorted_right(arr, 0, n, k, state, fstate, 0) for k in keys]
        assert ours == np.searchsorted(arr, keys, side="right").tolist()


def test_loop_choice_and_errors():
    small = tl.run("vi-lcb", "multiscale-bandit:gamma=0.5", seeds=2, dataset_size=100, c_L=0.5)
    assert small.config["loop"] == "python"  # auto: below AUTO_MIN_SEED_SAMPLES
    big = tl.run("vi-lcb", "multiscale-bandit:gamma=0.5", seeds=2, c_L=0.5,
                 dataset_size=compiled_sweep.AUTO_MIN_SEED_SAMPLES // 2)  # fmt: skip
    assert big.config["loop"] == "compiled"
    with pytest.raises(ValueError, match="loop must be one of"):
        tl.run("vi-lcb", "multiscale-bandit:gamma=0.5", dataset_size=100, loop="fast")
    with pytest.raises(ValueError, match="naive-vi has no compiled sweep"):
        tl.run("naive-vi", "multiscale-bandit:gamma=0.5", dataset_size=100, loop="compiled")
    with pytest.raises(ValueError, match="subsampling"):
        tl.run("pessimistic-vi-hoeffding", "random:S=5,A=3,H=4,seed=3", dataset_size=100,
               loop="compiled", subsample=True)  # fmt: skip


def test_null_controls_compile_and_a_mutation_runs_the_python_loop():
    """The null controls replace the fit's result (a transform the compiled sweep applies: the
    same numbers on both loops); a mutation patches the module, which the compiled sweep would
    not see, so auto runs the Python loop and compiled refuses."""
    import theorylab.validations.mutations  # noqa: F401  (registers the mutations)
    from theorylab.validations.controls import get_control

    class Claim:
        name = "test"
        control_targets = {"offline": ("pevi-tabular", "vi-lcb")}

    kw = {"seeds": 2, "dataset_size": 40, "coverage": 0.5}
    problem = "random:S=5,A=3,H=4,seed=3"
    for control in ("frozen", "random"):
        with get_control(control).applied(Claim()):
            for algorithm, prob, extra in (("pevi-tabular", problem, {"coverage": 0.5}), CASES[-1]):
                py, comp = _both(algorithm, prob, **extra)
                assert comp.config["loop"] == "compiled"
                assert _mismatches(py, comp) == []
                assert np.all(comp.value_estimate == 0.0)
    with get_control("pevi-penalty-sign").applied(Claim()):
        with pytest.raises(ValueError, match="Python loop runs"):
            tl.run("pevi-tabular", problem, loop="compiled", **kw)
        tl.run("pevi-tabular", problem, loop="auto", **kw)
    assert tl.run("pevi-tabular", problem, loop="compiled", **kw).config["loop"] == "compiled"


def test_the_numpy_search_path_of_the_kernel_equals_the_guided_one(monkeypatch):
    """Keys that round-off left unsorted take numpy's own search algorithm in the kernel; force
    it on sorted keys and compare with the Python loop."""
    original = dataset._guides

    def numpy_search(*args):
        return (False, *original(*args)[1:])

    monkeypatch.setattr(dataset, "_guides", numpy_search)
    for algorithm, problem, kw in (CASES[1], CASES[4], CASES[6], CASES[8]):
        py, comp = _both(algorithm, problem, **kw)
        assert _mismatches(py, comp) == []


# ------------------------------------------------------------------------ make_dataset's engine
DRAWS = [
    ("multiscale-bandit", {"coverage": 0.25, "other": "adversarial", "kind": "samples"}),
    ("random:S=5,A=3,H=4,seed=3", {"coverage": 0.3}),  # trajectories
    ("random-sparse:S=30,A=3,b=4,H=4", {"coverage": 0.5, "kind": "samples"}),
    ("offline-linear", {"coverage": 0.3, "other": "adversarial"}),
    ("multiscale-bandit:gamma=0.5", {"coverage": 0.9}),  # discounted samples
    ("linear-simplex:S=6,A=3,d=3,H=4", {"coverage": 0.3}),  # P_h, R_h per stage
    ("linear-simplex:S=6,A=3,d=3,H=4", {"coverage": 0.3, "kind": "samples"}),
]
ARRAYS = ("states", "actions", "rewards", "next_states", "stages")


def _same_arrays(a, b) -> bool:
    return all(
        (getattr(a, f) is None and getattr(b, f) is None)
        or (
            np.array_equal(getattr(a, f), getattr(b, f))
            and getattr(a, f).dtype == getattr(b, f).dtype
        )
        for f in ARRAYS
    )


@pytest.mark.parametrize(("problem", "kw"), DRAWS)
def test_make_dataset_compiled_draw_equals_numpys(problem, kw):
    mdp = make(problem)
    a, b = (
        dataset.make_dataset(mdp, 2001, seeds=[0, 4], seed=3, engine=engine, **kw)
        for engine in ("numpy", "compiled")
    )
    assert a.N == b.N and _same_arrays(a, b)


def test_make_dataset_compiled_draw_from_a_distribution_and_its_negative_control(monkeypatch):
    mdp = make("multiscale-bandit:n_gap=20,gap_ratio=0.7,n_mass=0,junk=true")
    mu = covariate_shift_distribution(mdp, 8)
    kw = {"seeds": 3, "data_distribution": mu, "kind": "samples"}
    ref = dataset.make_dataset(mdp, 3000, engine="numpy", **kw)
    assert _same_arrays(ref, dataset.make_dataset(mdp, 3000, engine="compiled", **kw))
    original = dataset._pcg64_offsets
    monkeypatch.setattr(
        dataset, "_pcg64_offsets", lambda rngs, off: original(rngs, [off[0], off[2], off[1]])
    )
    assert not _same_arrays(ref, dataset.make_dataset(mdp, 3000, engine="compiled", **kw))


def test_make_dataset_engine_errors():
    mdp = make("multiscale-bandit:gamma=0.5")
    with pytest.raises(dataset.InvalidDatasetError, match="engine must be one of"):
        dataset.make_dataset(mdp, 10, coverage=0.5, engine="fast")
    with pytest.raises(dataset.InvalidDatasetError, match="restart chain"):
        dataset.make_dataset(mdp, 10, coverage=0.5, kind="trajectories", engine="compiled")


def test_the_kernels_pcg64_is_numpys_stream():
    from numba import njit

    from theorylab.kernels.pcg64 import pcg64_random

    @njit
    def draws(st, out):
        for i in range(out.shape[0]):
            out[i] = pcg64_random(st)

    g = np.random.default_rng(2026)
    st = dataset._pcg64_offsets([g], (0,))[0, 0].copy()
    out = np.empty(10_000)
    draws(st, out)
    assert np.array_equal(out, g.random(10_000))
    out2 = np.empty(10)
    draws(st, out2)  # the state advanced exactly as numpy's
    assert np.array_equal(out2, g.random(10))
