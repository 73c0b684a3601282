"""MindSpore's protobuf checkpoints (``.ckpt``, from ``save_checkpoint`` and ``ModelCheckpoint``).

Layout (MindSpore 1.x-2.x): serialised ``Checkpoint`` messages back to back, one per tensor
slice (a tensor over MindSpore's slice size is split along its bytes into consecutive values of
the same tag), optionally followed by ``b"crc_num"`` + a 10-byte big-endian CRC-32 of all the
bytes before it (``save_checkpoint(..., crc_check=True)``). By default MindSpore writes no
checksum, so a flipped value cannot be detected; only structural damage can.

Encrypted files (``enc_key``) are a sequence of blocks, each ``magic u32 LE`` then, for AES-GCM,
the 16-byte tag, then ``block_len i32 LE`` and ``iv_len i32 | iv | cipher_len i32 | cipher``
(little-endian); MindSpore 2.x seals GCM blocks with the IV's first 12 bytes. AES-GCM and
AES-CBC blocks are decrypted here (``cryptography``; both tested on files MindSpore 2.10
encrypted); SM4-CBC is refused. Keys are never logged or put in messages. The schema is our own
.proto with MindSpore's field numbers (``proto/mindspore_checkpoint.proto``).
"""

from __future__ import annotations

import codecs
import os
import struct
import zlib
from array import array
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from google.protobuf.message import DecodeError

from trainledger.errors import CheckpointDecryptError, CheckpointFormatError

__all__ = [
    "MS_DTYPES",
    "decrypt_mindspore",
    "is_mindspore_checkpoint",
    "read_mindspore_checkpoint",
]

#: MindSpore's ``tensor_type`` names -> torch dtype names (``str`` values become Python str).
MS_DTYPES = {
    "Bool": "bool",
    "Int8": "int8",
    "UInt8": "uint8",
    "Int16": "int16",
    "UInt16": "uint16",
    "Int32": "int32",
    "UInt32": "uint32",
    "Int64": "int64",
    "UInt64": "uint64",
    "Float16": "float16",
    "BFloat16": "bfloat16",
    "Float32": "float32",
    "Float64": "float64",
}
_MAGICS = {0x7F3A5ED8: "AES-GCM", 0x7F3A5ED9: "AES-CBC", 0x7F3A5EDA: "SM4-CBC"}
_CRC_MARK = b"crc_num"
_TRAILER = len(_CRC_MARK) + 10


def _encryption_mode(prefix: bytes) -> str | None:
    if len(prefix) < 4:
        return None
    return _MAGICS.get(struct.unpack_from("<I", prefix)[0])


def is_mindspore_checkpoint(prefix: bytes) -> bool:
    """Whether a file starting with ``prefix`` (at least 16 bytes when the file has them) is a
    MindSpore checkpoint: an encryption magic, or a protobuf ``Checkpoint.value`` (``0x0A``,
    a length, then the value's ``tag`` field ``0x0A``). Our own container starts with an 8-byte
    header length followed by ``{``, which this never matches."""
    if _encryption_mode(prefix) is not None:
        return True
    if len(prefix) < 3 or prefix[0] != 0x0A or prefix[8:9] == b"{":
        return False
    pos = 1
    while pos < len(prefix) and prefix[pos] & 0x80:  # the value's length (a varint)
        pos += 1
    return pos + 1 < len(prefix) and prefix[pos + 1] == 0x0A


