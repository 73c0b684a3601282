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
non-tensor optimizer state and the crc32c of the tensor bytes.
"""

from __future__ import annotations

import io
import json
import os
import struct
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

import crc32c as _crc32c

from trainledger.errors import CheckpointDecryptError, CheckpointFormatError
from trainledger.storage import atomic_write, is_temp_name, run_chunks

__all__ = [
    "DTYPE_SIZES",
    "FORMAT_VERSION",
    "META_KEY",
    "Container",
    "Entry",
    "RawTensor",
    "numpy_to_raw",
    "raw_to_numpy",
    "read_container",
    "read_info",
    "save_container",
    "write_container",
]

FORMAT_VERSION = 1
META_KEY = "trainledger"
_MAX_HEADER = 100 * 1024 * 1024  # the safetensors library's own limit

# safetensors dtype name -> bytes per element
DTYPE_SIZES: dict[str, int] = {
    "F64": 8,
    "F32": 4,
    "F16": 2,
    "BF16": 2,
    "F8_E4M3": 1,
    "F8_E5M2": 1,
    "I64": 8,
    "I32": 4,
    "I16": 2,
    "I8": 1,
    "U64": 8,
    "U32": 4,
    "U16": 2,
    "U8": 1,
    "BOOL": 1,
}

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


@dataclass(frozen=True)
class RawTensor:
    """A tensor at the byte level: safetensors dtype name, shape, C-order bytes."""

    dtype: str
    shape: tuple[int, ...]
    data: memoryview  # 1-D, format "B", exactly numel * itemsize bytes


@dataclass(frozen=True)
class Entry:
    """Where one tensor lives inside a container's byte buffer."""

    name: str
    dtype: str
    shape: tuple[int, ...]
    begin: int
    end: int


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


def encode_header(
    entries: Sequence[Entry], info: dict[str, Any], extra_metadata: dict[str, str] | None = None
) -> bytes:
    """The padded JSON header (with its length prefix) for ``entries`` and ``info``."""
    header: dict[str, Any] = {}
    for e in entries:
        if e.name == "__metadata__":
            raise ValueError("'__metadata__' is reserved by the safetensors format")
        header[e.name] = {
            "dtype": e.dtype,
            "shape": list(e.shape),
            "data_offsets": [e.begin, e.end],
        }
    metadata = {"format": "pt", **(extra_metadata or {})}
    metadata[META_KEY] = json.dumps({"format_version": FORMAT_VERSION, **info}, allow_nan=True)
    header["__metadata__"] = metadata
    raw = json.dumps(header, separators=(",", ":")).encode()
    raw += b" " * (-(8 + len(raw)) % 8)
    return struct.pack("<Q", len(raw)) + raw


# how the crc placeholder appears in the encoded header: inner JSON, escaped inside the outer
_CRC_TOKEN = json.dumps(json.dumps({"crc32c": "00000000"})[1:-1])[1:-1].encode()
_CRC_DIGITS = _CRC_TOKEN.rindex(b"00000000")


def _crc_of(items: Sequence[tuple[str, RawTensor]], order: Sequence[int]) -> int:
    crc = 0
    for i in order:
        crc = _crc32c.crc32c(items[i][1].data, crc)  # releases the GIL for large buffers
    return crc


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
    base = {k: v for k, v in (info or {}).items() if k not in ("crc32c", "tensor_bytes")}
    if not _seekable(fh):
        crc = _crc_of(items, order)
        head = encode_header(
            entries, {**base, "tensor_bytes": total, "crc32c": f"{crc:08x}"}, extra_metadata
        )
        fh.write(head)
        for i in order:
            if items[i][1].data.nbytes:
                fh.write(items[i][1].data)
        return len(head) + total
    head = encode_header(
        entries, {**base, "tensor_bytes": total, "crc32c": "00000000"}, extra_metadata
    )
    slot = head.rindex(_CRC_TOKEN) + _CRC_DIGITS  # "crc32c" is the header's last key
    result: list[int] = []
    worker = threading.Thread(
        target=lambda: result.append(_crc_of(items, order)), name="trainledger-crc32c", daemon=True
    )
    start = fh.tell()
    worker.start()
    try:
        fh.write(head)
        for i in order:
            if items[i][1].data.nbytes:
                fh.write(items[i][1].data)
    finally:
        worker.join()
    if not result:
        raise CheckpointFormatError("computing the crc32c of the tensor bytes failed")
    end = fh.tell()
    fh.seek(start + slot)
    fh.write(f"{result[0]:08x}".encode())
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


