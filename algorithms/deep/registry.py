"""The loss registry: ``make_loss("grpo:beta=0.04,clip_eps=0.2")`` returns the loss function with
its hyper-parameters bound (verl's ``core_algos`` registers losses the same way).

A loss's hyper-parameters are its keyword-only arguments; its tensors are positional. Importing
this module does not import torch; :func:`load_losses` does, with a clear error without it.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any

from theorylab.registry import Registry, _convert, parse_spec

LOSSES = Registry("loss")
register_loss = LOSSES.register

LOSS_MODULES = (
    "theorylab.algorithms.deep.preference_losses",
    "theorylab.algorithms.deep.policy_gradient_losses",
    "theorylab.algorithms.deep.offline_losses",
    "theorylab.algorithms.deep.regression_losses",
    "theorylab.algorithms.deep.exo",
    "theorylab.algorithms.deep.pacs",
    "theorylab.algorithms.deep.c_rlft",
    "theorylab.algorithms.deep.p3o",
    "theorylab.algorithms.deep.kl",
    "theorylab.algorithms.deep.laser",
    "theorylab.algorithms.deep.rover_loss",
)


def load_losses() -> None:
    """Import the loss modules (they register themselves); they need torch."""
    import importlib

    try:
        import torch  # noqa: F401
    except ModuleNotFoundError:
        raise ModuleNotFoundError(
            "the deep losses need torch: pip install 'torch==2.13.0' (or the [torch] extra)"
        ) from None
    for name in LOSS_MODULES:
        importlib.import_module(name)


def list_losses() -> list[str]:
    load_losses()
    return LOSSES.names()


def loss_parameters(name: str) -> dict[str, Any]:
    """The hyper-parameters of a loss (its keyword-only arguments) and their defaults."""
    load_losses()
    sig = inspect.signature(LOSSES.get(name))
    return {k: p.default for k, p in sig.parameters.items() if p.kind == p.KEYWORD_ONLY}


def make_loss(spec: str, **overrides) -> Callable:
    """The loss named in ``spec`` ("name:k=v,...") with its hyper-parameters bound."""
    load_losses()
    name, raw = parse_spec(spec)
    fn = LOSSES.get(name)
    hyper = loss_parameters(name)
    kwargs: dict[str, Any] = {}
    for key, text in raw.items():
        if key not in hyper:
            raise ValueError(
                f"loss {name!r} has no hyper-parameter {key!r}; "
                f"hyper-parameters: {', '.join(f'{k}={v!r}' for k, v in hyper.items())}"
            )
        kwargs[key] = _convert(text, hyper[key], key, name)
    for key in overrides:
        if key not in hyper:
            raise ValueError(f"loss {name!r} has no hyper-parameter {key!r}")
    kwargs.update(overrides)
    return functools.partial(fn, **kwargs)
