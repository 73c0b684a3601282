"""The checkpoint writer process (``python -m trainledger.checkpoint.writer_process``).

Reads length-prefixed JSON requests on stdin, writes each checkpoint from the parent's
snapshot memory (an anonymous memfd inherited as a descriptor, mapped here) with the byte-level
format (no torch import), answers ``{"ok": true}`` or ``{"ok": false, "error": ...}`` on stdout,
and exits at end of input.
"""

from __future__ import annotations

import mmap
import os
import sys
from typing import Any


def _close_quietly(view: Any) -> None:
    try:
        view.close()
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

    mapped: mmap.mmap | None = None
    while True:
        message = recv_message(stdin)
        if message is None or message.get("op") != "save":
            break
        try:
            size = int(message["size"])
            if mapped is None or len(mapped) != size:  # the parent grew the memory
                if mapped is not None:
                    _close_quietly(mapped)
                mapped = mmap.mmap(int(message["fd"]), size, prot=mmap.PROT_READ)
            buf = memoryview(mapped)
            raws = [
                (n, RawTensor(dtype, tuple(shape), buf[start : start + nbytes]))
                for n, dtype, shape, start, nbytes in message["tensors"]
            ]
            key = bytes.fromhex(message["enc_key"]) if message["enc_key"] else None
            save_container(message["path"], raws, message["info"], key, message["enc_mode"])
            del raws
            buf.release()
            reply: dict[str, Any] = {"ok": True}
        except Exception as exc:  # reported to the parent, raised there
            reply = {"ok": False, "error": f"{type(exc).__name__}: {exc}"}
        send_message(stdout, reply)
    if mapped is not None:
        _close_quietly(mapped)
    return 0


if __name__ == "__main__":
    sys.exit(main())
