"""The FastAPI application factory behind ``trainledger ui``.

``create_app(base)`` gives an ASGI app serving the JSON API under ``/api/v1`` (documented
at ``/docs``) and the static page at ``/``. The app reads only inside ``base``; see
:mod:`trainledger.server.security` for how run ids become paths.
"""

from __future__ import annotations

import errno
import logging
import os
import threading
from collections.abc import AsyncIterator, Iterable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import FileResponse, JSONResponse
from fastapi.staticfiles import StaticFiles

from trainledger.errors import (
    IndexRebuildingError,
    IndexUnreachableError,
    LineageError,
    LineageFileNotFoundError,
    LineageParamSummaryPathError,
    ModelNotFoundError,
    ObjectStoreError,
    ReadOnlyBaseError,
)
from trainledger.server.limits import BodyLimit
from trainledger.server.origins import OriginCheck
from trainledger.server.routes import (
    admin,
    diff,
    importance,
    media,
    meta,
    models,
    runs,
    scalars,
    structure,
)
from trainledger.server.run_store import IndexedRunStore, RunStore
from trainledger.server.security import (
    READ,
    WRITE,
    RunNotFound,
    check_token,
    host_middleware,
    token_middleware,
)
from trainledger.version import __version__

STATIC_DIR = Path(__file__).with_name("static")


def create_app(
    base: str | os.PathLike[str],
    token: str | None = None,
    *,
    read_token: str | None = None,
    store: RunStore | None = None,
    warm: bool = True,
    allowed_hosts: Iterable[str] | None = None,
) -> FastAPI:
    """Build the app over the runs under ``base``.

    Args:
        base: the directory holding the run directories. Must exist.
        token: when given, every request must carry it or ``read_token``
            (``Authorization: Bearer <token>``, the ``X-Trainledger-Token`` header, or the
            cookie a ``?token=`` link sets); it may read and write.
        read_token: a token that may only read (writes answer 403). Without any token every
            request may write, as on a user's own machine.
        store: the data access object; by default the query engine over ``base``
            (a test may pass a fake).
        warm: scan the base in a background thread at start-up, so the first page does not
            wait for an index build it could have overlapped with the browser opening.
        allowed_hosts: the Host header names to answer (``security.allowed_hosts`` computes
            them for a bound address); others get 421, so DNS rebinding cannot reach the
            API. None (in-process use, tests) checks nothing. Whatever they are, a write
            (POST, PUT, PATCH, DELETE) from another origin gets 403 (``origins.py``): a
            page on another site cannot archive or tag runs through the user's browser.
    """
    base_path = Path(base)
    if not base_path.is_dir():
        raise LineageParamSummaryPathError(
            f"base expected an existing directory, received: {str(base)!r}"
        )
    tokens = {t: role for t, role in ((token, WRITE), (read_token, READ)) if t is not None}
    for given in tokens:
        check_token(given)
    if token is not None and token == read_token:
        raise ValueError("token and read_token must differ")
    if store is None:
        store = IndexedRunStore(base_path)
    chosen: RunStore = store

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        if warm:
            threading.Thread(
                target=_warm, args=(chosen,), name="trainledger-ui-warm", daemon=True
            ).start()
        try:
            yield
        finally:
            chosen.close()

    app = FastAPI(
        title="trainledger",
        version=__version__,
        summary="Lineage of training runs: browse, filter, compare and export.",
        lifespan=lifespan,
    )
    app.state.store = chosen
    app.state.token_required = bool(tokens)
    _add_checks(app, tokens, allowed_hosts)
    _add_error_handlers(app)
    app.include_router(meta.router)
    app.include_router(media.router)  # before runs: /runs/{run_id:run} would match these
    app.include_router(structure.router)  # the same
    app.include_router(runs.router)
    app.include_router(scalars.router)
    app.include_router(admin.router)
    app.include_router(importance.router)
    app.include_router(diff.router)
    app.include_router(models.router)
    app.mount("/static", StaticFiles(directory=STATIC_DIR), name="static")

    @app.get("/", include_in_schema=False)
    def index() -> FileResponse:
        return FileResponse(STATIC_DIR / "index.html", headers={"Cache-Control": "no-cache"})

    return app


