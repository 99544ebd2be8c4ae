"""Prompt datasets for the prompt trainer: the shipped arithmetic task and local or hub datasets.

A :class:`PromptDataset` is a list of prompts (text) with an optional reference answer per prompt
(text; what a verifiable reward compares the completion with). :func:`load_prompts` reads a spec:

* ``arithmetic`` / ``arithmetic:n=512,digits=2,ops=+-,seed=0`` -- generated offline: prompts
  ``"12+7="`` with operands of 1..``digits`` digits (uniform in 0..10^digits - 1), answers
  ``"19"``; ``ops`` any of ``+-*`` (subtraction keeps the result >= 0 by ordering the operands);
  ``n`` distinct prompts when that many exist;
* a local file ``*.jsonl`` (one JSON object per line) or ``*.parquet`` (needs pyarrow);
* a folder written by ``datasets.Dataset.save_to_disk`` (``datasets.load_from_disk``; a
  ``DatasetDict`` uses its ``train`` split);
* ``hf-dataset:NAME`` -- ``datasets.load_dataset(NAME, split="train")`` from the hub: the same
  conversion as a saved folder (both give a ``datasets.Dataset``), which the tests exercise with a
  folder since CI has no network.

Columns: ``prompt`` and (optional) ``answer``; other names with ``prompt_key`` / ``answer_key``.
Every problem (a missing file or column, an empty dataset, a non-text prompt) is one line naming
the source and what was expected.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from theorylab.errors import TheorylabError
from theorylab.registry import convert_parameters, parse_spec

# the model of a prompt-dataset run given the token trees' default "tiny" (which has no KV cache,
# which the prompt trainer's sampler uses)
DEFAULT_PROMPT_MODEL = "gpt2-config:n_layer=2,n_embd=64"


class PromptDataError(TheorylabError, ValueError):
    """A prompt dataset that cannot be read or has the wrong columns."""


@dataclass(frozen=True)
class PromptDataset:
    """Prompts (N,) and their reference answers (N,) or None; ``name`` the spec it came from."""

    prompts: tuple[str, ...]
    answers: tuple[str, ...] | None
    name: str

    def __len__(self) -> int:
        return len(self.prompts)

    def subset(self, index) -> PromptDataset:
        idx = [int(i) for i in index]
        answers = None if self.answers is None else tuple(self.answers[i] for i in idx)
        return PromptDataset(tuple(self.prompts[i] for i in idx), answers, self.name)


# --------------------------------------------------------------------------- arithmetic
ARITHMETIC_DEFAULTS = {"n": 512, "digits": 2, "ops": "+", "seed": 0}


def arithmetic_dataset(n: int = 512, digits: int = 2, ops: str = "+", seed: int = 0):
    """``n`` distinct prompts ``"a+b="`` (or all that exist, if fewer) with their answers."""
    if int(n) != n or n < 1:
        raise PromptDataError(f"arithmetic: n must be an integer >= 1, got {n!r}")
    if int(digits) != digits or not 1 <= digits <= 6:
        raise PromptDataError(f"arithmetic: digits must be an integer in 1..6, got {digits!r}")
    if not ops or set(ops) - set("+-*"):
        raise PromptDataError(f"arithmetic: ops must be made of + - *, got {ops!r}")
    ops = "".join(dict.fromkeys(ops))
    top = 10**digits
    total = top * top * len(ops)
    rng = np.random.default_rng(seed)
    codes = rng.permutation(total)[:n] if total <= 4 * 10**6 else rng.choice(total, n, False)
    prompts, answers = [], []
    for c in codes:  # (op, a, b) from one integer code
        op, rest = ops[c // (top * top)], c % (top * top)
        a, b = divmod(int(rest), top)
        if op == "-" and a < b:
            a, b = b, a
        value = {"+": a + b, "-": a - b, "*": a * b}[op]
        prompts.append(f"{a}{op}{b}=")
        answers.append(str(value))
    name = f"arithmetic:n={n},digits={digits},ops={ops},seed={seed}"
    return PromptDataset(tuple(prompts), tuple(answers), name)


# --------------------------------------------------------------------------- files and folders
def _from_records(rows, source: str, prompt_key: str, answer_key: str) -> PromptDataset:
    rows = list(rows)
    if not rows:
        raise PromptDataError(f"prompt dataset {source!r} is empty")
    first = rows[0]
    if prompt_key not in first:
        raise PromptDataError(
            f"prompt dataset {source!r} has no column {prompt_key!r} (columns: "
            f"{', '.join(map(str, first))}); name the prompt column with prompt_key"
        )
    prompts = []
    for i, row in enumerate(rows):
        p = row.get(prompt_key)
        if not isinstance(p, str) or not p:
            raise PromptDataError(
                f"prompt dataset {source!r} row {i}: {prompt_key!r} must be non-empty text, "
                f"got {p!r}"
            )
        prompts.append(p)
    answers = None
    if answer_key in first:
        answers = tuple(str(row.get(answer_key)) for row in rows)
    return PromptDataset(tuple(prompts), answers, source)


def _read_jsonl(path: Path) -> list[dict]:
    rows = []
    with open(path, encoding="utf-8") as fh:
        for i, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                raise PromptDataError(f"{path}: line {i} is not JSON ({exc.msg})") from None
            if not isinstance(row, dict):
                raise PromptDataError(f"{path}: line {i} is not a JSON object")
            rows.append(row)
    return rows


def _datasets():
    try:
        import datasets
    except ModuleNotFoundError:
        raise PromptDataError(
            "a datasets folder or hub dataset needs the datasets package: "
            "pip install 'theorylab[datasets]'"
        ) from None
    return datasets


def _hf_rows(ds) -> list[dict]:
    if hasattr(ds, "keys") and not hasattr(ds, "column_names"):  # a DatasetDict
        if "train" not in ds:
            raise PromptDataError(f"the dataset has splits {list(ds)} and no 'train' split")
        ds = ds["train"]
    return list(ds)


def load_prompts(
    spec: str | PromptDataset, *, prompt_key: str = "prompt", answer_key: str = "answer"
) -> PromptDataset:
    """The dataset of ``spec`` (module docstring)."""
    if isinstance(spec, PromptDataset):
        return spec
    if not isinstance(spec, str) or not spec:
        raise PromptDataError(f"a prompt dataset spec must be non-empty text, got {spec!r}")
    if spec.startswith("hf-dataset:"):
        name = spec[len("hf-dataset:") :]
        ds = _datasets().load_dataset(name, split="train")
        return _from_records(_hf_rows(ds), spec, prompt_key, answer_key)
    path = Path(spec)
    if path.is_dir():
        ds = _datasets().load_from_disk(os.fspath(path))
        return _from_records(_hf_rows(ds), spec, prompt_key, answer_key)
    if path.suffix in (".jsonl", ".parquet"):
        if not path.is_file():
            raise PromptDataError(f"prompt dataset file {spec!r} does not exist")
        if path.suffix == ".jsonl":
            rows = _read_jsonl(path)
        else:
            try:
                import pyarrow.parquet as pq
            except ModuleNotFoundError:
                raise PromptDataError(
                    "a Parquet dataset needs pyarrow: pip install 'theorylab[datasets]'"
                ) from None
            rows = pq.read_table(path).to_pylist()
        return _from_records(rows, spec, prompt_key, answer_key)
    name, raw = parse_spec(spec)
    if name == "arithmetic":
        try:
            kw = convert_parameters(name, "prompt dataset", raw, ARITHMETIC_DEFAULTS)
        except ValueError as exc:
            raise PromptDataError(str(exc)) from None
        return arithmetic_dataset(**kw)
    raise PromptDataError(
        f"unknown prompt dataset {spec!r}; expected arithmetic[:n=..,digits=..,ops=..,seed=..], "
        "a .jsonl or .parquet file, a datasets folder (save_to_disk) or hf-dataset:NAME"
    )


def is_prompt_spec(spec) -> bool:
    """Whether ``spec`` names a prompt dataset (not a token-tree task): used by the CLI and the
    transformer runner to pick the trainer."""
    if isinstance(spec, PromptDataset):
        return True
    if not isinstance(spec, str):
        return False
    if spec.startswith("hf-dataset:") or spec.split(":", 1)[0] == "arithmetic":
        return True
    return spec.endswith((".jsonl", ".parquet")) or os.path.isdir(spec)
