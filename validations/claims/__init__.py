"""Registered claims; every module here is imported (and so registered) on first use."""

from theorylab.autoimport import import_submodules

CLAIM_MODULES = import_submodules(__name__, __path__)
