"""Lazy re-exports (PEP 562) for package ``__init__`` modules.

Why: a package's public names must be importable from the package itself (the layer rule), yet
importing ``trainledger.checkpoint`` or the facade must not import torch until a torch-facing
name is used, so the query engine, the readers and the CLI run without torch installed.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["lazy_exports"]


def lazy_exports(
    package: str, exports: Mapping[str, str], namespace: dict[str, Any]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``(__getattr__, __dir__)`` for ``package``: name -> the module that defines it.

    A module path that is the name itself (``{"metrics": "trainledger.run.metrics"}``) exports
    the module. Each value is imported on first use and cached in ``namespace``.
    """

    def __getattr__(name: str) -> Any:
        module_name = exports.get(name)
        if module_name is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        module = importlib.import_module(module_name)
        value = module if module_name.rsplit(".", 1)[-1] == name else getattr(module, name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted(set(namespace) | set(exports))

    return __getattr__, __dir__
