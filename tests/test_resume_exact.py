"""An interrupted whole-run loop, resumed from its checkpoint, equals the uninterrupted run bit
for bit (``docs/long-runs.md``, "Segments, checkpoints, progress").

Every whole-run loop (the tabular kernel's variants, LinUCB, LSVI-UCB, CVaR-UCBVI, ICVaR-HF,
torch) is interrupted at several points: right after a checkpoint write (a ``KeyboardInterrupt``
raised by the progress callback after segment j), in the middle of a segment (the kernel call
advances the learner state, then the interrupt arrives before anything is stored), and between
the segment's curves and the state that follows them. A fresh loop (what a new process builds)
then resumes from the directory, and every curve must equal the uninterrupted run's
(``np.array_equal``). Before the fix UCBVI-CH's incremental plan read bonuses that the
checkpoint did not hold (zeros after a restore) and every seed departed right after the resume
point; UCBVI-BF, the only algorithm the older test resumed, plans in full and hid it.

The Python loop has no checkpoints: its interrupted run keeps the finished episodes, which
must be the uninterrupted run's first episodes (and ``checkpoint=`` is refused there).
"""

from __future__ import annotations

import numpy as np
import pytest

from theorylab import store
from theorylab.algorithms.objectives import objective_of
from theorylab.algorithms.online import whole_run
from theorylab.algorithms.online.whole_run import make_compiled_loop, run_whole
from theorylab.algorithms.registry import get_algorithm, make_agent
from theorylab.experiment import env_spec
from theorylab.mdps import make
from theorylab.seeding import AGENT_STREAM, ENV_STREAM, generators, seed_indices

SEED = 7
EPISODES, SEGMENT = 330, 60  # six segments: 60 x 5 + 30

CASES = [  # (algorithm, MDP spec, params): Q moves below its cap, so the plan changes
    ("ucbvi-hoeffding", "random:S=5,A=3,H=5,seed=11", {"bonus_scale": 0.02}),
    ("ucbvi-hoeffding", "riverswim:S=6,H=12", {"tie_break": "least-visited"}),
    ("ucbvi-bernstein", "random:S=5,A=3,H=5,seed=11", {"bonus_scale": 0.02}),
    ("ucbvi-ajks", "random:S=5,A=3,H=5,seed=11", {"bonus_scale": 0.05}),
    ("greedy", "random-sparse:S=70,A=2,H=6,seed=3", {"unvisited_value": 6.0}),
    ("epsilon-greedy", "random:S=5,A=3,H=5,seed=11", {"epsilon": 1.0, "schedule": "inv-sqrt"}),
    ("optimistic-q-hoeffding", "riverswim:S=6,H=12", {"c": 0.1}),
    ("optimistic-q-bernstein", "riverswim:S=6,H=12", {"c1": 0.2, "c2": 1.0}),
    ("maxwp", "riverswim:S=6,H=12", {}),
    ("icvar-rm", "riverswim:S=6,H=12", {"alpha": 0.3, "bonus_scale": 0.02}),
    ("linucb", "linear-bandit:d=3,A=5,seed=4", {}),
    ("lsvi-ucb", "linear-simplex:S=5,A=3,d=3,H=5,seed=0,rewards=cube", {"c": 0.05}),
    ("cvar-ucbvi", "cvar-safe-risky:H=3", {"tau": 0.25, "bonus_scale": 0.05}),
    # refits of the reward MLE in Python between kernel calls, the comparisons held in growing
    # buffers and the agent's own stream (tie-breaks, labels) in the checkpoint
    ("icvar-hf", "linear-mixture:S=5,A=2,d=3,H=3,seed=0,concentration=0.5", {"alpha": 0.25}),
    # the whole episode compiled (EM, plan, exact static CVaR): mu, the selected candidate and
    # the last plan and its CVaR (carried) in the checkpoint
    ("cvar-ela", "cvar-safe-risky:H=2", {"tau": 0.25, "c": 0.1}),
]


