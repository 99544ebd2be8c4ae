"""Top floor: the Python blocks of the documentation, extracted and run, their output checked.

The tutorials and algorithm cards under ``docs/`` are executed by the test suite
(``tests/test_docs_code.py``) and by the figure command (``python docs/make_figures.py``), so the
values they print cannot drift from the code. The conventions a page follows:

* Every fenced block whose info string starts with ``python`` runs, in page order, in one
  namespace per page (a later block sees the names of an earlier one).
* A block written as a doctest (lines starting with ``>>> ``) is checked by :mod:`doctest`.
* Any other block is executed; when the next fenced block on the page is an output block
  (info string ``text title="Output"``), what the Python block printed must match it. Both
  comparisons use doctest's rules with ``ELLIPSIS`` (``...`` matches anything, e.g. a timing)
  and ``NORMALIZE_WHITESPACE``.
* A block that writes a figure writes it under ``docs/figures/`` relative to the working
  directory: the tests run pages in a temporary directory, the figure command in the
  repository root.

Console blocks (``console``, ``bash``, ``sh``) hold shell commands, checked by
:func:`check_command`: every ``theorylab`` command must parse with the CLI's own parser and name
an algorithm, loss, claim and MDP that exist. In a block written with prompts (``$ theorylab
...``) the lines under a command are its standard output (progress lines on standard error are
not shown): the test suite runs that command in the page's working directory and compares its
standard output with them by the same doctest rules. A ``toml``
block whose first line is ``# FILE`` is written to ``FILE`` there first (a grid file, say).
``docs/make_figures.py`` runs the ``theorylab`` commands that write a figure.
"""

from __future__ import annotations

import contextlib
import doctest
import io
import os
import re
import shlex
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

OUTPUT_INFO = re.compile(r'^text\s+title="Output"\s*$')
FENCE = re.compile(r"^(?P<indent> *)(?P<fence>`{3,}|~{3,})(?P<info>.*)$")
FLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE


@dataclass(frozen=True)
class Block:
    """One fenced code block of a markdown page.

    info: the info string (``python``, ``text title="Output"``, ...); line: the 1-based line of
    the opening fence; code: the block's text with the fence indentation removed.
    """

    path: Path
    line: int
    info: str
    code: str

    @property
    def language(self) -> str:
        return self.info.split()[0] if self.info.split() else ""

    @property
    def is_python(self) -> bool:
        return self.language in ("python", "py", "pycon")

    @property
    def is_output(self) -> bool:
        return bool(OUTPUT_INFO.match(self.info))

    @property
    def is_doctest(self) -> bool:
        return any(ln.lstrip().startswith(">>> ") for ln in self.code.splitlines())

    def where(self) -> str:
        return f"{self.path}:{self.line}"


def blocks(path: str | os.PathLike) -> list[Block]:
    """Every fenced code block of the markdown file ``path``, in order."""
    path = Path(path)
    out: list[Block] = []
    lines = path.read_text(encoding="utf-8").splitlines()
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        indent, fence, info = len(m["indent"]), m["fence"], m["info"].strip()
        start = i
        body = []
        i += 1
        while i < len(lines) and not (
            lines[i].strip().startswith(fence) and lines[i].strip().strip(fence[0]) == ""
        ):
            body.append(lines[i][indent:] if lines[i][:indent].strip() == "" else lines[i])
            i += 1
        if i == len(lines):
            raise ValueError(f"{path}:{start + 1}: code block opened with {fence} is never closed")
        out.append(Block(path, start + 1, info, "\n".join(body) + "\n"))
        i += 1
    return out


@dataclass(frozen=True)
class Step:
    """A Python block to run and the output block it must match (None: output not checked)."""

    block: Block
    expected: Block | None


def steps(path: str | os.PathLike) -> list[Step]:
    """The Python blocks of a page paired with the output blocks right after them."""
    all_blocks = blocks(path)
    out = []
    for i, block in enumerate(all_blocks):
        if block.is_output and (i == 0 or not all_blocks[i - 1].is_python):
            raise ValueError(f"{block.where()}: an output block must follow a Python block")
        if not block.is_python:
            continue
        nxt = all_blocks[i + 1] if i + 1 < len(all_blocks) else None
        expected = nxt if nxt is not None and nxt.is_output else None
        if block.is_doctest and expected is not None:
            raise ValueError(f"{block.where()}: a doctest block carries its own output")
        out.append(Step(block, expected))
    return out