def decrypt_mindspore(data: bytes, key: bytes, where: str) -> bytes:
    """Plain bytes of a checkpoint MindSpore encrypted (``enc_key``); the mode is read from the
    blocks' magic. Wrong key or damaged blocks -> ``CheckpointDecryptError``."""
    from cryptography.exceptions import InvalidTag
    from cryptography.hazmat.primitives import padding
    from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM

    if not isinstance(key, (bytes, bytearray)) or len(key) not in (16, 24, 32):
        raise CheckpointDecryptError(
            f"{where}: dec_key expected 16, 24 or 32 bytes (AES), received "
            + (f"{len(key)} bytes" if isinstance(key, (bytes, bytearray)) else type(key).__name__)
        )
    out, pos = [], 0
    try:
        while pos < len(data):
            mode = _encryption_mode(data[pos : pos + 4])
            if mode is None or mode == "SM4-CBC":
                found = "SM4-CBC, which trainledger cannot decrypt" if mode else "no block magic"
                raise CheckpointDecryptError(
                    f"{where}: expected an AES-GCM or AES-CBC block at byte {pos}, found {found}"
                )
            pos += 4
            tag = b""
            if mode == "AES-GCM":
                tag, pos = data[pos : pos + 16], pos + 16
            (block_len,) = struct.unpack_from("<i", data, pos)
            block, pos = data[pos + 4 : pos + 4 + block_len], pos + 4 + block_len
            (iv_len,) = struct.unpack_from("<i", block, 0)
            iv = block[4 : 4 + iv_len]
            (cipher_len,) = struct.unpack_from("<i", block, 4 + iv_len)
            cipher = block[8 + iv_len : 8 + iv_len + cipher_len]
            if len(tag) != (16 if mode == "AES-GCM" else 0) or len(cipher) != cipher_len:
                raise CheckpointFormatError(f"{where}: encrypted block at byte {pos} is truncated")
            if mode == "AES-GCM":
                out.append(_gcm_decrypt(AESGCM(bytes(key)), iv, cipher + tag, InvalidTag))
            else:
                dec = Cipher(algorithms.AES(bytes(key)), modes.CBC(iv)).decryptor()
                unpad = padding.PKCS7(128).unpadder()
                out.append(unpad.update(dec.update(cipher) + dec.finalize()) + unpad.finalize())
    except (InvalidTag, ValueError, struct.error) as exc:
        if isinstance(exc, (CheckpointDecryptError, CheckpointFormatError)):
            raise
        raise CheckpointDecryptError(
            f"{where}: could not decrypt with the given dec_key (wrong key, or a damaged file)"
        ) from None
    return b"".join(out)


def _gcm_decrypt(aead: Any, iv: bytes, sealed: bytes, invalid: type[Exception]) -> bytes:
    """MindSpore stores a 16-byte IV but (2.x builds, OpenSSL's default IV length) seals with
    its first 12 bytes; builds that set the IV length use all 16. The tag tells which."""
    try:
        return bytes(aead.decrypt(iv[:12], sealed, None))
    except invalid:
        return bytes(aead.decrypt(iv, sealed, None))


def _check_crc(data: memoryview, where: str, required: bool) -> memoryview:
    """Strip and verify MindSpore's optional CRC trailer (``required``: refuse a file without)."""
    if len(data) >= _TRAILER and data[-_TRAILER:-10] == _CRC_MARK:
        body = data[:-_TRAILER]
        if zlib.crc32(body) != int.from_bytes(data[-10:], "big"):
            raise CheckpointFormatError(
                f"{where}: MindSpore CRC-32 mismatch (expected "
                f"{int.from_bytes(data[-10:], 'big')}, computed {zlib.crc32(body)}): damaged file"
            )
        return body
    if required:
        raise CheckpointFormatError(
            f"{where}: crc_check=True expected MindSpore's CRC trailer, but the file has none "
            "(saved without crc_check=True), so it cannot be verified"
        )
    return data


def read_mindspore_checkpoint(
    path: str | os.PathLike[str], dec_key: bytes | None = None, crc_check: bool = False
) -> dict[str, Any]:
    """``{name: torch.Tensor}`` (strings as ``str``) of a MindSpore checkpoint, with MindSpore's
    names, dtypes (bfloat16 and ints included) and shapes.

    Raises ``CheckpointFormatError`` for a truncated or structurally corrupt file (or a CRC
    mismatch when MindSpore wrote one; with ``crc_check``, also when it wrote none),
    ``CheckpointDecryptError`` for an encrypted file without ``dec_key`` or with the wrong one.
    """
    where = str(path)
    with open(path, "rb") as fh:
        data = fh.read()
    mode = _encryption_mode(data[:4])
    if mode is not None:
        if dec_key is None:
            raise CheckpointDecryptError(
                f"{where} is a MindSpore checkpoint encrypted with {mode}; pass dec_key to load it"
            )
        data = decrypt_mindspore(data, dec_key, where)
    elif dec_key is not None:
        raise CheckpointDecryptError(
            f"{where} is not encrypted, but dec_key was given; load it without dec_key"
        )
    return _read_values(_check_crc(memoryview(data), where, crc_check), where)


