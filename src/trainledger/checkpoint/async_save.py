"""Savers: write a checkpoint now (sync), on a background thread, or in a spawned process.

Why three: a sync save blocks training for the whole disk write. The async savers block only
for a memory copy of the state (a snapshot), then write it elsewhere; at most one save is in
flight, ``wait()`` returns the committed path or raises the background error (never lost).

The snapshot buffers are reused between saves (same shapes every time), so after the first save
the copy does not pay for fresh page faults.

Process mode: the writer is a freshly spawned interpreter (``python -m
trainledger.checkpoint.writer_process``; never ``fork``: torch's thread pools do not survive
it) that imports only the byte-level format (no torch). Tensor bytes cross in anonymous
shared memory (``SnapshotMemory``: a memfd, or an unlinked temp file where there is none)
whose descriptor the child inherits: it has no name, so the kernel frees it with the last
process holding it, and a killed run leaves nothing behind (a named POSIX segment in /dev/shm
outlived every SIGKILL). Every message is length-prefixed JSON over the child's stdin/stdout
(names, dtypes, shapes, offsets, the path, the header, the key as hex), so nothing is pickled
or unpickled, and unlike ``multiprocessing`` the user's ``__main__`` is not re-imported (no
``if __name__`` guard needed). The child exits when its stdin closes, including when the
trainer dies.
"""

from __future__ import annotations

import json
import mmap
import os
import struct
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from trainledger.errors import CheckpointWriteError
from trainledger.storage import BackgroundWorker, start_ours

__all__ = ["ProcessSaver", "SnapshotMemory", "SyncSaver", "ThreadSaver", "make_saver"]

NamedTensors = Sequence[tuple[str, Any]]  # (name, torch.Tensor)


#: the most each of a synchronous GPU save's two pinned staging buffers holds
_STAGING_CHUNK = 64 << 20


class SyncSaver:
    """Writes in the caller's thread; ``wait`` has nothing to wait for. GPU tensors reach the
    file through a small pinned ring (``torch_adapter.StagingRing``), each chunk copied while
    the one before it is written, instead of a whole pageable copy of the state first."""

    mode = "sync"

    def save(
        self,
        path: Path,
        named: NamedTensors,
        info: dict[str, Any],
        enc_key: bytes | None = None,
        enc_mode: str = "AES-GCM",
    ) -> None:
        from trainledger.checkpoint.format import RawTensor, save_container
        from trainledger.checkpoint.torch_adapter import StagingRing, staged_raw, tensor_to_raw

        largest: dict[Any, int] = {}  # a ring per GPU, no larger than its largest tensor
        for _, tensor in named:
            if tensor.device.type == "cuda":
                size = tensor.numel() * tensor.element_size()
                largest[tensor.device] = max(largest.get(tensor.device, 0), size)
        rings = {dev: StagingRing(dev, min(size, _STAGING_CHUNK)) for dev, size in largest.items()}
        raws: list[tuple[str, RawTensor]] = [
            (name, staged_raw(name, t, rings[t.device]))
            if t.device in rings
            else (name, tensor_to_raw(name, t))
            for name, t in named
        ]
        save_container(path, raws, info, enc_key, enc_mode)

    def wait(self) -> Path | None:
        return None

    def close(self) -> None:
        return None


