"""The checkpoint container: a safetensors file whose metadata carries trainledger's JSON header.

Why our own writer: the ``safetensors`` library builds the whole file in memory before writing
it, which doubles peak memory and is slower than ``torch.save``. This module streams each
tensor's bytes straight into the file. It works at the byte level (a dtype name, a shape and a
buffer), so it needs neither torch nor pickle: the crash test and the spawned async writer use
it without importing torch.

Layout (the safetensors format, which the plain library reads)::

    u64 LE n | n bytes of JSON (padded with spaces to a multiple of 8) | tensor bytes

The JSON maps each tensor name to ``{"dtype", "shape", "data_offsets": [begin, end]}`` (offsets
relative to the byte buffer) and ``__metadata__`` (str -> str) holds ``"format": "pt"`` and
``"trainledger"``: a JSON object with the format version, epoch/step, append_info, the
non-tensor optimizer state, the crc32c of the tensor bytes and that of the header itself
(``header.py``: the header and the checks that a file is as written).
"""

from __future__ import annotations

import io
import os
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO, Protocol

import crc32c as _crc32c

from trainledger.checkpoint.header import (
    DTYPE_SIZES,
    FORMAT_VERSION,
    META_KEY,
    Entry,
    crc32c_combine,
    crc_of,
    encode_header,
    parse_header,
    seal_header,
    split_prefix,
    tensor_crc,
    validate_entries,
    verify_tensor_crc,
)
from trainledger.errors import CheckpointDecryptError, CheckpointFormatError
from trainledger.storage import atomic_write, is_temp_name, run_chunks

__all__ = [
    "DTYPE_SIZES",
    "FORMAT_VERSION",
    "META_KEY",
    "Container",
    "DataTarget",
    "Entry",
    "RawTensor",
    "numpy_to_raw",
    "raw_to_numpy",
    "read_container",
    "read_info",
    "save_container",
    "write_container",
]

_NUMPY_TO_DTYPE = {
    "float64": "F64",
    "float32": "F32",
    "float16": "F16",
    "int64": "I64",
    "int32": "I32",
    "int16": "I16",
    "int8": "I8",
    "uint64": "U64",
    "uint32": "U32",
    "uint16": "U16",
    "uint8": "U8",
    "bool": "BOOL",
}
_DTYPE_TO_NUMPY = {v: k for k, v in _NUMPY_TO_DTYPE.items()}


class StreamedBytes(Protocol):
    """Bytes that reach the host piece by piece while they are written (a GPU tensor staged
    through a small pinned ring, ``torch_adapter.DeviceBytes``): ``chunks()`` yields them in
    order, each valid until the next one is asked for."""

    @property
    def nbytes(self) -> int: ...

    def chunks(self) -> Iterator[memoryview]: ...


class DataTarget(Protocol):
    """Where ``read_container`` puts the tensor bytes instead of one host buffer (a GPU,
    ``torch_adapter.DeviceTarget``): each chunk is read into ``slot(position, n)``, a host
    buffer of the reading thread, then handed to ``place(position, view)``; ``finish()``
    returns once every chunk has arrived."""

    def slot(self, position: int, n: int) -> memoryview: ...

    def place(self, position: int, view: memoryview) -> None: ...

    def finish(self) -> None: ...


@dataclass(frozen=True)
class RawTensor:
    """A tensor at the byte level: safetensors dtype name, shape, C-order bytes."""

    dtype: str
    shape: tuple[int, ...]
    data: memoryview | StreamedBytes  # 1-D, format "B", exactly numel * itemsize bytes


@dataclass
class Container:
    """A read container: tensor entries, metadata, the trainledger header and the byte buffer."""

    entries: list[Entry]
    metadata: dict[str, str]
    info: dict[str, Any]
    data: memoryview = field(repr=False)
    owner: Any = field(default=None, repr=False)  # the object that owns ``data``'s memory


