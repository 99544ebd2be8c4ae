"""The Python episode loop (``loop="python"``) with ``checkpoint=``: a run interrupted at any
point (mid-segment, right after a checkpoint write, between a segment's curves and its state)
and resumed with the same directory equals the uninterrupted run bit for bit, on agents whose
state differs (PSRL: posterior counts and a Generator that samples models; UCBVI-Bernstein:
empirical model and bonuses; LSVI-UCB: a growing design matrix). A directory holding a different
run, and an agent that cannot be pickled, are refused in one line before any episode."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

import theorylab as tl
from theorylab.cli import main
from theorylab.errors import RunInterrupted
from theorylab.results import load_result
from theorylab.runners import online, python_checkpoint

SPEC = "random:S=4,A=2,H=3,seed=5"
K, SEGMENT, SEED = 40, 7, 2026
RUNS = [
    ("psrl", {}),
    ("ucbvi-bernstein", {"loop": "python", "bonus_scale": 0.05}),  # small bonuses: the
    ("lsvi-ucb", {"loop": "python", "beta": 0.05}),  # policy moves with the data in 40 episodes
    ("ucbvi-bernstein", {"loop": "python", "bonus_scale": 0.05, "backend": "numba"}),
    pytest.param(
        "ucbvi-bernstein",
        {"loop": "python", "bonus_scale": 0.05, "backend": "torch"},
        marks=pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="no torch"),
    ),  # fmt: skip
]
IDS = ["psrl", "ucbvi-bernstein", "lsvi-ucb", "ucbvi-bernstein-numba", "ucbvi-bernstein-torch"]
NAMES = ("regret", "returns", "value_estimates")


def _run(algorithm: str, options: dict, **kw):
    return tl.run(algorithm, SPEC, episodes=K, seeds=2, seed=SEED, **options, **kw)


def _agent_class(algorithm: str, options: dict) -> type:
    """The class of ``algorithm``'s agent (a 1-episode run's agent, built the same way)."""
    from theorylab.agent import env_spec
    from theorylab.algorithms.registry import get_algorithm
    from theorylab.runners.problems import resolve_mdp
    from theorylab.seeding import generators

    env = env_spec(resolve_mdp(SPEC), known_rewards=True)
    entry = get_algorithm(algorithm)
    kw = {"episodes": K} if "episodes" in entry.parameters() else {}
    return type(entry.factory(env, 1, generators(0, [0], 1), **kw))


def _stop(monkeypatch, algorithm: str, options: dict, how: str, at: int) -> None:
    """Make the next run raise KeyboardInterrupt: ``mid-segment``: in the agent's ``at``-th
    update; ``after-write``: right after the ``at``-th checkpoint write; ``between-writes``:
    after the ``at``-th segment's curves are stored, before its state."""
    calls = []
    if how == "mid-segment":
        cls = _agent_class(algorithm, options)
        update = cls.update

        def update_then_stop(self, traj):
            calls.append(1)
            if len(calls) == at:
                raise KeyboardInterrupt
            return update(self, traj)

        monkeypatch.setattr(cls, "update", update_then_stop)
    elif how == "after-write":
        write = python_checkpoint.PythonCheckpoint.write

        def write_then_stop(self, *a, **kw):
            write(self, *a, **kw)
            calls.append(1)
            if len(calls) == at:
                raise KeyboardInterrupt

        monkeypatch.setattr(python_checkpoint.PythonCheckpoint, "write", write_then_stop)
    else:
        real = python_checkpoint.atomic_write_bytes

        def state_write_stops(path, data):
            if str(path).endswith("state.pkl"):
                calls.append(1)
                if len(calls) == at:
                    raise KeyboardInterrupt
            return real(path, data)

        monkeypatch.setattr(python_checkpoint, "atomic_write_bytes", state_write_stops)


@pytest.mark.parametrize("algorithm, options", RUNS, ids=IDS)
def test_interrupted_and_resumed_equals_uninterrupted(tmp_path, monkeypatch, algorithm, options):
    whole = _run(algorithm, options)  # no checkpoint, never interrupted
    ckpt = str(tmp_path / "ck")
    done = []
    # interrupted four times at different points, each run resuming the one before
    for how, at in [("mid-segment", 3), ("after-write", 1), ("between-writes", 2),
                    ("mid-segment", 9)]:  # fmt: skip
        _stop(monkeypatch, algorithm, options, how, at)
        with pytest.raises(KeyboardInterrupt) as stop:
            _run(algorithm, options, checkpoint=ckpt, segment=SEGMENT)
        monkeypatch.undo()
        if isinstance(stop.value, RunInterrupted):  # the finished episodes come with it
            part = stop.value.result
            done.append(stop.value.completed)
            for name in NAMES:
                got = getattr(part, name)
                assert np.array_equal(got, getattr(whole, name)[:, : got.shape[1]]), name
    assert done == sorted(done) and done[-1] > SEGMENT  # each resume went on from the last
    resumed = _run(algorithm, options, checkpoint=ckpt, segment=SEGMENT)
    for name in NAMES:
        assert np.array_equal(getattr(resumed, name), getattr(whole, name)), name
    assert 0 < resumed.config["episodes_this_run"] < K  # the resumed run ran only the rest
    again = _run(algorithm, options, checkpoint=ckpt, segment=SEGMENT)  # a finished run
    assert again.config["episodes_this_run"] == 0
    for name in NAMES:
        assert np.array_equal(getattr(again, name), getattr(whole, name)), name