# A crafted file must cost no more than a small multiple of its size before it is refused
# (issue 49: 48 MB of tiny values cost 1.26 GB as one parsed message). So the records are
# parsed one at a time, twice: the first pass checks every value and keeps only each tensor's
# byte count (8 bytes a tensor), the second builds the tensors of a file known to be valid.


def _read_values(data: memoryview, where: str) -> dict[str, Any]:
    sizes = _check_values(data, where)
    out: dict[str, Any] = {}
    tensor: _Slices | None = None
    buf, pos, k = bytearray(), 0, -1
    for i, value in enumerate(_records(data, where)):
        if tensor is None or value.tag != tensor.tag:
            if tensor is not None:
                out[tensor.tag] = _build(tensor, buf)
            k += 1
            tensor = _first_slice(value, i, len(data), where)
            buf, pos = bytearray(sizes[k]), 0
        content = value.tensor.tensor_content
        buf[pos : pos + len(content)] = content
        pos += len(content)
    if tensor is not None:
        out[tensor.tag] = _build(tensor, buf)
    return out


def _records(data: memoryview, where: str) -> Iterator[Any]:
    """Each top-level ``Checkpoint.value`` record, parsed on its own."""
    from trainledger.checkpoint.proto import mindspore_checkpoint_pb2 as ckpt_pb

    parse = ckpt_pb.Checkpoint.Value.FromString
    pos, size = 0, len(data)
    while pos < size:
        if data[pos] != 0x0A:
            raise CheckpointFormatError(
                f"{where}: expected a Checkpoint.value record (0x0a) at byte {pos}, found "
                f"0x{data[pos]:02x} (truncated or corrupt file)"
            )
        length, shift, pos = 0, 0, pos + 1
        while pos < size and data[pos] & 0x80 and shift < 63:
            length |= (data[pos] & 0x7F) << shift
            pos, shift = pos + 1, shift + 7
        if pos >= size or data[pos] & 0x80:
            raise CheckpointFormatError(f"{where}: record length at byte {pos} is cut or too long")
        length |= data[pos] << shift
        pos += 1
        if pos + length > size:
            raise CheckpointFormatError(
                f"{where}: a record at byte {pos} declares {length} bytes, the file holds "
                f"{size - pos} more (truncated or corrupt file)"
            )
        try:
            yield parse(data[pos : pos + length])
        except DecodeError:
            raise CheckpointFormatError(
                f"{where}: expected a MindSpore Checkpoint.value record at byte {pos}, found "
                "undecodable bytes (truncated or corrupt file)"
            ) from None
        pos += length


def _check_values(data: memoryview, where: str) -> array[int]:
    """Check every value of the file, one record at a time; the byte count of each tensor
    (its slices joined). Nothing is kept of a record once it is checked."""
    sizes: array[int] = array("q")
    tensor: _Slices | None = None
    got = 0
    for i, value in enumerate(_records(data, where)):
        if tensor is None or value.tag != tensor.tag:
            if tensor is not None:
                sizes.append(_finish(tensor, got, where))
            tensor, got = _first_slice(value, i, len(data), where), 0
        content = value.tensor.tensor_content
        got += len(content)
        if got > tensor.limit:
            raise CheckpointFormatError(
                f"{where}: {tensor.tag!r} expected {tensor.limit} bytes for {tensor.kind}"
                f"{tensor.dims}, its slices hold more (corrupt file)"
            )
        if tensor.strings is not None:
            _decode(tensor, content, False, where)
    if tensor is None:
        raise CheckpointFormatError(f"{where}: expected MindSpore checkpoint values, found none")
    sizes.append(_finish(tensor, got, where))
    return sizes


