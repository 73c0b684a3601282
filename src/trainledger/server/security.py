"""What the server lets a request reach: the token check and run-id resolution.

Two rules keep the UI from becoming a file server: no endpoint takes a filesystem path, and a
run id becomes a path only when the index already knows it as a run under BASE and the
resolved path (symlinks followed) is still inside BASE. Anything else is a 404 raised before
a single byte is read, so a traversal attempt and an unknown run look the same.
"""

from __future__ import annotations

import hashlib
import hmac
import re
from collections.abc import Awaitable, Callable, Container, Mapping
from pathlib import Path, PurePosixPath
from urllib.parse import urlencode

from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, RedirectResponse, Response

from trainledger.errors import RunNotFoundError
from trainledger.server.hosts import MIN_TOKEN_LENGTH, parse_ip
from trainledger.storage import name_of_id

TOKEN_HEADER = "X-Trainledger-Token"
TOKEN_COOKIE = "trainledger_token"
TOKEN_QUERY = "token"


RunNotFound = RunNotFoundError  # the short name the server modules use
Handler = Callable[[Request], Awaitable[Response]]


def check_run_id(run_id: str) -> str:
    """Reject ids that could name anything but a relative path below BASE; return it cleaned.

    Purely lexical: runs before any filesystem access.
    """
    if not run_id or "\x00" in run_id or "\\" in run_id or len(run_id) > 4096:
        raise RunNotFound(run_id)
    run_id = run_id.removeprefix("./")
    path = PurePosixPath(run_id)
    if path.is_absolute() or any(part in ("", ".", "..") for part in run_id.split("/")):
        raise RunNotFound(run_id)
    return run_id


def resolve_run(base: Path, run_id: str, known: Container[str]) -> Path:
    """Map a run id to its directory, or raise :class:`RunNotFound`.

    ``known`` is the set of run ids the index found under ``base``; an id outside it is
    refused without touching the disk. The final check follows symlinks, so a run directory
    that is a link leading out of BASE is refused too.
    """
    run_id = check_run_id(run_id)
    if run_id not in known:
        raise RunNotFound(run_id)
    root = base.resolve()
    path = (root / name_of_id(run_id)).resolve()  # a name that is not UTF-8: its bytes
    if path == root or not path.is_relative_to(root) or not path.is_dir():
        raise RunNotFound(run_id)
    return path


def local_path(path: str) -> str:
    """``path`` as a same-origin redirect target: ``//evil.example/x`` becomes ``/evil.example/x``.

    Why: a browser reads a Location starting with ``//`` (or ``/\\``) as another host.
    """
    return "/" + re.sub(r"^[/\\]+", "", path)


def check_token(token: str) -> str:
    """A token long enough not to be guessed, or ``ValueError`` saying what is required."""
    if not isinstance(token, str) or len(token) < MIN_TOKEN_LENGTH:
        shown = f"{len(token)} characters" if isinstance(token, str) else repr(token)
        raise ValueError(
            f"token expected a str of at least {MIN_TOKEN_LENGTH} characters, received: {shown}"
        )
    return token


def host_of(header: str) -> str:
    """The host part of a Host header (no port, no brackets), lower case."""
    header = header.strip().lower()
    if header.startswith("["):
        return header[1 : header.find("]")] if "]" in header else header
    return header.rsplit(":", 1)[0] if header.count(":") == 1 else header


def host_allowed(header: str | None, allowed: Container[str]) -> bool:
    """Whether a request's Host header names this server (DNS rebinding protection).

    An IP literal is always accepted: rebinding needs a domain name that the attacker
    controls, and a browser sends that name, never the address it resolved to.
    """
    if not header:
        return False
    host = host_of(header)
    return host in allowed or parse_ip(host) is not None


def host_middleware(allowed: frozenset[str]) -> Callable[[Request, Handler], Awaitable[Response]]:
    """An HTTP middleware answering 421 to a request whose Host is not one of ``allowed``."""

    async def middleware(request: Request, call_next: Handler) -> Response:
        if host_allowed(request.headers.get("host"), allowed):
            return await call_next(request)
        return JSONResponse(
            {
                "detail": "this server does not answer for that Host header; start it with "
                "--allowed-host NAME to add a name"
            },
            status_code=421,
        )

    return middleware


def token_matches(expected: str, given: str | None) -> bool:
    """Constant-time comparison, so the token cannot be guessed byte by byte from timings."""
    return given is not None and hmac.compare_digest(expected.encode(), given.encode())


def request_token(request: Request) -> str | None:
    """The token a request carries: bearer header, our header, or the cookie."""
    auth = request.headers.get("authorization", "")
    if auth.lower().startswith("bearer "):
        return auth[7:].strip()
    header = request.headers.get(TOKEN_HEADER)
    if header is not None:
        return header
    return request.cookies.get(TOKEN_COOKIE)


#: what a token lets a request do: read everything, or also write (tags, remarks, archive, delete)
READ, WRITE = "read", "write"


def _role_of(tokens: Mapping[str, str], given: str | None) -> tuple[str, str] | None:
    """(token, role) of the matching token; every token is compared, in constant time."""
    found = None
    for token, role in tokens.items():
        if token_matches(token, given):
            found = (token, role)
    return found


def actor_of(request: Request, role: str, token: str | None) -> str:
    """``ui:<role>:<token fingerprint>@<client>`` for the audit log (never the token)."""
    who = hashlib.sha256(token.encode()).hexdigest()[:12] if token else "no-token"
    client = request.client.host if request.client else "?"
    return f"ui:{role}:{who}@{client}"


def token_middleware(
    tokens: Mapping[str, str],
) -> Callable[[Request, Handler], Awaitable[Response]]:
    """An HTTP middleware requiring one of ``tokens`` (token -> READ or WRITE) on every
    request; the request's ``state.role`` and ``state.actor`` say which one it carried.

    A browser gets in once through a ``?token=`` link: the answer sets an HttpOnly cookie
    and redirects to the same URL without the token, so it stays out of history and logs.
    """

    async def middleware(request: Request, call_next: Handler) -> Response:
        from_query = request.query_params.get(TOKEN_QUERY)
        matched = _role_of(tokens, from_query) if from_query is not None else None
        if matched is not None:
            rest = [(k, v) for k, v in request.query_params.multi_items() if k != TOKEN_QUERY]
            target = local_path(request.url.path) + (("?" + urlencode(rest)) if rest else "")
            response: Response = RedirectResponse(target, status_code=303)
            response.set_cookie(
                TOKEN_COOKIE, matched[0], httponly=True, samesite="strict", path="/"
            )
            return response
        matched = _role_of(tokens, request_token(request))
        if matched is not None:
            request.state.role = matched[1]
            request.state.actor = actor_of(request, matched[1], matched[0])
            return await call_next(request)
        if request.url.path.startswith("/api/"):
            return JSONResponse(
                {
                    "detail": "a valid token is required (Authorization: Bearer, "
                    f"{TOKEN_HEADER} header, or a ?{TOKEN_QUERY}= link)"
                },
                status_code=401,
            )
        return PlainTextResponse(
            "trainledger: this server needs a token; open the link printed by "
            "`trainledger ui` (it ends with ?token=...).",
            status_code=401,
        )

    return middleware