class BlockFailed(AssertionError):
    """A documentation block raised, or printed something other than its output block."""


def _check_output(step: Step, got: str) -> None:
    want = step.expected.code if step.expected is not None else None
    if want is None:
        return
    checker = doctest.OutputChecker()
    if not checker.check_output(want, got, FLAGS):
        example = doctest.Example(source="", want=want)
        diff = checker.output_difference(example, got, FLAGS)
        raise BlockFailed(
            f"{step.block.where()}: the block's output does not match the output block at "
            f"line {step.expected.line}:\n{diff}"
        )


def _run_doctest(block: Block, namespace: dict) -> None:
    parser = doctest.DocTestParser()
    test = parser.get_doctest(block.code, namespace, block.where(), str(block.path), block.line)
    report = io.StringIO()
    runner = doctest.DocTestRunner(optionflags=FLAGS)
    runner.run(test, out=report.write, clear_globs=False)
    if runner.failures:
        raise BlockFailed(f"{block.where()}: doctest failed\n{report.getvalue()}")


def run_step(step: Step, namespace: dict) -> str:
    """Run one block in ``namespace``; return what it printed (raises BlockFailed)."""
    block = step.block
    if block.is_doctest:
        _run_doctest(block, namespace)
        return ""
    buffer = io.StringIO()
    code = compile("\n" * (block.line) + block.code, str(block.path), "exec")
    try:
        with contextlib.redirect_stdout(buffer):
            exec(code, namespace)
    except Exception as exc:
        raise BlockFailed(f"{block.where()}: the block raised {type(exc).__name__}: {exc}") from exc
    got = buffer.getvalue()
    _check_output(step, got)
    return got


@contextlib.contextmanager
def working_directory(path: str | os.PathLike) -> Iterator[Path]:
    old = Path.cwd()
    os.chdir(path)
    try:
        yield Path(path)
    finally:
        os.chdir(old)


def run_page(path: str | os.PathLike, cwd: str | os.PathLike | None = None) -> list[str]:
    """Run every Python block of a page in order (in ``cwd``, created with ``docs/figures``);
    return what each printed. Raises BlockFailed at the first block that fails."""
    path = Path(path).resolve()
    page_steps = steps(path)
    namespace: dict = {"__name__": f"docs:{path.stem}"}
    outputs = []
    target = Path(cwd) if cwd is not None else Path.cwd()
    (target / "docs" / "figures").mkdir(parents=True, exist_ok=True)
    with working_directory(target):
        for step in page_steps:
            outputs.append(run_step(step, namespace))
    return outputs


def executed_pages(docs: str | os.PathLike) -> list[Path]:
    """The pages whose code is executed: the tutorials and the algorithm cards."""
    docs = Path(docs)
    return sorted([*docs.glob("tutorials/*.md"), *docs.glob("algorithms/*.md")])


CONSOLE_LANGUAGES = ("console", "bash", "sh", "shell")


@dataclass(frozen=True)
class Command:
    """One shell command of a console block; ``expected``: the output shown under it, if any."""

    block: Block
    line: str
    argv: tuple[str, ...]
    expected: str | None

    def where(self) -> str:
        return f"{self.block.where()}: `{self.line}`"


def commands(path: str | os.PathLike) -> list[Command]:
    """Every command of the page's console blocks, with the output shown under it.

    In a block with prompts, a ``$ `` line is a command and the lines up to the next prompt are
    its output (None when there are none); without prompts every non-blank line that is not a
    comment is a command and no output is shown.
    """
    out: list[Command] = []
    for block in blocks(path):
        if block.language not in CONSOLE_LANGUAGES:
            continue
        lines = block.code.splitlines()
        if any(ln.startswith("$ ") for ln in lines):
            current: list[str] | None = None
            for ln in lines + ["$ "]:
                if ln.startswith("$ "):
                    if current is not None:
                        shown = "\n".join(current[1:]).strip("\n")
                        out.append(_command(block, current[0], shown + "\n" if shown else None))
                    current = [ln[2:].strip()]
                elif current is not None:
                    current.append(ln)
        else:
            for ln in lines:
                if ln.strip() and not ln.lstrip().startswith("#"):
                    out.append(_command(block, ln.strip(), None))
    return [c for c in out if c.line]


