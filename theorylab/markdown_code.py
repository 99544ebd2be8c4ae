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

Console blocks (``console``, ``bash``) are not run here; ``docs/make_figures.py`` runs the
``theorylab`` commands in them that write a figure.
"""

from __future__ import annotations

import contextlib
import doctest
import io
import os
import re
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
