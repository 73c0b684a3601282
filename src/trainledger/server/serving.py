"""Serving the app with uvicorn so that idle or slow clients cannot starve it.

uvicorn times out a keep-alive connection only after a first response, never a connection
that sends nothing or half a request head, and caps nothing: 1,100 such connections exhaust a
process's 1,024 open files and the UI stops answering. ``GuardedH11`` (uvicorn's h11 protocol
with three rules) keeps it answering:

- a request head must arrive within ``head_timeout`` seconds of the connection, or of the end
  of the previous response (default 10 s), else the connection is closed;
- an idle keep-alive connection is closed after ``idle_timeout`` seconds (default 15 s);
- at most ``max_connections`` are open (default 256): a new one beyond that closes the oldest
  idle connection (or, when every connection is busy, is itself closed at once), so a flood
  of idle sockets never locks out a real request.
"""

from __future__ import annotations

import time
from typing import Any

__all__ = ["HEAD_TIMEOUT", "IDLE_TIMEOUT", "MAX_CONNECTIONS", "guarded_protocol", "serve"]

HEAD_TIMEOUT = 10.0
IDLE_TIMEOUT = 15.0
MAX_CONNECTIONS = 256


def guarded_protocol(head_timeout: float, max_connections: int) -> type:
    """uvicorn's h11 protocol class with the head timeout and the connection cap."""
    from uvicorn.protocols.http.h11_impl import H11Protocol

    class GuardedH11(H11Protocol):
        _head_timer: Any = None
        _opened = 0.0

        def connection_made(self, transport: Any) -> None:  # type: ignore[override]
            super().connection_made(transport)
            self._opened = time.monotonic()
            if len(self.connections) > max_connections and not _close_oldest_idle(self):
                transport.close()
                return
            self._arm_head_timer()

        def _idle(self) -> bool:
            return self.cycle is None or self.cycle.response_complete

        def _arm_head_timer(self) -> None:
            self._disarm_head_timer()
            self._head_timer = self.loop.call_later(head_timeout, self._head_timed_out)

        def _disarm_head_timer(self) -> None:
            if self._head_timer is not None:
                self._head_timer.cancel()
                self._head_timer = None

        def _head_timed_out(self) -> None:
            self._head_timer = None
            if self._idle() and not self.transport.is_closing():
                self.transport.close()

        def data_received(self, data: bytes) -> None:
            before = self.cycle
            super().data_received(data)
            if self.cycle is not before:  # a whole head arrived: a request is under way
                self._disarm_head_timer()
            elif self._idle() and self._head_timer is None:
                self._arm_head_timer()  # part of a next head: it gets head_timeout, no more

        def on_response_complete(self) -> None:
            super().on_response_complete()
            self._disarm_head_timer()  # the keep-alive timer runs until the next bytes

        def connection_lost(self, exc: Exception | None) -> None:
            self._disarm_head_timer()
            super().connection_lost(exc)

    def _close_oldest_idle(new: Any) -> bool:
        idle = [c for c in new.connections if c is not new and c._idle()]
        if not idle:
            return False
        oldest = min(idle, key=lambda c: c._opened)
        oldest.transport.close()
        return True

    return GuardedH11


def serve(
    app: Any,
    host: str,
    port: int,
    *,
    idle_timeout: float = IDLE_TIMEOUT,
    head_timeout: float = HEAD_TIMEOUT,
    max_connections: int = MAX_CONNECTIONS,
) -> None:
    """Run ``app`` with uvicorn under the rules of the module doc until interrupted."""
    import uvicorn

    for name, value in (("idle_timeout", idle_timeout), ("head_timeout", head_timeout)):
        if not value > 0:
            raise ValueError(f"{name} expected a positive number of seconds, received {value!r}")
    if max_connections < 1:
        raise ValueError(f"max_connections expected at least 1, received {max_connections!r}")
    uvicorn.run(
        app,
        host=host,
        port=port,
        log_level="warning",
        http=guarded_protocol(head_timeout, max_connections),
        timeout_keep_alive=int(max(1, round(idle_timeout))),
    )
