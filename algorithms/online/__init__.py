"""Online episodic algorithms; importing this package registers every module in it."""

from theorylab.autoimport import import_submodules

ALGORITHM_MODULES = import_submodules(__name__, __path__)
