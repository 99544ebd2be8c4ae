"""``theorylab run`` interrupted by SIGINT (a real signal to a real process, as Ctrl-C sends),
then rerun with the same command: the final curves equal the uninterrupted run's, and with
``--save`` the interrupted process stores its finished segments. Also: ``--checkpoint`` on an
algorithm without a whole-run loop checkpoints the Python loop (tests/test_resume_python_loop.py),
``--segment`` without it there, and a run whose curves cannot fit in memory, are refused in one
line before any work."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import numpy as np

from theorylab.cli import main
from theorylab.results import load_result

RUN = ["run", "ucbvi-hoeffding", "random:S=5,A=3,H=5,seed=11", "-K", "400000", "-B", "2",
       "--segment", "10000", "--no-progress", "-p", "bonus_scale=0.05"]  # fmt: skip


# The interrupted run's child pauses 0.2 s after each compiled segment: on a busy machine (the
# suite under pytest-xdist, two workers and this child on two cores) the 400,000 episodes once
# finished before this process saw the third segment's file and sent the signal (exit 0, not 130).
# The pause is in the child only; the resumed and uninterrupted runs are not slowed.
SLOW_SEGMENTS = """
import time
from theorylab.algorithms.online.whole_run import CompiledLoop
run_segment = CompiledLoop._run_segment
def slow(self, *args, **kwargs):
    run_segment(self, *args, **kwargs)
    time.sleep(0.2)
CompiledLoop._run_segment = slow
from theorylab.cli import main
raise SystemExit(main())
"""


def _cli(args: list[str]) -> subprocess.Popen:
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    return subprocess.Popen(
        [sys.executable, "-c", SLOW_SEGMENTS, *args],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
    )  # fmt: skip


def test_sigint_then_rerun_equals_the_uninterrupted_run(tmp_path):
    ckpt, part, full, whole = (tmp_path / n for n in ("ckpt", "part", "full", "whole"))
    proc = _cli([*RUN, "--checkpoint", str(ckpt), "--save", str(part)])
    deadline = time.monotonic() + 600
    while not (ckpt / "segments" / "000002.npz").exists():  # a few segments stored
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=600)
    assert proc.returncode == 130, (out, err)
    assert "interrupted after" in err and "Traceback" not in err
    saved = load_result(part)  # Ctrl-C with --save: the finished segments are kept
    done = saved.episodes
    assert done % 10_000 == 0 and 20_000 <= done < 400_000  # (000002.npz: 2 or 3 segments)
    assert saved.config["interrupted_after"] == done
    assert main([*RUN, "--checkpoint", str(ckpt), "--save", str(full)]) == 0  # resumed
    assert main([*RUN, "--save", str(whole)]) == 0  # never interrupted, no checkpoint
    a, b = load_result(full), load_result(whole)
    for name in ("regret", "returns", "value_estimates"):
        assert np.array_equal(getattr(a, name), getattr(b, name)), name
    assert np.array_equal(saved.regret, b.regret[:, :done])
    assert 400_000 - a.config["episodes_this_run"] >= done  # the resumed run ran only the rest


def test_checkpoint_without_a_whole_run_loop_runs_the_python_loop_resumably(tmp_path, capsys):
    ckpt, a, b = tmp_path / "ck", tmp_path / "a", tmp_path / "b"
    base = ["run", "psrl", "riverswim:S=4,H=4", "-K", "50", "--no-progress"]
    assert main([*base, "--checkpoint", str(ckpt), "--save", str(a)]) == 0
    assert (ckpt / "state.pkl").exists() and (ckpt / "segments" / "000000.npz").exists()
    assert main([*base, "--save", str(b)]) == 0
    assert np.array_equal(load_result(a).regret, load_result(b).regret)
    capsys.readouterr()
    # --segment is the Python loop's checkpoint interval: without --checkpoint it is refused
    code = main(["run", "ucbvi-hoeffding", "riverswim:S=4,H=4", "-K", "50", "--loop", "python",
                 "--segment", "10"])  # fmt: skip
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1 and "Traceback" not in err
    assert "--segment" in err and "--checkpoint" in err


def test_a_run_that_cannot_fit_is_refused_with_the_largest_k(capsys, monkeypatch):
    from theorylab import memory
    from theorylab.runners import online

    monkeypatch.setattr(memory, "available_bytes", lambda: 4 * 2**30)  # 4 GiB available

    def no_work(*a, **kw):
        raise AssertionError("the run started: the agent's environment was built")

    monkeypatch.setattr(online, "env_spec", no_work)  # refused before anything is built
    code = main(["run", "ucbvi-hoeffding", "random:S=5,A=3,H=5,seed=11", "-K", "300000000",
                 "-B", "8"])  # fmt: skip
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1
    assert "107.3 GiB" in err and "4.0 GiB" in err  # the estimate and what is available
    k_max = int(0.8 * 4 * 2**30 // (48 * 8))  # 48 bytes per seed-episode (measured peak)
    assert f"K = {k_max:,}" in err and "--episodes 300000000" in err
    # what fits runs: K = k_max is not refused by the check itself
    memory.check_curves_fit(8, k_max)
