"""A module imported on first use, so that ``occmodel --help`` and the occupancy
calculator do not pay for sympy (about 0.5 s of CPU) they never touch.

    from ._lazy import sympy          # instead of `import sympy`
    sympy.Symbol("x")                 # the real import happens here, once

Only attribute access triggers the import; ``from __future__ import annotations``
keeps annotations such as ``sympy.Expr`` from touching it.
"""

from __future__ import annotations

import importlib
from types import ModuleType


class LazyModule:
    def __init__(self, name: str):
        self.__name = name
        self.__module: ModuleType | None = None

    def __getattr__(self, attr: str):
        module = self.__module
        if module is None:
            module = self.__module = importlib.import_module(self.__name)
        return getattr(module, attr)

    def __repr__(self) -> str:
        return f"<lazy module {self.__name!r}{' (imported)' if self.__module is not None else ''}>"


sympy = LazyModule("sympy")
