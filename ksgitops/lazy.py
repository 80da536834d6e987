"""A module loaded on first use, so that a command pays only for the rooms it enters.

`ksgitops --help`, `--version` and shell completion never touch the use cases; loading them (and
with them the work-tree writer, the git edges and the status rooms) costs ~0.1 s of every start-up.
"""
from __future__ import annotations

import importlib.util
import sys
from types import ModuleType
from typing import Any, Callable


def lazy_module(name: str, wrap: Callable[[Any], Any] | None = None) -> ModuleType:
    """`name`, imported now if it already was, else executed on its first attribute access (by
    `wrap(its loader)`, when given: a loader that runs the module's own in some setting)."""
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.find_spec(name)
    if spec is None or spec.loader is None:
        raise ImportError(f"no module named {name}")
    loader = importlib.util.LazyLoader(wrap(spec.loader) if wrap is not None else spec.loader)
    spec.loader = loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    loader.exec_module(module)
    parent, _, child = name.rpartition(".")
    if parent:  # as an import makes it: `import a.b.c` then `a.b.c.f`, a patch by dotted name
        setattr(sys.modules[parent], child, module)
    return module