def numpy_to_raw(array: Any) -> RawTensor:
    """Byte view of a numpy array (copied only if it is not C-contiguous)."""
    import numpy as np

    arr = np.ascontiguousarray(array)
    dtype = _NUMPY_TO_DTYPE.get(arr.dtype.name)
    if dtype is None:
        raise TypeError(
            f"numpy dtype {arr.dtype.name} cannot be stored; expected one of "
            f"{', '.join(_NUMPY_TO_DTYPE)}"
        )
    flat: Any = arr.reshape(-1).view(np.uint8)
    return RawTensor(dtype, tuple(arr.shape), memoryview(flat))


def raw_to_numpy(entry: Entry, data: memoryview) -> Any:
    """A numpy view of one entry (no copy); bfloat16/float8 have no numpy dtype."""
    import numpy as np

    name = _DTYPE_TO_NUMPY.get(entry.dtype)
    if name is None:
        raise TypeError(f"dtype {entry.dtype} has no numpy equivalent; load it with torch")
    return np.frombuffer(data[entry.begin : entry.end], dtype=name).reshape(entry.shape)


def _layout(tensors: Sequence[tuple[str, RawTensor]]) -> tuple[list[Entry], list[int]]:
    """Byte offsets in data order: widest element first, so every tensor stays aligned."""
    order = sorted(range(len(tensors)), key=lambda i: -DTYPE_SIZES[tensors[i][1].dtype])
    begins: dict[int, int] = {}
    offset = 0
    for i in order:
        begins[i] = offset
        offset += tensors[i][1].data.nbytes
    entries = [
        Entry(name, raw.dtype, raw.shape, begins[i], begins[i] + raw.data.nbytes)
        for i, (name, raw) in enumerate(tensors)
    ]
    return entries, order


def _check_raw(name: str, raw: RawTensor) -> None:
    size = DTYPE_SIZES.get(raw.dtype)
    if size is None:
        raise TypeError(f"tensor {name!r}: unknown dtype {raw.dtype!r}")
    numel = 1
    for dim in raw.shape:
        numel *= dim
    if raw.data.nbytes != numel * size:
        raise ValueError(
            f"tensor {name!r}: expected {numel * size} bytes for shape {raw.shape} "
            f"{raw.dtype}, received {raw.data.nbytes}"
        )


def _pieces(data: memoryview | StreamedBytes) -> Iterator[memoryview]:
    if isinstance(data, memoryview):
        yield data
    else:
        yield from data.chunks()


def _materialized(items: list[tuple[str, RawTensor]]) -> list[tuple[str, RawTensor]]:
    """Streamed bytes gathered into host memory: for a writer that needs the checksum before
    the bytes (the encrypting one, which cannot seek back)."""
    out = []
    for name, raw in items:
        if not isinstance(raw.data, memoryview):
            # each piece copied while it is valid (the next one reuses its buffer)
            data = b"".join([bytes(piece) for piece in raw.data.chunks()])
            raw = RawTensor(raw.dtype, raw.shape, memoryview(data))
        out.append((name, raw))
    return out


def _write_streamed(
    fh: BinaryIO, items: list[tuple[str, RawTensor]], order: list[int]
) -> tuple[int, list[int]]:
    """Write the tensor bytes piece by piece, the checksum taken from each piece while it is
    at hand (a streamed piece is gone once the next is asked for); returns their crc32c and
    each tensor's."""
    crc, each = 0, list[int]()
    for i in order:
        crc = tensor_crc(_pieces(items[i][1].data), items[i][1].data.nbytes, crc, each, fh.write)
    return crc, each


def _seekable(fh: Any) -> bool:
    try:
        return bool(fh.seekable())
    except (AttributeError, OSError, ValueError):
        return False


