"""Lazy package exports (PEP 562): a package names what it offers without importing it.

`import harness.spec` runs `harness/__init__.py` first; if that imported the agent loop
and the model client it would pay for `openai` (~1 s) before the spec model loads. A
package instead maps each exported name to the module that defines it and imports that
module the first time the name is read:

    __getattr__, __dir__ = exports(__name__, {"Runner": "harness.run.runner", ...})
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping


def exports(
    package: str, names: Mapping[str, str]
) -> tuple[Callable[[str], object], Callable[[], list[str]]]:
    """The module-level `__getattr__` and `__dir__` of `package`, which exports `names`
    (name -> the module defining it)."""

    def __getattr__(name: str) -> object:
        module = names.get(name)
        if module is None:
            # AttributeError lets `from package import submodule` fall back to importing it.
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        setattr(importlib.import_module(package), name, value)  # the next read is plain
        return value

    def __dir__() -> list[str]:
        return sorted(set(names) | set(vars(importlib.import_module(package))))

    return __getattr__, __dir__