def _add_checks(app: FastAPI, tokens: dict[str, str], allowed_hosts: Iterable[str] | None) -> None:
    """The request checks, in the order they run: body size, Host, origin, token (the one
    added last runs first)."""
    names = None if allowed_hosts is None else frozenset(h.lower() for h in allowed_hosts)
    if tokens:
        app.middleware("http")(token_middleware(tokens))
    app.add_middleware(OriginCheck, names=names)
    if names is not None:
        app.middleware("http")(host_middleware(names))
    app.add_middleware(BodyLimit)


def _warm(store: RunStore) -> None:
    try:
        store.stamp()
    except Exception:  # noqa: BLE001 - the first real request reports the error properly
        pass


_log = logging.getLogger("trainledger.server")


def _detail(exc: BaseException) -> dict[str, Any]:
    """The error's message and its notes (a mistaken field's nearest names: the message
    itself keeps MindInsight's text)."""
    detail = " ".join([str(exc), *getattr(exc, "__notes__", ())])
    return {"detail": detail, "error": type(exc).__name__}


def _add_error_handlers(app: FastAPI) -> None:
    """Map the package's errors to status codes; nothing else leaks a traceback."""

    @app.exception_handler(RunNotFound)
    async def not_found(request: Request, exc: RunNotFound) -> JSONResponse:
        return JSONResponse({"detail": "run not found", "error": "RunNotFound"}, 404)

    @app.exception_handler(LineageFileNotFoundError)
    async def no_lineage(request: Request, exc: LineageFileNotFoundError) -> JSONResponse:
        return JSONResponse(_detail(exc), 404)

    # an unknown model, version or alias (a LineageParamValueError too: its handler is 400)
    @app.exception_handler(ModelNotFoundError)
    async def no_model(request: Request, exc: ModelNotFoundError) -> JSONResponse:
        return JSONResponse(_detail(exc), 404)

    @app.exception_handler(ValueError)
    async def bad_value(request: Request, exc: ValueError) -> JSONResponse:
        return JSONResponse(_detail(exc), 400)

    @app.exception_handler(LineageError)
    async def lineage_error(request: Request, exc: LineageError) -> JSONResponse:
        return JSONResponse(_detail(exc), 400)

    # a backend that does not answer is an outage (503: retry later), never the client's fault
    @app.exception_handler(ObjectStoreError)
    async def store_down(request: Request, exc: ObjectStoreError) -> JSONResponse:
        detail = f"the object store (S3) is unreachable or refused the request: {exc}"
        return JSONResponse({"detail": detail, "error": type(exc).__name__, "backend": "s3"}, 503)

    # a read-only base (a shared mount, another user's files): the request conflicts with
    # where the base lives (409, naming the path); any other file error is the server's (500)
    @app.exception_handler(OSError)
    async def file_error(request: Request, exc: OSError) -> JSONResponse:
        if isinstance(exc, ReadOnlyBaseError):
            return JSONResponse(_detail(exc), 409)
        where = f" {exc.filename!r}" if exc.filename else ""
        if exc.errno in (errno.EROFS, errno.EACCES, errno.EPERM):
            detail = f"expected a writable base, received read-only{where}: {exc.strerror}"
            return JSONResponse({"detail": detail, "error": "ReadOnlyBaseError"}, 409)
        _log.error("a file operation failed: %r", exc)
        return JSONResponse({"detail": f"a file operation failed{where}: {exc.strerror}"}, 500)

    @app.exception_handler(IndexRebuildingError)
    async def index_rebuilding(request: Request, exc: IndexRebuildingError) -> JSONResponse:
        body = {"detail": str(exc), "error": type(exc).__name__, "backend": "index"}
        return JSONResponse(body, 503, headers={"Retry-After": "2"})

    @app.exception_handler(IndexUnreachableError)
    async def index_down(request: Request, exc: IndexUnreachableError) -> JSONResponse:
        detail = f"the lineage index (PostgreSQL) is unreachable: {exc}"
        body = {"detail": detail, "error": type(exc).__name__, "backend": "postgresql"}
        return JSONResponse(body, 503)
