"""The checkpoint writer process (``python -m trainledger.checkpoint.writer_process``).

Reads length-prefixed JSON requests on stdin, writes each checkpoint from shared memory with the
byte-level format (no torch import), answers ``{"ok": true}`` or ``{"ok": false, "error": ...}``
on stdout, and exits at end of input.
"""

from __future__ import annotations

import os
import sys
from multiprocessing import resource_tracker, shared_memory
from typing import Any


def _attach(name: str) -> Any:
    shm = shared_memory.SharedMemory(name=name)
    try:  # the parent owns the block; our tracker must not unlink it when we exit
        resource_tracker.unregister(shm._name, "shared_memory")  # type: ignore[attr-defined]
    except Exception:
        pass
    return shm


def _close_quietly(shm: Any) -> None:
    try:
        shm.close()
    except BufferError:
        pass


def main() -> int:
    # Replies get a private copy of the pipe; fd 1 (print, C libraries) goes to stderr, so
    # nothing but replies can ever reach the parent's reader.
    stdout = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    stdin = sys.stdin.buffer

    # imported after the redirect: nothing printed while importing can reach the parent's reader
    from trainledger.checkpoint.async_save import recv_message, send_message
    from trainledger.checkpoint.format import RawTensor, save_container

    attached: dict[str, Any] = {}
    while True:
        message = recv_message(stdin)
        if message is None or message.get("op") != "save":
            break
        try:
            name = message["shm"]
            if name not in attached:
                for old in attached.values():
                    _close_quietly(old)
                attached = {name: _attach(name)}
            buf = attached[name].buf
            raws = [
                (n, RawTensor(dtype, tuple(shape), buf[start : start + nbytes]))
                for n, dtype, shape, start, nbytes in message["tensors"]
            ]
            key = bytes.fromhex(message["enc_key"]) if message["enc_key"] else None
            save_container(message["path"], raws, message["info"], key, message["enc_mode"])
            del raws, buf
            reply: dict[str, Any] = {"ok": True}
        except Exception as exc:  # reported to the parent, raised there
            reply = {"ok": False, "error": f"{type(exc).__name__}: {exc}"}
        send_message(stdout, reply)
    for shm in attached.values():
        _close_quietly(shm)
    return 0


if __name__ == "__main__":
    sys.exit(main())