def _parse_header(raw: bytes, where: str) -> tuple[list[Entry], dict[str, str], dict[str, Any]]:
    try:
        header = json.loads(raw)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise CheckpointFormatError(f"{where}: header is not valid JSON ({exc})") from exc
    if not isinstance(header, dict):
        raise CheckpointFormatError(f"{where}: expected a JSON object header")
    metadata = header.pop("__metadata__", None) or {}
    entries: list[Entry] = []
    try:
        for name, spec in header.items():
            begin, end = (int(x) for x in spec["data_offsets"])
            entries.append(
                Entry(name, str(spec["dtype"]), tuple(int(d) for d in spec["shape"]), begin, end)
            )
    except (KeyError, TypeError, ValueError) as exc:
        raise CheckpointFormatError(f"{where}: malformed tensor entry ({exc})") from exc
    info: dict[str, Any] = {}
    if META_KEY in metadata:
        try:
            info = json.loads(metadata[META_KEY])
        except json.JSONDecodeError as exc:
            raise CheckpointFormatError(f"{where}: trainledger header is not JSON") from exc
    return entries, metadata, info


def _validate(entries: list[Entry], data_len: int, where: str) -> None:
    for e in entries:
        size = DTYPE_SIZES.get(e.dtype)
        numel = 1
        for dim in e.shape:
            numel *= dim
        if size is None:
            raise CheckpointFormatError(f"{where}: tensor {e.name!r} has unknown dtype {e.dtype}")
        if e.end - e.begin != numel * size or e.begin < 0 or e.end > data_len:
            raise CheckpointFormatError(
                f"{where}: tensor {e.name!r} offsets [{e.begin}, {e.end}) do not fit shape "
                f"{e.shape} {e.dtype} in {data_len} data bytes (truncated or corrupt file)"
            )


def _split(buf: memoryview, where: str) -> tuple[int, memoryview]:
    if len(buf) < 8:
        raise CheckpointFormatError(f"{where}: file too short to be a checkpoint")
    (n,) = struct.unpack("<Q", buf[:8])
    if n > _MAX_HEADER or 8 + n > len(buf):
        raise CheckpointFormatError(f"{where}: header length {n} exceeds the file (truncated?)")
    return n, buf[8 : 8 + n]


def check_crc(container: Container, where: str) -> None:
    """Verify the crc32c recorded at save time (files from other writers have none)."""
    expected = container.info.get("crc32c")
    if expected is None:
        return
    crc = 0
    for e in sorted(container.entries, key=lambda e: e.begin):
        crc = _crc32c.crc32c(container.data[e.begin : e.end], crc)
    if f"{crc:08x}" != expected:
        raise CheckpointFormatError(
            f"{where}: crc32c mismatch (expected {expected}, computed {crc:08x}); "
            "the file is corrupt"
        )