def test_uninterrupted_checkpointed_run_equals_the_plain_run(tmp_path):
    for algorithm, options in RUNS[:2]:  # (plain tuples)
        plain = _run(algorithm, options)
        ck = _run(algorithm, options, checkpoint=str(tmp_path / algorithm))  # default segment
        assert ck.config["loop"] == "python"
        for name in NAMES:
            assert np.array_equal(getattr(ck, name), getattr(plain, name)), (algorithm, name)
        assert (tmp_path / algorithm / "segments" / "000000.npz").exists()  # K < 10,000: one


def test_a_checkpoint_of_another_run_is_refused_in_one_line(tmp_path, capsys, monkeypatch):
    ckpt = tmp_path / "ck"
    base = ["run", "psrl", SPEC, "-B", "2", "--no-progress", "--checkpoint", str(ckpt)]
    assert main([*base, "-K", "20", "--seed", "1"]) == 0
    state = (ckpt / "state.pkl").read_bytes()
    capsys.readouterr()

    def no_work(*a, **kw):
        raise AssertionError("an episode ran before the refusal")

    monkeypatch.setattr(online, "_run_python", no_work)
    for extra, key in [(["-K", "20", "--seed", "2"], "seed"), (["-K", "30"], "episodes"),
                       (["-K", "20", "--segment", "5"], "segment")]:  # fmt: skip
        if "--seed" not in extra:
            extra = [*extra, "--seed", "1"]
        assert main([*base, *extra]) == 2, key
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and "Traceback" not in err, err
        assert "holds a different run" in err and f"{key}:" in err and str(ckpt) in err, err
    assert (ckpt / "state.pkl").read_bytes() == state  # left untouched
    with pytest.raises(ValueError, match="'ucbvi-bernstein' here"):  # another algorithm
        tl.run("ucbvi-bernstein", SPEC, episodes=20, seeds=2, seed=1, loop="python",
               checkpoint=str(ckpt))  # fmt: skip


def test_an_agent_that_cannot_be_pickled_is_refused_before_any_episode(tmp_path, monkeypatch):
    cls = _agent_class("psrl", {})
    init = cls.__init__

    def init_with_a_lambda(self, *a, **kw):
        init(self, *a, **kw)
        self.hook = lambda: None  # a lambda does not pickle

    def no_work(*a, **kw):
        raise AssertionError("an episode ran before the refusal")

    monkeypatch.setattr(cls, "__init__", init_with_a_lambda)
    monkeypatch.setattr(online, "_run_python", no_work)
    ckpt = tmp_path / "ck"
    with pytest.raises(ValueError, match="cannot be pickled") as err:
        tl.run("psrl", SPEC, episodes=10, seeds=1, checkpoint=str(ckpt))
    assert len(str(err.value).splitlines()) == 1 and "--checkpoint" in str(err.value)
    assert not ckpt.exists()


def test_ctrl_c_with_save_keeps_the_finished_episodes_of_a_resumed_run(tmp_path, monkeypatch):
    ckpt, part = str(tmp_path / "ck"), tmp_path / "part"
    whole = _run("psrl", {})
    base = ["run", "psrl", SPEC, "-K", str(K), "-B", "2", "--seed", str(SEED), "--no-progress",
            "--checkpoint", ckpt, "--segment", str(SEGMENT)]  # fmt: skip
    _stop(monkeypatch, "psrl", {}, "after-write", 2)  # 14 episodes stored
    assert main(base) == 130
    monkeypatch.undo()
    _stop(monkeypatch, "psrl", {}, "mid-segment", 10)  # resumed at 14, stopped in episode 24
    assert main([*base, "--save", str(part)]) == 130
    monkeypatch.undo()
    saved = load_result(part)
    assert saved.episodes == 23 and saved.config["interrupted_after"] == 23
    for name in NAMES:
        assert np.array_equal(getattr(saved, name), getattr(whole, name)[:, :23]), name


def test_an_array_parameter_enters_the_fingerprint_by_its_bytes(tmp_path):
    low = tl.make("lowrank-simplex:S=5,A=2,d=2,H=3,n_random=2,n_perturbed=1")
    kw = dict(episodes=12, seeds=2, seed=1, c=0.1, checkpoint=str(tmp_path / "ck"), segment=5)
    plain = tl.run("rep-ucb", low, episodes=12, seeds=2, seed=1, c=0.1,
                   feature_class=low.candidates)  # fmt: skip
    ck = tl.run("rep-ucb", low, feature_class=low.candidates, **kw)
    assert np.array_equal(ck.regret, plain.regret) and ck.config["loop"] == "python"
    other = low.candidates.copy()
    other[0, 2, 0] = other[0, 2, 0, ::-1]  # one row's features reversed: still a simplex
    with pytest.raises(ValueError, match="holds a different run .params:"):
        tl.run("rep-ucb", low, feature_class=other, **kw)