def write_container(
    fh: BinaryIO,
    tensors: Iterable[tuple[str, RawTensor]],
    info: dict[str, Any] | None = None,
    extra_metadata: dict[str, str] | None = None,
) -> int:
    """Stream a container into ``fh``; returns the number of bytes written.

    The crc32c of the tensor bytes (in data order) belongs in the header, which is written
    first. Into a seekable file, it is computed on a second thread while the bytes are written,
    and patched into a fixed-width placeholder at the end (so it costs no wall time); otherwise
    (the encrypting writer) in a first pass (~10 GB/s, a few percent of a disk write).
    """
    items = list(tensors)
    names = set()
    for name, raw in items:
        if name in names:
            raise ValueError(f"duplicate tensor name {name!r}")
        names.add(name)
        _check_raw(name, raw)
    entries, order = _layout(items)
    total = sum(raw.data.nbytes for _, raw in items)
    head = encode_header(entries, {**(info or {}), "tensor_bytes": total}, extra_metadata)
    streamed = any(not isinstance(raw.data, memoryview) for _, raw in items)
    if streamed and _seekable(fh):
        start = fh.tell()
        fh.write(head)
        crc, each = _write_streamed(fh, items, order)
        end = fh.tell()
        fh.seek(start)
        fh.write(seal_header(head, crc, each))  # same length: only the placeholders change
        fh.seek(end)
        return len(head) + total
    if streamed:
        items = _materialized(items)
    sizes = [items[i][1].data.nbytes for i in order]
    if not _seekable(fh):
        head = seal_header(head, *crc_of([_pieces(items[i][1].data) for i in order], sizes))
        fh.write(head)
        for i in order:
            for piece in _pieces(items[i][1].data):
                fh.write(piece)
        return len(head) + total
    result: list[tuple[int, list[int]]] = []
    worker = threading.Thread(
        target=lambda: result.append(crc_of([_pieces(items[i][1].data) for i in order], sizes)),
        name="trainledger-crc32c",
        daemon=True,
    )
    start = fh.tell()
    worker.start()
    try:
        fh.write(head)
        for i in order:
            for piece in _pieces(items[i][1].data):
                fh.write(piece)
    finally:
        worker.join()
    if not result:
        raise CheckpointFormatError("computing the crc32c of the tensor bytes failed")
    end = fh.tell()
    fh.seek(start)
    fh.write(seal_header(head, *result[0]))  # same length: only the placeholders change
    fh.seek(end)
    return len(head) + total


def save_container(
    path: str | os.PathLike[str],
    tensors: Iterable[tuple[str, RawTensor]],
    info: dict[str, Any] | None = None,
    enc_key: bytes | None = None,
    enc_mode: str = "AES-GCM",
) -> None:
    """Atomically write a (possibly encrypted) container to ``path``."""
    with atomic_write(path) as fh:
        if enc_key is None:
            write_container(fh, tensors, info)
        else:
            from trainledger.checkpoint.crypto import EncryptingWriter

            with EncryptingWriter(fh, enc_key, enc_mode) as enc:
                write_container(enc, tensors, info)  # type: ignore[arg-type]


# --- reading ------------------------------------------------------------------------------


def read_container(
    path: str | os.PathLike[str],
    dec_key: bytes | None = None,
    dec_mode: str = "AES-GCM",
    crc_check: bool = True,
    allocate: Callable[[int], Any] = bytearray,
    target: Callable[[int], DataTarget] | None = None,
) -> Container:
    """Read a whole container; ``allocate(n)`` gives the writable buffer for the tensor bytes,
    or ``target(n)`` takes them chunk by chunk (then ``data`` is empty and ``owner`` is the
    target; an encrypted file, decrypted in memory first, still uses ``allocate``).

    Any damage is a ``CheckpointFormatError``: the header is always checked (``header.py``),
    the tensor bytes against their crc32c unless ``crc_check=False`` (computed by the threads
    that read them, at memory speed; an encrypted file is authenticated by its cipher anyway).
    """
    from trainledger.checkpoint import crypto

    where = str(path)
    crc: int | None = None
    with open(path, "rb") as fh:
        first = fh.read(8)
        if crypto.is_encrypted_prefix(first):
            if dec_key is None:
                raise CheckpointDecryptError(f"{where} is encrypted; pass dec_key to load it")
            fh.seek(0)
            plain = crypto.decrypt_file(fh, dec_key, dec_mode, where)
            view = memoryview(plain)
            n = split_prefix(bytes(view[:8]), len(view), where)
            entries, metadata, info = parse_header(bytes(view[:8]), bytes(view[8 : 8 + n]), where)
            data = view[8 + n :]
            owner: Any = plain
            validate_entries(entries, info, len(data), where)
            if crc_check:
                crc = _crc32c.crc32c(data)
        else:
            if dec_key is not None:
                raise CheckpointDecryptError(
                    f"{where} is not encrypted, but dec_key was given; load it without dec_key"
                )
            size = os.fstat(fh.fileno()).st_size
            n = split_prefix(first, size, where)
            raw = fh.read(n)
            entries, metadata, info = parse_header(first, raw, where)
            data_len = size - 8 - n
            validate_entries(entries, info, data_len, where)
            if target is not None:
                owner, data = target(data_len), memoryview(b"")
                got, crc = _read_chunks(fh, 8 + n, data_len, crc_check, owner.slot, owner.place)
                owner.finish()
            else:
                owner = allocate(data_len)
                data = memoryview(owner).cast("B") if data_len else memoryview(b"")
                got, crc = _read_chunks(
                    fh, 8 + n, data_len, crc_check, lambda at, k: data[at : at + k], _kept
                )
            if got != data_len:
                raise CheckpointFormatError(f"{where}: short read ({got} of {data_len} bytes)")
    if crc is not None:
        verify_tensor_crc(info, crc, where)
    return Container(entries, metadata, info, data, owner)