class ThreadSaver:
    """Snapshot on the caller's thread, write on one named background thread."""

    mode = "thread"

    def __init__(self, name: str = "trainledger-checkpoint", reuse_buffers: bool = True) -> None:
        self._worker = BackgroundWorker(name, maxsize=1)
        self._inflight: Path | None = None
        self._pool: dict[str, Any] = {}
        self._reuse = reuse_buffers  # keep snapshot memory between saves (a training run)
        self.last_written: Path | None = None  # the last save committed

    def _snapshot(self, named: NamedTensors) -> tuple[list[tuple[str, Any]], Any]:
        """Host copies of ``named`` and, when some live on a GPU, the CUDA event after their
        copies. GPU tensors go to pinned buffers with non-blocking copies, so the call returns
        once the copies are queued (pageable memory would make the copy synchronous and
        several times slower); the writer waits for the event before it reads them."""
        import torch

        from trainledger.checkpoint.torch_adapter import copy_all

        out = []
        pool: dict[str, Any] = {}
        device_pairs: list[tuple[Any, Any]] = []
        host_pairs: list[tuple[Any, Any]] = []
        for name, t in named:
            on_gpu = t.device.type == "cuda"
            buf = self._pool.get(name)
            if (
                buf is None
                or buf.shape != t.shape
                or buf.dtype != t.dtype
                or buf.is_pinned() != on_gpu
            ):
                buf = torch.empty(t.shape, dtype=t.dtype, device="cpu", pin_memory=on_gpu)
            pool[name] = buf
            out.append((name, buf))
            (device_pairs if on_gpu else host_pairs).append((buf, t))
        event = None
        if device_pairs:
            for buf, t in device_pairs:
                buf.copy_(t.detach(), non_blocking=True)
            event = torch.cuda.Event()
            event.record()
        copy_all(host_pairs)
        self._pool = pool if self._reuse else {}
        return out, event

    def save(
        self,
        path: Path,
        named: NamedTensors,
        info: dict[str, Any],
        enc_key: bytes | None = None,
        enc_mode: str = "AES-GCM",
    ) -> None:
        if self._inflight is not None:
            raise RuntimeError("a checkpoint save is in flight; call wait() first")
        snap, copied = self._snapshot(named)
        info = json.loads(json.dumps(info))  # a private copy; training may mutate the original

        def write() -> None:
            from trainledger.checkpoint.format import save_container
            from trainledger.checkpoint.torch_adapter import tensor_to_raw

            try:
                if copied is not None:
                    copied.synchronize()  # the device-to-host copies are done
                save_container(
                    path, [(n, tensor_to_raw(n, t)) for n, t in snap], info, enc_key, enc_mode
                )
                self.last_written = path
            except BaseException as exc:
                raise CheckpointWriteError(f"background save of {path} failed: {exc}") from exc

        self._inflight = path
        self._worker.submit(write)

    @property
    def inflight(self) -> Path | None:
        """The path of the save in flight (not yet waited for), if any."""
        return self._inflight

    def wait(self) -> Path | None:
        """Wait for the save in flight; its path once committed, or raise its error."""
        path, self._inflight = self._inflight, None
        self._worker.flush()
        return path

    def close(self) -> None:
        try:
            self.wait()
        finally:
            self._pool = {}
            self._worker.close()


class SnapshotMemory:
    """Anonymous shared memory that grows: a memfd (Linux), else an unlinked temp file.

    A child process gets it by inheriting ``fd`` (``Popen(pass_fds=...)``) and maps it
    itself; growing it keeps the descriptor, so a running child keeps working. Nothing names
    it, so nothing outlives the processes that hold it.
    """

    def __init__(self) -> None:
        if hasattr(os, "memfd_create"):
            self.fd = os.memfd_create("trainledger-checkpoint-snapshot", os.MFD_CLOEXEC)
        else:  # pragma: no cover - no memfd (macOS): a file unlinked as soon as it is made
            import tempfile

            self.fd = os.dup(tempfile.TemporaryFile().fileno())
        self.size = 0
        self.map: mmap.mmap | None = None

    def reserve(self, size: int) -> mmap.mmap:
        """A writable mapping of at least ``size`` bytes (grown, never shrunk)."""
        if self.map is None or self.size < size:
            if self.map is not None:
                self.map.close()
                self.map = None
            self.size = max(size, 8)
            os.ftruncate(self.fd, self.size)
            self.map = mmap.mmap(self.fd, self.size)
        return self.map

    def close(self) -> None:
        if self.map is not None:
            self.map.close()
            self.map = None
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


