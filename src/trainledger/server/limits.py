"""Request body limits, enforced before a body is read (uvicorn has none).

A 500 MB JSON body took the server to gigabytes of memory, and an annotation route read the
whole body before answering 422. ``BodyLimit`` is pure ASGI: a declared ``Content-Length``
over the route's limit is answered 413 without reading a byte, and a body without one
(chunked) is counted as it arrives and cut off at the limit with 413.

Why the 413 of a chunked body is sent from here, the moment the count passes the limit, and
the app then told the client left: an error raised from ``receive`` reached the route as
itself only when no ``BaseHTTPMiddleware`` (the Host and token checks) stood between, and
otherwise became FastAPI's 400 "There was an error parsing the body". Whatever the app
answers after that goes nowhere.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

__all__ = ["BodyLimit", "QUERY_BODY_LIMIT", "ANNOTATION_BODY_LIMIT", "body_limit_for"]

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]

#: queries, exports and every other route
QUERY_BODY_LIMIT = 1 * 2**20
#: a tag and a remark
ANNOTATION_BODY_LIMIT = 64 * 2**10


def body_limit_for(path: str) -> int:
    """The most bytes a request body to ``path`` may hold."""
    return ANNOTATION_BODY_LIMIT if path.rstrip("/").endswith("/annotation") else QUERY_BODY_LIMIT


async def _answer_413(send: Send, limit: int, *, close: bool = True) -> None:
    """The 413; ``close=False`` keeps the connection, so uvicorn reads the rest of a body
    sent on (and drops it) rather than closing on a client still sending, whose 413 the
    reset would lose."""
    body = (
        f'{{"detail":"request body too large: expected at most {limit} bytes",'
        f'"error":"RequestTooLarge"}}'
    ).encode()
    await send(
        {
            "type": "http.response.start",
            "status": 413,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                *([(b"connection", b"close")] if close else []),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


class BodyLimit:
    """ASGI middleware applying ``body_limit_for`` to every HTTP request."""

    def __init__(self, app: Callable[[Scope, Receive, Send], Awaitable[None]]) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        limit = body_limit_for(scope["path"])
        declared = dict(scope.get("headers") or []).get(b"content-length")
        if declared is not None and (not declared.isdigit() or int(declared) > limit):
            await _answer_413(send, limit)
            return
        seen = 0
        started = answered = False

        async def counted() -> Message:
            nonlocal seen, answered
            if answered:
                return {"type": "http.disconnect"}
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > limit:
                    answered = True
                    if not started:
                        await _answer_413(send, limit, close=False)
                    return {"type": "http.disconnect"}
            return message

        async def watched(message: Message) -> None:
            nonlocal started
            if answered:  # the 413 went out: the app's own answer (a 400) goes nowhere
                return
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, counted, watched)
        except Exception:
            if not answered:  # (after the 413, the app's error over the cut body is moot)
                raise
