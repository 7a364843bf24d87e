"""A module imported when first used, not when the module naming it is: numpy in the pointwise core, which
`gate` and every command's `--help` import (bench/startup.py)."""

from __future__ import annotations

import importlib
from types import ModuleType


class LazyModule:
    """Stands for module `name`; the first attribute read imports it."""

    def __init__(self, name: str):
        self._name = name
        self._module: ModuleType | None = None

    def __getattr__(self, attr: str):
        if self._module is None:
            self._module = importlib.import_module(self._name)
        return getattr(self._module, attr)