def _loop(algorithm, spec, params, torch=False):
    """A fresh whole-run loop, as ``tl.run`` builds it (a new process would do this)."""
    mdp = make(spec)
    if algorithm == "lsvi-ucb":
        params = {"features": mdp.features, **params}
    if algorithm == "icvar-hf":
        params = {"basis": mdp.basis, **params}
    if algorithm == "cvar-ela":  # cvar-ela-lowrank's class: phi* = P and a swapped RISKY row
        wrong = mdp.dense_P().copy()
        wrong[0, 0] = wrong[0, 0][[0, 1, 3, 2]]
        params = {"feature_class": np.stack([mdp.dense_P(), wrong]), **params}
    idx = seed_indices(3)
    env = env_spec(mdp, known_rewards=True)
    entry = get_algorithm(algorithm)
    if "episodes" in entry.parameters():
        params = {"episodes": EPISODES, **params}
    agent = make_agent(algorithm, env, len(idx), generators(SEED, idx, AGENT_STREAM), **params)
    env_rngs = generators(SEED, idx, ENV_STREAM)
    v_star = objective_of(entry, params).optimal_value(mdp)
    if torch:
        from theorylab.algorithms.online.whole_run_torch import TorchLoop, torch_seed

        return TorchLoop(agent, mdp, v_star, env_rngs, generator_seed=torch_seed(SEED, idx))
    return make_compiled_loop(agent, mdp, v_star, env_rngs)


def _interrupted(make_loop, ckpt, how: str, at: int, monkeypatch) -> None:
    """Run to EPISODES with checkpoints and stop with a KeyboardInterrupt at segment ``at``."""
    ident = {"case": "resume"}
    loop = make_loop()
    if how == "after-write":  # the interrupt lands right after segment `at` was stored

        def progress(done, total, rate):
            if done >= (at + 1) * SEGMENT:
                raise KeyboardInterrupt

        with pytest.raises(KeyboardInterrupt):
            run_whole(loop, EPISODES, segment=SEGMENT, checkpoint=ckpt, run_id=ident,
                      progress=progress)  # fmt: skip
        return
    if how == "mid-segment":  # the kernel advanced the state, nothing of it was stored
        advance = loop.advance
        calls = []

        def advance_then_stop(n):
            calls.append(n)
            out = advance(n)
            if len(calls) > at:
                raise KeyboardInterrupt
            return out

        monkeypatch.setattr(loop, "advance", advance_then_stop)
    elif how == "between-files":  # the segment's curves are stored, its state is not
        save = store.save_arrays
        states = []

        def save_then_stop(path, **arrays):
            if str(path).endswith("state.npz"):
                states.append(path)
                if len(states) > at:
                    raise KeyboardInterrupt
            return save(path, **arrays)

        monkeypatch.setattr(store, "save_arrays", save_then_stop)
    with pytest.raises(KeyboardInterrupt):
        run_whole(loop, EPISODES, segment=SEGMENT, checkpoint=ckpt, run_id=ident)
    monkeypatch.undo()


def _resumed(make_loop, ckpt):
    return run_whole(make_loop(), EPISODES, segment=SEGMENT, checkpoint=ckpt,
                     run_id={"case": "resume"})  # fmt: skip


def _assert_equal_runs(out, whole):
    for name in ("regret", "returns", "estimates"):
        assert np.array_equal(out[name], whole[name], equal_nan=True), name


@pytest.mark.parametrize(("algorithm", "spec", "params"), CASES, ids=[c[0] for c in CASES])
def test_interrupted_and_resumed_equals_uninterrupted(tmp_path, monkeypatch, algorithm, spec,
                                                      params):  # fmt: skip
    def make_loop():
        return _loop(algorithm, spec, params)

    whole = run_whole(make_loop(), EPISODES, segment=SEGMENT)
    assert np.unique(whole["regret"]).size > 1  # the policy changed during the run
    points = [("after-write", 0), ("after-write", 2), ("mid-segment", 3), ("between-files", 1)]
    for i, (how, at) in enumerate(points):
        ckpt = tmp_path / f"{how}-{at}"
        _interrupted(make_loop, ckpt, how, at, monkeypatch)
        _assert_equal_runs(_resumed(make_loop, ckpt), whole)
    # interrupted twice, resumed twice
    ckpt = tmp_path / "twice"
    _interrupted(make_loop, ckpt, "after-write", 1, monkeypatch)
    _interrupted(make_loop, ckpt, "mid-segment", 2, monkeypatch)
    _assert_equal_runs(_resumed(make_loop, ckpt), whole)


