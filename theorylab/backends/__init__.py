"""Backends: one interface for the hot kernels, three implementations (ground floor).

    from theorylab.backends import get_backend
    bk = get_backend("numba")                 # or "numpy", "torch", "auto"
    bk = get_backend("auto", device="cuda")   # torch on the GPU
    Q = bk.to_numpy(bk.bellman(bk.model(mdp), V))   # (B, S, A) = R + P V for V (B, S)

* ``numpy``: the readable reference (numpy + scipy, float64); the default of every algorithm,
  because its results are the library's reference numbers, bit for bit.
* ``numba``: compiled, parallel CPU kernels; equal to numpy bit for bit on sparse models and to
  round-off on dense ones (see :mod:`theorylab.backends.base`).
* ``torch``: CPU or CUDA tensors (optional dependency ``theorylab[torch]``).

``get_backend("auto", device)`` picks numba on the CPU and torch on a CUDA device. Instances are
cached per (name, device, dtype). Importing this package imports neither numba nor torch; a
backend's module loads when it is first asked for.
"""

from __future__ import annotations

import importlib.util

import numpy as np

from theorylab.backends.base import Backend, BackendUnavailableError
from theorylab.backends.model import TransitionModel, transition_model

BACKENDS = ("numpy", "numba", "torch")

_INSTANCES: dict[tuple[str, str, str], Backend] = {}


def _normalise_device(device) -> str:
    device = str(device).strip().lower()
    if device in ("gpu", "cuda"):
        return "cuda"
    if device != "cpu" and not device.startswith("cuda"):
        raise ValueError(f"device must be 'cpu' or 'cuda[:n]', got {device!r}")
    return device


def get_backend(name: str | Backend = "auto", device: str = "cpu", dtype="float64") -> Backend:
    """The backend called ``name`` on ``device`` computing in ``dtype`` (cached).

    name: "numpy", "numba", "torch", "auto" (numba on the CPU, torch on CUDA), or a
        :class:`Backend` instance (returned as it is).
    device: "cpu" or "cuda" / "cuda:n" (torch only).
    dtype: "float64" (default, exact regret) or "float32" (numba and torch; see
        :mod:`theorylab.backends.base` for the error it costs).
    Raises :class:`BackendUnavailableError` when the backend cannot run here (torch not
    installed, no CUDA device, float32 on numpy), ``ValueError`` for an unknown name.
    """
    if isinstance(name, Backend):
        return name
    key_name = str(name).strip().lower()
    dev = _normalise_device(device)
    if key_name == "auto":
        key_name = "torch" if dev.startswith("cuda") else "numba"
    if key_name not in BACKENDS:
        raise ValueError(f"unknown backend {name!r}; available: auto, {', '.join(BACKENDS)}")
    dt = np.dtype(dtype).name
    key = (key_name, dev, dt)
    if key not in _INSTANCES:
        if key_name == "numpy":
            from theorylab.backends.numpy_backend import NumpyBackend as cls
        elif key_name == "numba":
            from theorylab.backends.numba_backend import NumbaBackend as cls
        else:
            from theorylab.backends.torch_backend import TorchBackend as cls
        _INSTANCES[key] = cls(dev, dt)
    return _INSTANCES[key]


def available_backends(device: str = "cpu") -> list[str]:
    """Names of the backends that can run on ``device`` here (without constructing the ones
    whose package is missing)."""
    out = []
    for name in BACKENDS:
        if name != "numpy" and importlib.util.find_spec(name) is None:
            continue
        try:
            get_backend(name, device)
        except BackendUnavailableError:
            continue
        out.append(name)
    return out


__all__ = [
    "BACKENDS",
    "Backend",
    "BackendUnavailableError",
    "TransitionModel",
    "available_backends",
    "get_backend",
    "transition_model",
]
