"""Cross-site writes refused: every state-changing request must come from the UI's own origin.

Why: without a token (the local default) a page on any other site could archive, restore,
delete and tag runs by submitting an HTML form (or a ``no-cors`` fetch) to
``http://127.0.0.1:PORT/api/v1/...`` from the user's own browser; the browser sends such a
request without asking anyone. Browsers name the page that caused a request in ``Origin``
(and, in ``Sec-Fetch-Site``, whether it is another site), which a page cannot forge, so:

- a POST, PUT, PATCH or DELETE whose ``Origin`` is not this server's own origin, or whose
  ``Sec-Fetch-Site`` is ``cross-site`` or ``same-site``, is answered 403 with the reason;
- the own origin is the scheme the request came with (``X-Forwarded-Proto`` of a trusted
  proxy, as uvicorn applies it) and an authority that is the request's ``Host`` (the
  address the browser reached, port included), or a name the server answers for (the bound
  address, its loopback names, every ``--allowed-host``) on that port or the bound one;
- a write's body is JSON or nothing: a form encoding (``application/x-www-form-urlencoded``,
  ``multipart/form-data``, ``text/plain``) or any other type is answered 415.

A request without ``Origin`` (curl, scripts, the CLI) is not a browser's cross-site request
and passes. The read-like POSTs (``/runs``, ``/scalars/series``...) follow the same rule:
one rule for every unsafe method leaves nothing to keep track of.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Container, MutableMapping
from typing import Any
from urllib.parse import urlsplit

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

__all__ = ["UNSAFE_METHODS", "OriginCheck", "own_origin"]

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
App = Callable[[Scope, Receive, Send], Awaitable[None]]

UNSAFE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})
_DEFAULT_PORTS = {"http": 80, "https": 443}


def _authority(host: str, port: int | None, scheme: str) -> tuple[str, int | None]:
    """(host in lower case without brackets, port with the scheme's default filled in)."""
    return host.strip("[]").lower(), port if port is not None else _DEFAULT_PORTS.get(scheme)


def _host_header(header: str, scheme: str) -> tuple[str, int | None] | None:
    """The (host, port) a Host header names, or None when it names nothing readable."""
    try:
        parts = urlsplit(f"//{header.strip()}")
        return _authority(parts.hostname or "", parts.port, scheme)
    except ValueError:
        return None


def own_origin(
    origin: str,
    *,
    scheme: str,
    host_header: str | None,
    bound_port: int | None,
    names: Container[str] | None,
) -> bool:
    """Whether ``origin`` (an ``Origin`` header) is the origin this request was sent to.

    ``names`` are the host names the server answers for (None: only the ``Host`` header's).
    """
    try:
        parts = urlsplit(origin.strip())
        given = _authority(parts.hostname or "", parts.port, parts.scheme)
    except ValueError:  # ("null", a port out of range...)
        return False
    if parts.scheme.lower() != scheme.lower() or not given[0]:
        return False
    reached = _host_header(host_header, scheme) if host_header else None
    if reached is not None and given == reached:
        return True
    ports = {p for p in (reached[1] if reached else None, bound_port) if p is not None}
    return names is not None and given[0] in names and given[1] in ports


def _refuse(status: int, detail: str) -> JSONResponse:
    return JSONResponse({"detail": detail, "error": "CrossSiteRequest"}, status_code=status)


def _why_refused(request: Request, names: Container[str] | None) -> Response | None:
    """The answer refusing an unsafe request from elsewhere, or None to let it through."""
    origin = request.headers.get("origin")
    scheme = request.url.scheme
    if origin is not None:
        server = request.scope.get("server")
        port = server[1] if server and len(server) > 1 else None
        host = request.headers.get("host")
        if not own_origin(origin, scheme=scheme, host_header=host, bound_port=port, names=names):
            return _refuse(
                403,
                f"a write must come from this server's own pages: expected Origin "
                f"{scheme}://{host or '<this server>'}, received {origin!r} (behind a proxy, "
                "forward the Host and X-Forwarded-Proto; see --allowed-host)",
            )
    else:
        site = request.headers.get("sec-fetch-site", "").lower()
        if site in ("cross-site", "same-site"):
            return _refuse(
                403,
                f"a write must come from this server's own pages: expected Sec-Fetch-Site "
                f"same-origin, received {site!r}",
            )
    kind = request.headers.get("content-type")
    media = (kind or "").split(";")[0].strip().lower()
    if kind is not None and media != "application/json" and not media.endswith("+json"):
        return _refuse(
            415,
            f"a write's body must be JSON or nothing: expected Content-Type "
            f"application/json, received {kind!r}",
        )
    return None


class OriginCheck:
    """ASGI middleware refusing unsafe requests from other origins (see the module doc).

    Pure ASGI, so it adds no task or body buffering to the requests it lets through.
    """

    def __init__(self, app: App, names: Container[str] | None = None) -> None:
        self.app = app
        self.names = names

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["method"] in UNSAFE_METHODS:
            refused = _why_refused(Request(scope), self.names)
            if refused is not None:
                await refused(scope, receive, send)
                return
        await self.app(scope, receive, send)