@pytest.mark.parametrize("algorithm", ["ucbvi-hoeffding", "lsvi-ucb"])
def test_interrupted_between_the_kernel_calls_of_a_segment(tmp_path, monkeypatch, algorithm):
    # a segment of 60 episodes run in calls of 16: the interrupt lands after two calls of the
    # second segment (its state advanced by 32 episodes, none of them stored)
    spec, params = next((c[1], c[2]) for c in CASES if c[0] == algorithm)

    def make_loop():
        return _loop(algorithm, spec, params)

    whole = run_whole(make_loop(), EPISODES, segment=SEGMENT)
    monkeypatch.setattr(whole_run, "FIRST_CALL", 16)
    monkeypatch.setattr(whole_run, "MIN_CALL", 16)
    monkeypatch.setattr(whole_run, "CALL_SECONDS", 0.0)
    loop = make_loop()
    advance, calls = loop.advance, []

    def advance_then_stop(n):
        calls.append(n)
        out = advance(n)
        if len(calls) == 6:
            raise KeyboardInterrupt
        return out

    monkeypatch.setattr(loop, "advance", advance_then_stop)
    with pytest.raises(whole_run.WholeRunInterrupted) as stop:
        run_whole(loop, EPISODES, segment=SEGMENT, checkpoint=tmp_path, run_id={"case": "resume"})
    assert calls[:6] == [16, 16, 16, 12, 16, 16] and stop.value.done == SEGMENT
    assert loop.episodes_done == SEGMENT + 32  # advanced, not stored
    assert np.array_equal(stop.value.curves["regret"], whole["regret"][:, :SEGMENT])
    monkeypatch.undo()
    _assert_equal_runs(_resumed(make_loop, tmp_path), whole)


def test_a_restored_loop_holds_every_array_of_the_uninterrupted_one(tmp_path):
    # the root cause, checked directly: after a restore every array the kernel carries from
    # one episode to the next (learner state, caches of the incremental plan and evaluation)
    # equals the uninterrupted loop's at the same episode
    from theorylab.store import load_arrays, save_arrays

    for algorithm, spec, params in CASES:
        a = _loop(algorithm, spec, params)
        a.advance(97)
        save_arrays(tmp_path / "state.npz", **a.snapshot())
        b = _loop(algorithm, spec, params)
        b.restore(load_arrays(tmp_path / "state.npz"))
        arrays = [k for k, v in vars(a).items() if isinstance(v, np.ndarray)]
        for key in arrays:
            assert np.array_equal(vars(a)[key], vars(b)[key], equal_nan=True), (algorithm, key)
        for key in a.state:
            assert np.array_equal(a.state[key], b.state[key]), (algorithm, key)
        assert [g.bit_generator.state for g in a.env_rngs] == [
            g.bit_generator.state for g in b.env_rngs
        ]


@pytest.mark.parametrize(
    ("algorithm", "params"),
    [
        ("ucbvi-hoeffding", {"bonus_scale": 0.02}),
        ("optimistic-q-bernstein", {"c1": 0.02, "c2": 0.1}),
    ],
)
def test_torch_loop_interrupted_and_resumed_equals_uninterrupted(tmp_path, monkeypatch,
                                                                 algorithm, params):  # fmt: skip
    pytest.importorskip("torch")

    def make_loop():
        return _loop(algorithm, "random:S=5,A=3,H=5,seed=11", params, torch=True)

    whole = run_whole(make_loop(), EPISODES, segment=SEGMENT)
    assert np.unique(whole["regret"]).size > 1
    for how, at in [("after-write", 1), ("mid-segment", 2), ("between-files", 0)]:
        ckpt = tmp_path / f"{how}-{at}"
        _interrupted(make_loop, ckpt, how, at, monkeypatch)
        _assert_equal_runs(_resumed(make_loop, ckpt), whole)


def test_tl_run_resumes_exactly_and_keeps_the_finished_segments(tmp_path, monkeypatch):
    # through tl.run (the CLI's path): interrupted after segment 2, the RunInterrupted carries
    # the finished segments; the same call resumes and equals the uninterrupted run
    import theorylab as tl
    from theorylab.errors import RunInterrupted

    kw = {"episodes": EPISODES, "seeds": 3, "seed": SEED, "loop": "compiled",
          "segment": SEGMENT, "bonus_scale": 0.02}  # fmt: skip
    spec = "random:S=5,A=3,H=5,seed=11"
    whole = tl.run("ucbvi-hoeffding", spec, **kw)
    advance = whole_run.CompiledLoop.advance
    calls = []

    def advance_then_stop(self, n):
        calls.append(n)
        out = advance(self, n)
        if sum(m > 0 for m in calls) == 3:  # (the runner's first call, n = 0, compiles)
            raise KeyboardInterrupt
        return out

    monkeypatch.setattr(whole_run.CompiledLoop, "advance", advance_then_stop)
    with pytest.raises(RunInterrupted) as stop:
        tl.run("ucbvi-hoeffding", spec, checkpoint=str(tmp_path / "ck"), **kw)
    monkeypatch.undo()
    part = stop.value.result
    assert stop.value.completed == 2 * SEGMENT
    assert part.config["interrupted_after"] == 2 * SEGMENT
    assert np.array_equal(part.regret, whole.regret[:, : 2 * SEGMENT])
    resumed = tl.run("ucbvi-hoeffding", spec, checkpoint=str(tmp_path / "ck"), **kw)
    assert np.array_equal(resumed.regret, whole.regret)
    assert np.array_equal(resumed.value_estimates, whole.value_estimates)


