"""Request body limits, enforced before a body is read (uvicorn has none).

A 500 MB JSON body took the server to gigabytes of memory, and an annotation route read the
whole body before answering 422. ``BodyLimit`` is pure ASGI: a declared ``Content-Length``
over the route's limit is answered 413 without reading a byte, and a body without one
(chunked) is counted as it arrives and cut off at the limit with 413.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from fastapi import HTTPException

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


class _TooLarge(HTTPException):
    """Raised from ``receive``: an ``HTTPException``, so FastAPI's body parsing passes it on
    (any other error there becomes a 400) and its handler answers 413."""

    def __init__(self, limit: int) -> None:
        super().__init__(413, f"request body too large: expected at most {limit} bytes")


async def _answer_413(send: Send, limit: int) -> None:
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
                (b"connection", b"close"),
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
        started = False

        async def counted() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > limit:
                    raise _TooLarge(limit)
            return message

        async def watched(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, counted, watched)
        except _TooLarge:
            if not started:
                await _answer_413(send, limit)
