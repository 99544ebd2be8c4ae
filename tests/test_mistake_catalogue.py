"""A catalogue of user mistakes (issue 25): each gets, before any work is done, a one-line error
naming the flag or key, the value and what was expected; never a traceback, never silence.

Every entry is ``(id, argv or call, the words the error must contain, before)``. ``before`` says
what the code did before issue 25 (checked by running this catalogue against the commit before
it): "traceback" (a raw exception), "late" (the error came after work began: after the run,
or once its loop or dataset had started), "silent" (no error: the input was ignored or
accepted), "vague" (an error that did not name the culprit), or "ok" (already right; kept so
that it stays right). The CLI cases run in process
(``theorylab.cli.main``); a few run as subprocesses to prove the end-to-end exit code and
stderr. Running episodes or sweep cells during a case fails it: a mistake must be caught first.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

import theorylab as tl
from theorylab.cli import main

GRID_OK = 'episodes = 5\nseeds = 1\nalgorithms = ["psrl"]\nmdps = ["riverswim:S=3,H=3"]\n'


def _grid(**changes: str) -> str:
    """GRID_OK with some lines replaced (key -> the line's new right-hand side)."""
    lines = []
    for line in GRID_OK.splitlines():
        key = line.split("=")[0].strip()
        lines.append(f"{key} = {changes.pop(key)}" if key in changes else line)
    lines += [f"{k} = {v}" for k, v in changes.items() if not k.startswith("[")]
    lines += [f"{k}\n{v}" for k, v in changes.items() if k.startswith("[")]
    return "\n".join(lines) + "\n"


RUN = ["run", "psrl", "riverswim:S=3,H=3", "-K", "5", "-B", "2", "--no-progress"]
OFF = ["run", "vi-lcb", "random:S=4,A=2,gamma=0.9", "-N", "200", "-B", "2", "--no-progress"]

# (id, argv with {file} = an existing file, {dir} = an existing folder, {grid} = a grid file
#  holding the entry's grid text; words the error line must contain; before issue 25)
CLI_CASES = [
    # ---------------------------------------------------------------- run: the issue's list
    (
        "param-not-a-number",
        [*RUN[:-1], "-p", "alpha0=abc"],
        ["alpha0='abc'", "number"],
        "traceback",
    ),
    (
        "ucbvi-delta-abc",
        ["run", "ucbvi-bernstein", "riverswim:S=3,H=3", "-K", "5", "-p", "delta=abc"],
        ["delta='abc'", "expected a number"],
        "traceback",
    ),
    ("seed-negative", [*RUN, "--seed", "-1"], ["--seed", "-1", ">= 0"], "vague"),
    (
        "save-is-a-file",
        [*RUN, "--save", "{file}"],
        ["--save", "is a file", "directory"],
        "late",
    ),
    ("json-is-a-folder", [*RUN, "--json", "{dir}"], ["--json", "is a directory"], "late"),
    (
        "checkpoint-is-a-file",
        [
            "run",
            "ucbvi-hoeffding",
            "riverswim:S=3,H=3",
            "-K",
            "5",
            "--loop",
            "compiled",
            "--checkpoint",
            "{file}",
            "--no-progress",
        ],
        ["--checkpoint", "is a file"],
        "traceback",
    ),
    (
        "gamma-with-finite-horizon-algorithm",
        ["run", "ucbvi-bernstein", "random:S=4,A=2,gamma=0.9", "-K", "5", "--no-progress"],
        ["ucbvi-bernstein", "gamma=0.9", "drop gamma"],
        "silent",
    ),
    # ---------------------------------------------------------------- run: one per flag
    ("episodes-zero", [*RUN[:3], "-K", "0"], ["episodes", "0"], "ok"),
    ("episodes-not-int", [*RUN[:3], "-K", "many"], ["--episodes", "many"], "ok"),
    ("seeds-zero", [*RUN[:5], "-B", "0"], ["seeds", "0"], "ok"),
    ("seed-not-int", [*RUN, "--seed", "x"], ["--seed", "'x'"], "ok"),
    ("param-unknown", [*RUN, "-p", "nosuch=1"], ["nosuch", "parameters"], "ok"),
    ("param-no-equals", [*RUN, "-p", "delta"], ["--param", "key=value"], "ok"),
    ("csv-is-a-folder", [*RUN, "--csv", "{dir}"], ["--csv", "is a directory"], "late"),
    (
        "parquet-is-a-folder",
        [*RUN, "--parquet", "{dir}"],
        ["--parquet", "is a directory"],
        "late",
    ),
    ("plot-under-a-file", [*RUN, "--plot", "{file}/x.png"], ["--plot", "cannot write"], "vague"),
    ("resolution-unknown", [*RUN, "--resolution", "half"], ["--resolution", "half"], "ok"),
    ("backend-unknown", [*RUN, "--backend", "cupy"], ["--backend", "cupy"], "ok"),
    ("device-unknown", [*RUN, "--device", "tpu"], ["device", "tpu"], "ok"),
    ("loop-without-kernel", [*RUN, "--loop", "compiled"], ["PSRL", "no whole-run kernel"], "ok"),
    (
        "segment-zero",
        [
            "run",
            "ucbvi-hoeffding",
            "riverswim:S=3,H=3",
            "-K",
            "5",
            "--loop",
            "compiled",
            "--segment",
            "0",
            "--no-progress",
        ],
        ["segment", "0"],
        "late",
    ),
    ("coverage-out-of-range", [*OFF, "--coverage", "2"], ["coverage", "[0, 1]", "2.0"], "late"),
    ("dataset-size-zero", [*OFF[:3], "-N", "0"], ["dataset_size", "0"], "ok"),
    ("budget-of-another-kind", [*RUN, "-N", "100"], ["dataset_size", "offline"], "ok"),
    ("algorithm-unknown", ["run", "nosuch", "riverswim:S=3,H=3", "-K", "5"], ["'nosuch'"], "ok"),
    ("steps-zero", ["run", "dpo-twin", "tokentree:V=4,L=3", "--steps", "0"], ["steps", "0"], "ok"),
    (
        "batch-zero",
        [
            "run",
            "dpo-twin",
            "tokentree:V=4,L=3",
            "--steps",
            "5",
            "--mode",
            "sampled",
            "--batch",
            "0",
            "--no-progress",
        ],
        ["batch", "0"],
        "vague",
    ),
    (
        "mode-unknown",
        ["run", "dpo-twin", "tokentree:V=4,L=3", "--mode", "mc"],
        ["--mode", "mc"],
        "ok",
    ),
    (
        "tau-out-of-range",
        ["run", "cvar-ucbvi", "riverswim:S=3,H=3", "-K", "5", "--tau", "2"],
        ["tau", "(0, 1]", "2.0"],
        "ok",
    ),
    (
        "alpha-out-of-range",
        ["run", "icvar-rm", "riverswim:S=3,H=3", "-K", "5", "--alpha", "-1"],
        ["alpha", "[0, 1]", "-1.0"],
        "ok",
    ),
    ("tau-for-another-algorithm", [*RUN, "--tau", "0.5"], ["psrl", "'tau'"], "ok"),
    (
        "expert-size-for-another-kind",
        [*RUN, "--expert-size", "5"],
        ["'expert_size'", "imitation"],
        "ok",
    ),
    (
        "ranking-size-for-another-kind",
        ["run", "dueling-rl", "comparison-bandit", "-K", "5", "--ranking-size", "1"],
        ["'ranking_size'"],
        "ok",
    ),
    (
        "iterations-zero",
        ["run", "hedge-selfplay", "cyclic-preferences", "--iterations", "0"],
        ["iterations", "0"],
        "ok",
    ),
    ("other-unknown", [*OFF, "--other", "hostile"], ["--other", "hostile"], "ok"),
    ("sampling-unknown", [*OFF, "--sampling", "episodes"], ["--sampling", "episodes"], "ok"),
    ("feedback-unknown", [*RUN, "--feedback", "likert"], ["--feedback", "likert"], "ok"),
    ("design-unknown", [*RUN, "--design", "optimal"], ["--design", "optimal"], "ok"),
    (
        "target-unknown",
        ["run", "dualdice", "random:S=4,A=2,gamma=0.9", "-N", "100", "--target", "nosuch"],
        ["--target", "nosuch"],
        "ok",
    ),
    # ---------------------------------------------------------------- spec keys
    ("family-unknown", ["run", "psrl", "nosuch-mdp", "-K", "5"], ["'nosuch-mdp'"], "ok"),
    ("spec-key-unknown", ["run", "psrl", "riverswim:S=3,foo=1", "-K", "5"], ["'foo'"], "ok"),
    (
        "spec-key-wrong-type",
        ["run", "psrl", "riverswim:S=x", "-K", "5"],
        ["S='x'", "integer"],
        "ok",
    ),
    ("spec-key-out-of-range", ["run", "psrl", "riverswim:S=1", "-K", "5"], ["S=1", "S >= 2"], "ok"),
    ("spec-not-key-value", ["run", "psrl", "riverswim:S", "-K", "5"], ["'S'", "key=value"], "ok"),
    ("spec-gamma-out-of-range", ["solve", "random:S=4,gamma=1.5"], ["gamma", "1.5"], "ok"),
    # ---------------------------------------------------------------- solve
    (
        "riverswim-too-large",
        ["solve", "riverswim:S=100000000,H=10"],
        ["riverswim", "S=100000000", "142 PiB", "limit"],
        "traceback",
    ),
    ("chain-too-large", ["solve", "chain:S=100000"], ["chain", "S=100000", "GiB"], "traceback"),
    ("deepsea-too-large", ["solve", "deepsea:N=1000"], ["deepsea", "N=1000", "TiB"], "traceback"),
    (
        "gridworld-too-large",
        ["solve", "gridworld:rows=1000,cols=1000"],
        ["gridworld", "rows=1000,cols=1000"],
        "traceback",
    ),
    (
        "tempting-arms-too-large",
        ["solve", "tempting-arms:K=1000000000"],
        ["tempting-arms", "K=1000000000"],
        "traceback",
    ),
    ("random-too-large", ["solve", "random:S=100000"], ["random", "GiB"], "ok"),
    (
        "backward-induction-with-gamma",
        ["solve", "riverswim:S=6,gamma=0.9", "--method", "backward_induction"],
        ["gamma=0.9", "ignore"],
        "silent",
    ),
    (
        "solve-tol-negative",
        ["solve", "riverswim:S=3,H=3", "--gamma", "0.9", "--tol", "-1"],
        ["--tol", "-1"],
        "ok",
    ),
    (
        "solve-method-unknown",
        ["solve", "riverswim:S=3,H=3", "--method", "newton"],
        ["--method", "newton"],
        "ok",
    ),
    ("solve-not-an-mdp", ["solve", "comparison-bandit"], ["not an MDP"], "ok"),
    (
        "solve-gamma-out-of-range",
        ["solve", "riverswim:S=3,H=3", "--gamma", "1.5"],
        ["gamma", "[0, 1)", "1.5"],
        "ok",
    ),
    (
        "solve-stopping-unknown",
        ["solve", "riverswim:S=3,H=3", "--gamma", "0.9", "--stopping", "l2"],
        ["--stopping", "l2"],
        "ok",
    ),
    (
        "solve-cvar-out-of-range",
        ["solve", "riverswim:S=3,H=3", "--cvar", "2"],
        ["tau", "2.0"],
        "ok",
    ),
    (
        "solve-dual-unknown",
        ["solve", "riverswim:S=3,gamma=0.9", "--dual", "js", "--alpha", "0.1"],
        ["--dual", "js"],
        "ok",
    ),
    (
        "solve-dual-alpha-negative",
        ["solve", "riverswim:S=3,gamma=0.9", "--dual", "kl", "--alpha", "-1"],
        ["alpha", "-1.0"],
        "ok",
    ),
    (
        "solve-dual-coverage",
        ["solve", "riverswim:S=3,gamma=0.9", "--dual", "kl", "--alpha", "0.1", "--coverage", "2"],
        ["coverage", "2.0"],
        "ok",
    ),
    (
        "solve-dual-method-unknown",
        [
            "solve",
            "riverswim:S=3,gamma=0.9",
            "--dual",
            "kl",
            "--alpha",
            "0.1",
            "--dual-method",
            "bfgs",
        ],
        ["--dual-method", "bfgs"],
        "ok",
    ),
    # ---------------------------------------------------------------- validate, train, list, demo
    ("validate-unknown", ["validate", "nosuch"], ["'nosuch'"], "ok"),
    (
        "validate-scale-unknown",
        ["validate", "ucbvi-hoeffding-riverswim", "--scale", "huge"],
        ["--scale", "huge"],
        "ok",
    ),
    (
        "validate-json-is-a-folder",
        ["validate", "ucbvi-hoeffding-riverswim", "--json", "{dir}"],
        ["--json", "is a directory"],
        "late",
    ),
    (
        "validate-plot-is-a-folder",
        ["validate", "ucbvi-hoeffding-riverswim", "--plot", "{dir}"],
        ["--plot", "is a directory"],
        "vague",
    ),
    (
        "train-steps-zero",
        ["train", "grpo", "tokentree:V=4,L=3", "--steps", "0"],
        ["steps", "0"],
        "ok",
    ),
    (
        "train-lr-negative",
        ["train", "grpo", "tokentree:V=4,L=3", "--lr", "-1"],
        ["lr", "-1.0"],
        "ok",
    ),
    ("train-loss-unknown", ["train", "nosuch", "tokentree:V=4,L=3"], ["'nosuch'"], "ok"),
    (
        "train-seed-negative",
        ["train", "grpo", "tokentree:V=4,L=3", "--seed", "-1"],
        ["--seed", "-1"],
        "vague",
    ),
    (
        "train-json-is-a-folder",
        ["train", "grpo", "tokentree:V=4,L=3", "--json", "{dir}"],
        ["--json", "is a directory"],
        "late",
    ),
    # the scaling flags of theorylab train (issue 32): all new, checked before any work
    (
        "train-micro-batches-zero",
        ["train", "grpo", "tokentree:V=4,L=3", "--micro-batches", "0"],
        ["--micro-batches", "0"],
        "ok",
    ),
    (
        "train-fp16-on-cpu",
        ["train", "grpo", "tokentree:V=4,L=3", "--precision", "fp16"],
        ["fp16", "CUDA"],
        "ok",
    ),
    (
        "train-stop-after-without-checkpoint",
        ["train", "grpo", "tokentree:V=4,L=3", "--stop-after", "3"],
        ["stop_after", "checkpoint"],
        "ok",
    ),
    (
        "train-warmup-longer-than-the-run",
        ["train", "grpo", "tokentree:V=4,L=3", "--steps", "5", "--warmup-steps", "9"],
        ["warmup_steps", "9"],
        "ok",
    ),
    (
        "train-checkpoint-is-a-file",
        ["train", "grpo", "tokentree:V=4,L=3", "--checkpoint", "{file}"],
        ["--checkpoint", "is a file"],
        "ok",
    ),
    (
        "train-prompt-flag-on-a-token-tree",
        ["train", "grpo", "tokentree:V=4,L=3", "--reward", "exact-match"],
        ["--reward", "prompt datasets"],
        "ok",
    ),
    (
        "train-arithmetic-key-unknown",
        ["train", "grpo", "--task", "arithmetic:size=3"],
        ["arithmetic", "'size'"],
        "ok",
    ),
    ("list-unknown", ["list", "everything"], ["everything"], "ok"),
    ("demo-episodes-zero", ["demo", "--episodes", "0"], ["--episodes", "0"], "ok"),
    # ---------------------------------------------------------------- sweep flags
    (
        "store-is-a-file",
        ["sweep", "{grid}", "--store", "{file}"],
        ["--store", "is a file"],
        "traceback",
    ),
    (
        "workers-zero",
        ["sweep", "{grid}", "--store", "{dir}/s", "--workers", "0"],
        ["--workers", "0", ">= 1"],
        "silent",
    ),
    (
        "export-suffix",
        ["sweep", "{grid}", "--store", "{dir}/s", "--export", "{dir}/x.txt"],
        [".txt"],
        "ok",
    ),
    (
        "address-without-ray",
        ["sweep", "{grid}", "--store", "{dir}/s", "--address", "auto"],
        ["--address"],
        "ok",
    ),
    (
        "executor-unknown",
        ["sweep", "{grid}", "--store", "{dir}/s", "--executor", "slurm"],
        ["--executor", "slurm"],
        "ok",
    ),
    (
        "sweep-resolution-unknown",
        ["sweep", "{grid}", "--store", "{dir}/s", "--resolution", "x"],
        ["--resolution", "x"],
        "ok",
    ),
    (
        "grid-file-missing",
        ["sweep", "{dir}/none.toml", "--store", "{dir}/s"],
        ["none.toml", "does not exist"],
        "ok",
    ),
]

# grid keys: (id, grid text, words, before); each runs ``sweep GRID --store DIR``
GRID_CASES = [
    ("grid-episodes-not-a-number", _grid(episodes='"many"'), ["episodes", "'many'"], "vague"),
    ("grid-episodes-zero", _grid(episodes="0"), ["episodes", "0"], "ok"),
    ("grid-algorithm-unknown", _grid(algorithms='["psrl", "nosuch"]'), ["'nosuch'"], "silent"),
    ("grid-param-unknown", _grid(**{"[params]": "delta = [0.1]"}), ["psrl", "'delta'"], "silent"),
    (
        "grid-param-wrong-type",
        _grid(algorithms='["ucbvi-bernstein"]', **{"[params]": 'delta = ["0.1"]'}),
        ["delta='0.1'", "number"],
        "silent",
    ),
    (
        "grid-param-not-a-list",
        _grid(**{"[params]": "alpha0 = 1.0"}),
        ["params.alpha0", "list"],
        "ok",
    ),
    ("grid-mdp-key-unknown", _grid(mdps='["riverswim:S=3,foo=1"]'), ["'foo'"], "silent"),
    ("grid-mdp-family-unknown", _grid(mdps='["nosuch-mdp"]'), ["'nosuch-mdp'"], "silent"),
    ("grid-mdp-key-wrong-type", _grid(mdps='["riverswim:S=x"]'), ["S='x'"], "silent"),
    ("grid-mdps-not-a-list", _grid(mdps='"riverswim"'), ["mdps", "list"], "ok"),
    ("grid-seeds-zero", _grid(seeds="0"), ["seeds", "0"], "ok"),
    ("grid-seeds-not-a-number", _grid(seeds='"x"'), ["seeds", "'x'"], "vague"),
    ("grid-seed-negative", _grid(seed="-1"), ["seed", "-1"], "silent"),
    (
        "grid-known-rewards-not-bool",
        _grid(known_rewards='"yes"'),
        ["known_rewards", "'yes'"],
        "silent",
    ),
    ("grid-key-unknown", _grid(episode="5"), ["unknown keys", "episode"], "ok"),
    ("grid-not-toml", "episodes = = 5\n", ["not valid TOML"], "ok"),
]


@pytest.fixture
def no_work(monkeypatch):
    """Running episodes, drawing a dataset or running a sweep cell fails the case: the mistake
    must be reported first (checks at the top of a runner, before its loops, are fine)."""
    import theorylab.runners.offline as offline
    import theorylab.runners.online as online
    import theorylab.sweeps as sweeps

    def forbid(*args, **kwargs):
        raise AssertionError("work began before the mistake was reported")

    for module, name in [
        (online, "_run_python"),
        (online, "_run_compiled"),
        (offline, "make_dataset"),
        (offline, "_run_compiled"),
        (sweeps, "_run_cell"),
    ]:
        monkeypatch.setattr(module, name, forbid)


def _cli(argv: list[str], capsys) -> tuple[int, str]:
    try:
        code = main(argv)
    except SystemExit as stop:  # argparse: exit 2 after its usage line
        code = stop.code
    return code, capsys.readouterr().err


def _check_cli(code: int, err: str, words: list[str]) -> None:
    assert "Traceback" not in err
    assert code == 2, err
    errors = [line for line in err.splitlines() if "error:" in line]
    assert len(errors) == 1, err  # one line says what is wrong
    for word in words:
        assert word in errors[0], f"{word!r} not in {errors[0]!r}"


@pytest.mark.parametrize(("argv", "words"), [pytest.param(a, w, id=i) for i, a, w, _ in CLI_CASES])
def test_cli_mistake(argv, words, tmp_path, capsys, no_work):
    afile = tmp_path / "afile"
    afile.write_text("not a directory\n")
    (tmp_path / "grid.toml").write_text(GRID_OK)
    fill = {"{file}": str(afile), "{dir}": str(tmp_path), "{grid}": str(tmp_path / "grid.toml")}
    for key, value in fill.items():
        argv = [a.replace(key, value) for a in argv]
    code, err = _cli(argv, capsys)
    _check_cli(code, err, words)
    assert afile.read_text() == "not a directory\n"  # nothing was written over it


@pytest.mark.parametrize(("text", "words"), [pytest.param(t, w, id=i) for i, t, w, _ in GRID_CASES])
def test_grid_key_mistake(text, words, tmp_path, capsys, no_work):
    path = tmp_path / "grid.toml"
    path.write_text(text)
    store = tmp_path / "store"
    code, err = _cli(["sweep", str(path), "--store", str(store), "--no-progress"], capsys)
    _check_cli(code, err, [*words, str(path)])  # the grid file is named too
    assert not any(p.is_dir() for p in store.glob("*")), "a cell directory was created"


# ---------------------------------------------------------------- the library (tl.*)
def _river_gamma():
    return tl.make("riverswim:S=4,H=4,gamma=0.9")


def _short_result():
    import numpy as np

    z = np.zeros((2, 3))
    return tl.RegretResult(z, z, z, 1.0, 1.0, {})


LIBRARY_CASES = [
    (
        "run-param-a-string",
        lambda: tl.run("ucbvi-bernstein", "riverswim:S=3,H=3", 5, delta="0.1"),
        ["delta='0.1'", "expected a number"],
        "traceback",
    ),
    ("run-problem-a-number", lambda: tl.run("psrl", 123, 5), ["problem", "123"], "traceback"),
    ("run-problem-none", lambda: tl.run("psrl", None, 5), ["problem", "None"], "traceback"),
    (
        "run-seed-negative",
        lambda: tl.run("psrl", "riverswim:S=3,H=3", 5, seed=-1),
        ["seed", "-1"],
        "vague",
    ),
    (
        "run-seeds-a-string",
        lambda: tl.run("psrl", "riverswim:S=3,H=3", 5, seeds="8"),
        ["seeds", "'8'"],
        "vague",
    ),
    (
        "run-flag-not-bool",
        lambda: tl.run("ucbvi-bernstein", "riverswim:S=3,H=3", 5, known_rewards=True, delta=True),
        ["delta=True", "number"],
        "silent",
    ),
    (
        "run-gamma-ignored",
        lambda: tl.run("ucbvi-bernstein", "random:S=8,A=3,gamma=0.9", 5),
        ["gamma=0.9"],
        "silent",
    ),
    (
        "backward-induction-gamma",
        lambda: tl.backward_induction(_river_gamma()),
        ["gamma=0.9", "ignore"],
        "silent",
    ),
    (
        "sweep-workers-zero",
        lambda: tl.sweep(
            tl.Grid(["psrl"], ["riverswim:S=3,H=3"], 5), directory="unused-dir", max_workers=0
        ),
        ["max_workers", "0"],
        "silent",
    ),
    (
        "grid-unknown-algorithm",
        lambda: tl.sweep(
            tl.Grid(["psrl", "nosuch"], ["riverswim:S=3,H=3"], 5),
            directory="unused-dir",
            executor="serial",
        ),
        ["'nosuch'", "none was run"],
        "silent",
    ),
    (
        "grid-unknown-mdp-key",
        lambda: tl.sweep(
            tl.Grid(["psrl"], ["riverswim:S=3,bar=2"], 5), directory="unused-dir", executor="serial"
        ),
        ["'bar'"],
        "silent",
    ),
    (
        "grid-unknown-parameter",
        lambda: tl.sweep(
            tl.Grid(["psrl"], ["riverswim:S=3,H=3"], 5, params={"c": [1.0]}),
            directory="unused-dir",
            executor="serial",
        ),
        ["psrl", "'c'"],
        "silent",
    ),
    (
        "sweep-store-a-file",
        lambda: tl.sweep(
            tl.Grid(["psrl"], ["riverswim:S=3,H=3"], 5), directory=__file__, executor="serial"
        ),
        ["directory=", "is a file"],
        "traceback",
    ),
    (
        "to-frame-resolution",
        lambda: _short_result().to_frame("coarse"),
        ["resolution", "'coarse'"],
        "silent",
    ),
]


@pytest.mark.parametrize(
    ("call", "words"), [pytest.param(c, w, id=i) for i, c, w, _ in LIBRARY_CASES]
)
def test_library_mistake(call, words, tmp_path, monkeypatch, no_work):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ValueError) as info:
        call()
    message = str(info.value)
    assert "\n" not in message
    for word in words:
        assert word in message, f"{word!r} not in {message!r}"
    assert not (tmp_path / "unused-dir").exists() or not any(
        p.is_dir() for p in (tmp_path / "unused-dir").iterdir()
    )