# Reads of tensor bytes above this size are split between threads (``run_chunks``): with the
# file in the page cache a read is a memory copy plus page faults on the fresh buffer, both of
# which run in parallel, and so does the crc32c of each chunk, while it is still in cache.
_PARALLEL_READ_MIN = 64 << 20
_READ_CHUNK = 16 << 20


def _kept(position: int, view: memoryview) -> None:
    """Chunks read into their place in the caller's buffer need nothing more."""


def _read_chunks(
    fh: io.BufferedReader,
    offset: int,
    length: int,
    crc_check: bool,
    slot: Callable[[int, int], memoryview],
    place: Callable[[int, memoryview], None],
) -> tuple[int, int | None]:
    """Read ``length`` bytes at ``offset``, each chunk into ``slot(position, n)`` and then
    handed to ``place``: (bytes read (short at EOF), their crc32c or None without
    ``crc_check``). Large reads are split between threads (``_PARALLEL_READ_MIN``)."""
    if not length:
        return 0, 0 if crc_check else None
    preadv = getattr(os, "preadv", None)
    size = _READ_CHUNK if preadv is not None and length >= _PARALLEL_READ_MIN else length
    count = -(-length // size)
    got = [0] * count
    crcs = [0] * count

    def read_chunk(i: int) -> None:
        view = slot(i * size, min(size, length - i * size))
        pos = 0
        while pos < len(view):
            if preadv is not None:
                k = preadv(fh.fileno(), [view[pos:]], offset + i * size + pos)
            else:  # one chunk, one thread
                fh.seek(offset + pos)
                k = fh.readinto(view[pos:]) or 0
            if k == 0:
                break  # end of file: a truncated checkpoint, reported by the caller
            pos += k
        got[i] = pos
        if crc_check:
            crcs[i] = _crc32c.crc32c(view[:pos])
        place(i * size, view[:pos])

    run_chunks(count, read_chunk)
    if not crc_check:
        return sum(got), None
    crc = crcs[0]
    for i in range(1, count):
        crc = crc32c_combine(crc, crcs[i], got[i])
    return sum(got), crc


def read_info(
    path: str | os.PathLike[str], dec_key: bytes | None = None, dec_mode: str = "AES-GCM"
) -> dict[str, Any]:
    """The trainledger header of a checkpoint, reading only the header of a plain file (which
    is verified; the tensor bytes are not read)."""
    from trainledger.checkpoint import crypto

    where = str(path)
    with open(path, "rb") as fh:
        first = fh.read(8)
        if crypto.is_encrypted_prefix(first):
            return read_container(path, dec_key, dec_mode).info
        n = split_prefix(first, os.fstat(fh.fileno()).st_size, where)
        raw = fh.read(n)
        if len(raw) != n:
            raise CheckpointFormatError(f"{where}: truncated header")
    return parse_header(first, raw, where)[2]


def is_checkpoint_path(path: Path) -> bool:
    """A final (non-temp) checkpoint file name."""
    return path.suffix in {".ckpt", ".safetensors"} and not is_temp_name(path.name)