class ProcessSaver:
    """Snapshot into anonymous shared memory, write in a spawned writer process."""

    mode = "process"

    def __init__(self) -> None:
        self._proc: Any = None
        self._memory: SnapshotMemory | None = None
        self._inflight: Path | None = None

    def _ensure_child(self) -> None:
        if self._proc is not None and self._proc.poll() is None:
            return
        if self._memory is None:
            self._memory = SnapshotMemory()
        self._proc = start_ours(
            "trainledger.checkpoint.writer_process", close_fds=True, pass_fds=(self._memory.fd,)
        )

    def _release_memory(self) -> None:
        memory, self._memory = self._memory, None
        if memory is not None:
            memory.close()

    def save(
        self,
        path: Path,
        named: NamedTensors,
        info: dict[str, Any],
        enc_key: bytes | None = None,
        enc_mode: str = "AES-GCM",
    ) -> None:
        import torch

        from trainledger.checkpoint.torch_adapter import _TO_ST, copy_all

        if self._inflight is not None:
            raise RuntimeError("a checkpoint save is in flight; call wait() first")
        specs = []
        offset = 0
        for name, t in named:
            if t.dtype not in _TO_ST:
                raise TypeError(f"tensor {name!r}: {t.dtype} cannot be stored")
            nbytes = t.numel() * t.element_size()
            specs.append([name, _TO_ST[t.dtype], list(t.shape), offset, nbytes])
            offset += -(-nbytes // 64) * 64  # keep every tensor aligned
        self._ensure_child()
        if self._memory is None:  # only when _ensure_child is replaced (tests)
            self._memory = SnapshotMemory()
        whole = torch.frombuffer(self._memory.reserve(offset), dtype=torch.uint8)
        copy_all(
            [
                (whole[start : start + nbytes].view(t.dtype).view(t.shape), t)
                for (_, t), (_, _, _, start, nbytes) in zip(named, specs, strict=True)
                if nbytes
            ]
        )
        del whole
        message = {
            "op": "save",
            "path": str(path),
            "fd": self._memory.fd,
            "size": self._memory.size,
            "tensors": specs,
            "info": info,
            "enc_key": enc_key.hex() if enc_key else None,
            "enc_mode": enc_mode,
        }
        try:
            send_message(self._proc.stdin, message)
        except OSError as exc:
            self._proc = None
            raise CheckpointWriteError(f"save of {path} failed: the writer process died") from exc
        self._inflight = path

    def wait(self) -> Path | None:
        """Wait for the child's reply; the committed path, or raise the child's error."""
        path, self._inflight = self._inflight, None
        if path is None:
            return None
        reply = recv_message(self._proc.stdout)
        if reply is None:
            self._proc = None
            raise CheckpointWriteError(f"background save of {path} failed: the writer process died")
        if not reply.get("ok"):
            raise CheckpointWriteError(f"background save of {path} failed: {reply.get('error')}")
        return path

    def close(self) -> None:
        try:
            self.wait()
        finally:
            proc, self._proc = self._proc, None
            if proc is not None:
                try:
                    proc.stdin.close()  # EOF: the child exits
                except OSError:
                    pass
                try:
                    proc.wait(timeout=30)
                except Exception:
                    proc.kill()
                    proc.wait()
                proc.stdout.close()
            self._release_memory()


def send_message(stream: Any, message: dict[str, Any]) -> None:
    """One length-prefixed JSON message (the only thing that crosses to the writer process)."""
    data = json.dumps(message).encode()
    stream.write(struct.pack("<I", len(data)) + data)
    stream.flush()


def recv_message(stream: Any) -> dict[str, Any] | None:
    """The next message, or None at end of stream."""
    head = stream.read(4)
    if len(head) < 4:
        return None
    (n,) = struct.unpack("<I", head)
    data = stream.read(n)
    if len(data) < n:
        return None
    result: dict[str, Any] = json.loads(data)
    return result


def make_saver(mode: bool | str) -> SyncSaver | ThreadSaver | ProcessSaver:
    """The saver for a ``CheckpointConfig.async_save`` value."""
    if mode is False or mode is None:
        return SyncSaver()
    if mode is True or mode == "thread":
        return ThreadSaver()
    if mode == "process":
        return ProcessSaver()
    raise ValueError(f"async_save expected a bool, 'thread' or 'process', received: {mode!r}")