# ---------------------------------------------------------------- end to end (subprocesses)
@pytest.mark.parametrize(
    "args, words",
    [
        (
            [
                "-m",
                "theorylab.cli",
                "run",
                "psrl",
                "riverswim:S=3,H=3",
                "-K",
                "5",
                "-p",
                "alpha0=abc",
            ],
            ["alpha0='abc'"],
        ),
        (["-m", "theorylab.cli", "solve", "riverswim:S=100000000,H=10"], ["142 PiB"]),
        (
            [
                "-c",
                textwrap.dedent("""
            import sys, theorylab as tl
            try:
                tl.run("psrl", 123, 5)
            except ValueError as exc:
                print(f"error: {exc}", file=sys.stderr); sys.exit(2)
            """),
            ],
            ["got int 123"],
        ),
    ],
    ids=["param-abc", "riverswim-142-PiB", "psrl-123"],
)
def test_end_to_end_no_traceback(args, words):
    proc = subprocess.run(
        [sys.executable, *args], capture_output=True, text=True, timeout=300, check=False
    )
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    for word in words:
        assert word in proc.stderr


def test_catalogue_covers_every_mistake_of_the_issue_and_says_what_it_did_before():
    before = {i: b for i, *_, b in [*CLI_CASES, *GRID_CASES, *LIBRARY_CASES]}
    assert set(before.values()) <= {"traceback", "late", "silent", "vague", "ok"}
    issue = [
        "param-not-a-number", "run-param-a-string", "riverswim-too-large", "store-is-a-file",
        "save-is-a-file", "json-is-a-folder", "checkpoint-is-a-file", "run-problem-a-number",
        "seed-negative", "grid-episodes-not-a-number", "workers-zero", "grid-algorithm-unknown",
        "grid-param-unknown", "grid-mdp-key-unknown", "gamma-with-finite-horizon-algorithm",
        "backward-induction-gamma", "run-gamma-ignored",
    ]  # fmt: skip
    assert all(before[i] != "ok" for i in issue)
