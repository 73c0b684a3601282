"""Processes of the named-model concurrency tests (issue 54): each registers versions and
moves one alias at once with the others. A module of its own, without torch, so that a
spawned process starts quickly."""

from __future__ import annotations

from typing import Any


def register_and_move(base: str, index: str | None, worker: int, n: int, start: Any) -> None:
    """Wait for ``start`` (a barrier), then ``n`` times: register a checkpoint of run
    ``w<worker>`` as the next version of ``clf`` and point ``production`` at it."""
    from trainledger.query import register_model, set_model_alias

    start.wait(60)
    for _ in range(n):
        version = register_model(base, "clf", f"w{worker}/m.ckpt", index=index, actor=f"w{worker}")
        set_model_alias(base, "clf", "production", version, index=index, actor=f"w{worker}")