#: the most dims a tensor may have (torch's own limit is 64)
MAX_DIMS = 64
#: bytes per element of each MindSpore dtype (no torch import to check a file)
_ITEMSIZE = {
    "Bool": 1, "Int8": 1, "UInt8": 1, "Int16": 2, "UInt16": 2, "Int32": 4, "UInt32": 4,
    "Int64": 8, "UInt64": 8, "Float16": 2, "BFloat16": 2, "Float32": 4, "Float64": 8,
}  # fmt: skip


def _element_count(dims: list[int], at_most: int) -> int | None:
    """The product of ``dims``, or None once it passes ``at_most``: never a big integer."""
    if 0 in dims:
        return 0
    count = 1
    for d in dims:
        count *= d
        if count > at_most:
            return None
    return count


@dataclass
class _Slices:
    """One tensor whose slices are being read: what its first record declared."""

    tag: str
    kind: str
    dims: list[int]
    limit: int  # the most bytes its slices may hold
    strings: Any = None  # an incremental UTF-32 decoder for a "str" value


def _first_slice(value: Any, index: int, file_size: int, where: str) -> _Slices:
    """Check a tensor's first record; refuse a declared size the file cannot hold before any
    slice is read (a crafted file declares petabytes)."""
    name = value.tag
    if not name:
        raise CheckpointFormatError(f"{where}: value {index} has no name (corrupt file)")
    which = value.WhichOneof("value")
    if which != "tensor":
        raise CheckpointFormatError(
            f"{where}: {name!r} is a MindSpore MapParameter, which trainledger cannot load"
            if which == "maptensor"
            else f"{where}: {name!r} holds no tensor (corrupt file)"
        )
    proto = value.tensor
    kind = proto.tensor_type
    if kind == "str":  # numpy's "U" strings: UTF-32 LE, NUL-padded
        return _Slices(name, kind, [], file_size, codecs.getincrementaldecoder("utf-32-le")())
    if kind not in _ITEMSIZE:
        raise CheckpointFormatError(
            f"{where}: {name!r} has dtype {kind!r}; expected one of {', '.join(MS_DTYPES)}"
        )
    if len(proto.dims) > MAX_DIMS:  # bounded before any arithmetic (a file: 100,000)
        raise CheckpointFormatError(
            f"{where}: {name!r} expected at most {MAX_DIMS} dims, found {len(proto.dims)}"
        )
    dims = list(proto.dims)
    if dims and min(dims) < 0:
        raise CheckpointFormatError(f"{where}: {name!r} has negative dims {dims}")
    itemsize = _ITEMSIZE[kind]
    count = _element_count(dims, file_size // itemsize)
    if count is None:
        raise CheckpointFormatError(
            f"{where}: {name!r} expected more than the file holds for {kind}{dims}, "
            f"found a file of {file_size} bytes (corrupt file)"
        )
    # MindSpore writes a scalar's dims as [0]: one element, or none
    return _Slices(name, kind, dims, itemsize if dims == [0] else count * itemsize)


def _decode(tensor: _Slices, content: bytes, final: bool, where: str) -> None:
    """Check a string's next slice (its text is made once the whole file is checked)."""
    try:
        tensor.strings.decode(content, final)
    except UnicodeDecodeError:
        raise CheckpointFormatError(f"{where}: {tensor.tag!r} is not a valid string") from None


def _finish(tensor: _Slices, got: int, where: str) -> int:
    """Check a tensor's slices held what its dims declared; their byte count."""
    if tensor.strings is not None:
        _decode(tensor, b"", True, where)
    elif got != tensor.limit and not (tensor.dims == [0] and got == 0):
        raise CheckpointFormatError(
            f"{where}: {tensor.tag!r} expected {tensor.limit} bytes for {tensor.kind}"
            f"{tensor.dims}, found {got} (truncated or corrupt file)"
        )
    return got


def _build(tensor: _Slices, content: bytearray) -> Any:
    """The value of a checked tensor from its joined bytes (shared, not copied)."""
    import torch

    if tensor.kind == "str":
        return content.decode("utf-32-le").rstrip("\x00")
    dtype = getattr(torch, MS_DTYPES[tensor.kind])
    dims = [] if tensor.dims == [0] and content else tensor.dims
    if not content:
        return torch.empty(dims, dtype=dtype)
    return torch.frombuffer(content, dtype=dtype).reshape(dims)