def _command(block: Block, line: str, expected: str | None) -> Command:
    return Command(block, line, tuple(shlex.split(line, comments=True)), expected)


def check_command(command: Command) -> None:
    """A ``theorylab`` command parses with the CLI's parser, and the algorithm, loss, claim and
    MDP it names exist (raises BlockFailed naming the page, line and command)."""
    import argparse

    from theorylab.cli import build_parser

    argv = list(command.argv)
    if not argv or argv[0] != "theorylab":
        return
    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err):
            args = build_parser().parse_args(argv[1:])
    except SystemExit as exc:
        raise BlockFailed(
            f"{command.where()}: the CLI does not accept it: {err.getvalue().strip()}"
        ) from exc
    try:
        _check_names(args)
    except (KeyError, ValueError, LookupError) as exc:
        raise BlockFailed(f"{command.where()}: {exc}") from exc
    assert isinstance(args, argparse.Namespace)


def _check_names(args) -> None:
    """The names a parsed command refers to exist (without running anything long)."""
    from theorylab.algorithms.registry import get_algorithm
    from theorylab.mdps import make
    from theorylab.validations import list_validations

    if args.command == "run":
        get_algorithm(args.algorithm)
    if args.command == "train":
        from theorylab.algorithms.deep.registry import make_loss

        make_loss(args.loss)
    if args.command == "validate" and args.name is not None and args.name not in list_validations():
        raise LookupError(f"no claim named {args.name!r} (theorylab list validations)")
    spec = getattr(args, "mdp", None) or getattr(args, "task", None)
    spec = spec or getattr(args, "task_flag", None)
    # a file (``my_mdp.npz``, written by TabularMDP.save on the page) is read when run, not here
    if args.command in ("run", "solve", "train") and spec is not None:
        from theorylab.algorithms.deep.prompt_data import is_prompt_spec, load_prompts

        if args.command == "train" and is_prompt_spec(spec):
            if spec.startswith("arithmetic"):
                load_prompts(spec)  # the generated task's parameters exist
        elif not spec.lower().endswith(".npz"):
            make(spec)


def run_command(command: Command, cwd: str | os.PathLike) -> str:
    """Run a ``theorylab`` command in-process in ``cwd``; compare its standard output with the
    output shown under it (raises BlockFailed); return what it printed."""
    from theorylab.cli import main

    buffer = io.StringIO()
    with working_directory(cwd), contextlib.redirect_stdout(buffer):
        with contextlib.redirect_stderr(io.StringIO()):
            try:
                code = main(list(command.argv[1:]))
            except SystemExit as exc:
                code = exc.code
    got = buffer.getvalue()
    if code not in (0, None):
        raise BlockFailed(f"{command.where()}: exited with {code}:\n{got}")
    if command.expected is not None:
        checker = doctest.OutputChecker()
        if not checker.check_output(command.expected, got, FLAGS):
            diff = checker.output_difference(doctest.Example("", command.expected), got, FLAGS)
            raise BlockFailed(f"{command.where()}: its output does not match the page:\n{diff}")
    return got


def write_named_files(path: str | os.PathLike, cwd: str | os.PathLike) -> list[Path]:
    """Write every ``toml`` block of the page whose first line is ``# FILE`` to ``cwd/FILE``."""
    written = []
    for block in blocks(path):
        first = block.code.splitlines()[0] if block.code.strip() else ""
        if block.language == "toml" and re.fullmatch(r"#\s*[\w.-]+\.toml\s*", first):
            target = Path(cwd) / first.lstrip("#").strip()
            target.write_text(block.code, encoding="utf-8")
            written.append(target)
    return written
