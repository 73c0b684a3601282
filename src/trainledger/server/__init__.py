"""The local web UI: FastAPI app factory, routes, static page."""

from __future__ import annotations

from typing import TYPE_CHECKING

from trainledger.lazy import lazy_exports

_EXPORTS: dict[str, str] = {
    "create_app": "trainledger.server.app",
    "IndexedRunStore": "trainledger.server.run_store",
    "allowed_hosts": "trainledger.server.hosts",
    "is_loopback": "trainledger.server.hosts",
    "MIN_TOKEN_LENGTH": "trainledger.server.hosts",
    "serve": "trainledger.server.serving",
}

__all__ = [
    "allowed_hosts",
    "create_app",
    "IndexedRunStore",
    "is_loopback",
    "MIN_TOKEN_LENGTH",
    "serve",
]

_lazy_getattr, __dir__ = lazy_exports(__name__, _EXPORTS, globals())


def __getattr__(name: str) -> object:
    if name == "EngineStore":  # IndexedRunStore's name before 0.2 (run_store warns)
        from trainledger.server import run_store

        return run_store.EngineStore
    return _lazy_getattr(name)


if TYPE_CHECKING:  # pragma: no cover - for type checkers and IDEs only
    from trainledger.server.app import create_app
    from trainledger.server.hosts import MIN_TOKEN_LENGTH, allowed_hosts, is_loopback
    from trainledger.server.run_store import IndexedRunStore
    from trainledger.server.serving import serve
