"""Tokenizers for the prompt trainer: a character tokenizer built from the data, or a saved one.

Both have the same small interface (:class:`CharTokenizer`'s): ``encode(text) -> list[int]``
(no special tokens), ``decode(ids) -> str`` (stops at the first EOS, drops padding),
``eos_token_id``, ``pad_token_id`` and ``vocab_size``.

* ``"char"`` (default): :class:`CharTokenizer` over the characters of the dataset's prompts and
  answers (sorted), plus PAD (id 0) and EOS (id 1). A model built from a config (``gpt2-config``,
  ``llama-config``) gets ``vocab_size`` from it: the tokenizer built from the model config's
  point of view. The shipped arithmetic task needs 14 ids (10 digits, ``+``, ``=``, PAD, EOS).
* a folder written by ``save_pretrained`` or a hub name: ``transformers.AutoTokenizer
  .from_pretrained`` (``local_files_only`` for a folder), wrapped in :class:`HFTokenizer`; a
  tokenizer without a pad token pads with EOS, as TRL does.
"""

from __future__ import annotations

import os

from theorylab.errors import TheorylabError


class TokenizerError(TheorylabError, ValueError):
    """A tokenizer that cannot be built or loaded, or text it cannot encode."""


class CharTokenizer:
    """One token per character of ``alphabet``; PAD = 0, EOS = 1, characters from 2."""

    pad_token_id = 0
    eos_token_id = 1

    def __init__(self, alphabet: str) -> None:
        chars = sorted(set(alphabet))
        if not chars:
            raise TokenizerError("a character tokenizer needs at least one character")
        self.alphabet = "".join(chars)
        self.index = {c: i + 2 for i, c in enumerate(chars)}
        self.vocab_size = len(chars) + 2

    @classmethod
    def for_texts(cls, *texts) -> CharTokenizer:
        return cls("".join("".join(t) for t in texts if t is not None))

    def encode(self, text: str) -> list[int]:
        try:
            return [self.index[c] for c in text]
        except KeyError as exc:
            raise TokenizerError(
                f"character {exc.args[0]!r} of {text!r} is not in the tokenizer's alphabet "
                f"{self.alphabet!r}"
            ) from None

    def decode(self, ids) -> str:
        chars = {i: c for c, i in self.index.items()}
        out = []
        for i in (int(t) for t in ids):
            if i == self.eos_token_id:
                break
            if i != self.pad_token_id:
                out.append(chars.get(i, ""))
        return "".join(out)


class HFTokenizer:
    """A ``transformers`` tokenizer behind :class:`CharTokenizer`'s interface."""

    def __init__(self, tok) -> None:
        if tok.eos_token_id is None:
            raise TokenizerError(
                f"tokenizer {type(tok).__name__} has no EOS token; completions could not end"
            )
        self.tok = tok
        self.eos_token_id = int(tok.eos_token_id)
        pad = tok.pad_token_id
        self.pad_token_id = int(pad) if pad is not None else self.eos_token_id
        self.vocab_size = len(tok)

    def encode(self, text: str) -> list[int]:
        return list(self.tok(text, add_special_tokens=False)["input_ids"])

    def decode(self, ids) -> str:
        ids = [int(t) for t in ids]
        if self.eos_token_id in ids:
            ids = ids[: ids.index(self.eos_token_id)]
        return self.tok.decode(ids, skip_special_tokens=True)


def load_tokenizer(spec: str | None, dataset=None):
    """``"char"``/None: a :class:`CharTokenizer` over ``dataset``; else a saved or hub tokenizer."""
    if spec is None or spec == "char":
        if dataset is None:
            raise TokenizerError("the character tokenizer is built from a dataset; none given")
        return CharTokenizer.for_texts(dataset.prompts, dataset.answers)
    try:
        import transformers
    except ModuleNotFoundError:
        raise TokenizerError(
            "a saved or hub tokenizer needs transformers: pip install 'theorylab[llm]'"
        ) from None
    local = os.path.isdir(spec)
    try:
        tok = transformers.AutoTokenizer.from_pretrained(spec, local_files_only=local)
    except (OSError, ValueError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise TokenizerError(f"tokenizer {spec!r} could not be loaded: {first}") from None
    return HFTokenizer(tok)
