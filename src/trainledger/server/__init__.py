"""The local web UI: FastAPI app factory, routes, static page."""

from __future__ import annotations

from typing import TYPE_CHECKING

from trainledger.lazy import lazy_exports

_EXPORTS: dict[str, str] = {
    "create_app": "trainledger.server.app",
    "EngineStore": "trainledger.server.run_store",
}

__all__ = [
    "create_app",
    "EngineStore",
]

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())

if TYPE_CHECKING:  # pragma: no cover - for type checkers and IDEs only
    from trainledger.server.app import create_app
    from trainledger.server.run_store import EngineStore