def test_python_loop_interrupt_keeps_the_uninterrupted_prefix(monkeypatch):
    import theorylab as tl
    from theorylab.errors import RunInterrupted

    spec = "random:S=5,A=3,H=5,seed=11"
    whole = tl.run("psrl", spec, episodes=40, seeds=2, seed=SEED)
    from theorylab.runners import online

    policy_values = online.BackendRiskNeutral.policy_values
    calls = []

    def values_then_stop(self, mdp, pi):
        calls.append(1)
        if len(calls) == 25:
            raise KeyboardInterrupt
        return policy_values(self, mdp, pi)

    monkeypatch.setattr(online.BackendRiskNeutral, "policy_values", values_then_stop)
    with pytest.raises(RunInterrupted) as stop:
        tl.run("psrl", spec, episodes=40, seeds=2, seed=SEED)
    part = stop.value.result
    assert stop.value.completed == 24
    assert np.array_equal(part.regret, whole.regret[:, :24])
    assert np.array_equal(part.returns, whole.returns[:, :24])


def _stop_on_second_call(real, how: str):
    """``real`` with a KeyboardInterrupt at its second call: before it runs ("mid-cell": the
    cell is lost) or after it returned ("after-store": the cell is stored)."""
    calls = []

    def wrapped(*a, **kw):
        calls.append(1)
        if how == "after-store":
            out = real(*a, **kw)
            if len(calls) == 2:
                raise KeyboardInterrupt
            return out
        if len(calls) == 2:
            raise KeyboardInterrupt
        return real(*a, **kw)

    return wrapped


def _sweep_arrays(res):
    return {cell.id: res.result(cell).arrays() for cell in res.cells}


def test_sweep_interrupted_anywhere_and_rerun_equals_the_uninterrupted_sweep(tmp_path, monkeypatch):
    # a cell interrupted while it runs, right after a cell was stored, and in the middle of a
    # cell's store (its result.npz written, its result.json not): the rerun computes what is
    # missing and every cell's arrays equal the uninterrupted sweep's
    import theorylab as tl
    from theorylab import sweeps

    grid = tl.Grid(
        ["ucbvi-hoeffding"], ["random:S=4,A=2,H=3,seed=1", "riverswim:S=4,H=4"],
        episodes=60, seeds=2, params={"bonus_scale": [0.05, 1.0]},
    )  # fmt: skip
    whole = sweeps.sweep(grid, directory=tmp_path / "whole", executor="serial", progress=False)
    want = _sweep_arrays(whole)
    assert len(want) >= 2
    for how in ("mid-cell", "after-store"):
        name = "_run_cell" if how == "mid-cell" else "save_result"
        monkeypatch.setattr(sweeps, name, _stop_on_second_call(getattr(sweeps, name), how))
        with pytest.raises(KeyboardInterrupt):
            sweeps.sweep(grid, directory=tmp_path / how, executor="serial", progress=False)
        monkeypatch.undo()
        again = sweeps.sweep(grid, directory=tmp_path / how, executor="serial", progress=False)
        assert again.skipped  # the stored cells were kept, not rerun
        got = _sweep_arrays(again)
        assert got.keys() == want.keys()
        for cid in want:
            for key, arr in want[cid].items():
                assert np.array_equal(got[cid][key], arr, equal_nan=True), (how, cid, key)
    # a cell whose store was cut between its arrays and its metadata is recomputed
    from theorylab import store

    cut = tmp_path / "cut"
    real_json = store.atomic_write_json
    writes = [0]

    def json_then_stop(path, obj, **kw):
        if str(path).endswith("result.json"):
            writes[0] += 1
            if writes[0] == 2:
                raise KeyboardInterrupt
        return real_json(path, obj, **kw)

    monkeypatch.setattr(store, "atomic_write_json", json_then_stop)
    with pytest.raises(KeyboardInterrupt):
        sweeps.sweep(grid, directory=cut, executor="serial", progress=False)
    monkeypatch.undo()
    again = sweeps.sweep(grid, directory=cut, executor="serial", progress=False)
    assert len(again.computed) == len(want) - 1
    got = _sweep_arrays(again)
    for cid in want:
        for key, arr in want[cid].items():
            assert np.array_equal(got[cid][key], arr, equal_nan=True), ("cut", cid, key)