def read_container(
    path: str | os.PathLike[str],
    dec_key: bytes | None = None,
    dec_mode: str = "AES-GCM",
    crc_check: bool = False,
    allocate: Callable[[int], Any] = bytearray,
) -> Container:
    """Read a whole container; ``allocate(n)`` gives the writable buffer for the tensor bytes."""
    from trainledger.checkpoint import crypto

    where = str(path)
    with open(path, "rb") as fh:
        first = fh.read(8)
        if crypto.is_encrypted_prefix(first):
            if dec_key is None:
                raise CheckpointDecryptError(f"{where} is encrypted; pass dec_key to load it")
            fh.seek(0)
            plain = crypto.decrypt_file(fh, dec_key, dec_mode, where)
            view = memoryview(plain)
            n, raw = _split(view, where)
            entries, metadata, info = _parse_header(bytes(raw), where)
            data = view[8 + n :]
            owner: Any = plain
        else:
            if dec_key is not None:
                raise CheckpointDecryptError(
                    f"{where} is not encrypted, but dec_key was given; load it without dec_key"
                )
            if len(first) < 8:
                raise CheckpointFormatError(f"{where}: file too short to be a checkpoint")
            (n,) = struct.unpack("<Q", first)
            size = os.fstat(fh.fileno()).st_size
            if n > _MAX_HEADER or 8 + n > size:
                raise CheckpointFormatError(
                    f"{where}: header length {n} exceeds the file (truncated?)"
                )
            entries, metadata, info = _parse_header(fh.read(n), where)
            data_len = size - 8 - n
            owner = allocate(data_len)
            data = memoryview(owner).cast("B") if data_len else memoryview(b"")
            got = _read_at(fh, data, 8 + n) if data_len else 0
            if got != data_len:
                raise CheckpointFormatError(f"{where}: short read ({got} of {data_len} bytes)")
    _validate(entries, len(data), where)
    expected_len = info.get("tensor_bytes")
    if expected_len is not None and expected_len != len(data):
        raise CheckpointFormatError(
            f"{where}: expected {expected_len} tensor bytes, found {len(data)} (truncated?)"
        )
    container = Container(entries, metadata, info, data, owner)
    if crc_check:
        check_crc(container, where)
    return container


# Reads of tensor bytes above this size are split between threads (``_parallel``): with the
# file in the page cache a read is a memory copy plus page faults on the fresh buffer, both of
# which run in parallel.
_PARALLEL_READ_MIN = 64 << 20
_READ_CHUNK = 16 << 20


def _read_at(fh: io.BufferedReader, data: memoryview, offset: int) -> int:
    """Fill ``data`` from the file at ``offset``; the number of bytes read (short at EOF)."""
    preadv = getattr(os, "preadv", None)
    if preadv is None or len(data) < _PARALLEL_READ_MIN:
        fh.seek(offset)
        return fh.readinto(data) or 0
    fd = fh.fileno()
    count = -(-len(data) // _READ_CHUNK)
    got = [0] * count

    def read_chunk(i: int) -> None:
        view = data[i * _READ_CHUNK : (i + 1) * _READ_CHUNK]
        pos = 0
        while pos < len(view):
            k = preadv(fd, [view[pos:]], offset + i * _READ_CHUNK + pos)
            if k == 0:
                break  # end of file: a truncated checkpoint, reported by the caller
            pos += k
        got[i] = pos

    run_chunks(count, read_chunk)
    return sum(got)


def read_info(
    path: str | os.PathLike[str], dec_key: bytes | None = None, dec_mode: str = "AES-GCM"
) -> dict[str, Any]:
    """The trainledger header of a checkpoint, reading only the header of a plain file."""
    from trainledger.checkpoint import crypto

    where = str(path)
    with open(path, "rb") as fh:
        first = fh.read(8)
        if crypto.is_encrypted_prefix(first):
            return read_container(path, dec_key, dec_mode).info
        if len(first) < 8:
            raise CheckpointFormatError(f"{where}: file too short to be a checkpoint")
        (n,) = struct.unpack("<Q", first)
        if n > _MAX_HEADER:
            raise CheckpointFormatError(f"{where}: header length {n} is not plausible")
        raw = fh.read(n)
        if len(raw) != n:
            raise CheckpointFormatError(f"{where}: truncated header")
    return _parse_header(raw, where)[2]


def is_checkpoint_path(path: Path) -> bool:
    """A final (non-temp) checkpoint file name."""
    return path.suffix in {".ckpt", ".safetensors"} and not is_temp_name(path.name)
