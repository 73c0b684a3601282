"""Lazy re-exports (PEP 562) for package ``__init__`` modules.

Why: a package's public names must be importable from the package itself (the layer rule), yet
importing ``trainledger.checkpoint`` or the facade must not import torch until a torch-facing
name is used, so the query engine, the readers and the CLI run without torch installed.

Why the extras: the core install has no torch, pandas or web server. A user who imports a name
that needs one should be told which extra to install (``pip install 'trainledger[torch]'``),
as the CLI does, rather than see a bare "No module named 'torch'".
"""

from __future__ import annotations

import importlib
import importlib.util
import warnings
from collections.abc import Callable, Mapping
from typing import Any

from trainledger.errors import MissingExtraError

__all__ = ["EXTRA_OF", "lazy_exports", "missing_extra"]

#: optional third-party module (top-level name) -> the extra of pyproject.toml that installs it
EXTRA_OF: dict[str, str] = {
    "torch": "torch",
    "safetensors": "torch",
    "cryptography": "torch",
    "fastapi": "ui",
    "starlette": "ui",
    "uvicorn": "ui",
    "pandas": "pandas",
    "sklearn": "demo",
}


def missing_extra(what: str, module: str) -> MissingExtraError | None:
    """The error to raise when ``what`` needs ``module`` and it is missing; None if ``module``
    is not an optional dependency (then the original error is the right one)."""
    top = module.split(".")[0]
    extra = EXTRA_OF.get(top)
    if extra is None:
        return None
    return MissingExtraError(
        f"{what} needs {top}, which is not installed: pip install 'trainledger[{extra}]'",
        name=top,
    )


def lazy_exports(
    package: str,
    exports: Mapping[str, str],
    namespace: dict[str, Any],
    needs: Mapping[str, str] | None = None,
    renamed: Mapping[str, str] | None = None,
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``(__getattr__, __dir__)`` for ``package``: name -> the module that defines it.

    A module path that is the name itself (``{"metrics": "trainledger.run.metrics"}``) exports
    the module. Each value is imported on first use and cached in ``namespace``. An optional
    dependency missing at import raises :class:`~trainledger.errors.MissingExtraError` naming
    the extra; ``needs`` (name -> optional module) checks one that the name imports only when
    called (``{"lineage_table": "pandas"}``), so the error comes at import, not mid-analysis.
    ``renamed`` (old name -> exported new name) keeps an old name working for a release: each
    use warns (``DeprecationWarning``) and gets the new name's value; it is in no listing.
    """

    def __getattr__(name: str) -> Any:
        new_name = (renamed or {}).get(name)
        if new_name is not None:
            warnings.warn(
                f"{package}.{name} is deprecated and goes in 0.3: use {package}.{new_name}",
                DeprecationWarning,
                stacklevel=2,
            )
            return __getattr__(new_name) if new_name not in namespace else namespace[new_name]
        module_name = exports.get(name)
        if module_name is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        needed = (needs or {}).get(name)
        if needed is not None and importlib.util.find_spec(needed) is None:
            error = missing_extra(f"{package}.{name}", needed)
            if error is not None:
                raise error
        try:
            module = importlib.import_module(module_name)
            is_module = module_name.rsplit(".", 1)[-1] == name
            value = module if is_module else getattr(module, name)
        except ModuleNotFoundError as exc:
            error = missing_extra(f"{package}.{name}", exc.name or "")
            if error is None:
                raise
            # from a nested lazy package: name what the user imported, chain the original
            cause = exc.__cause__ if isinstance(exc, MissingExtraError) else exc
            raise error from cause
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted(set(namespace) | set(exports))

    return __getattr__, __dir__
