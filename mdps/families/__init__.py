"""MDP families with known structure; importing this package registers every module in it."""

from theorylab.autoimport import import_submodules

FAMILY_MODULES = import_submodules(__name__, __path__)
