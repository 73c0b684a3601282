"""Encrypted checkpoints: authenticated encryption of the container bytes (``cryptography``).

Why chunks: a checkpoint can be larger than memory we want to double, and one GCM message is
limited to ~64 GB. Each chunk is sealed on its own, and its associated data binds the file
header, the chunk index and a last-chunk flag, so a reordered, dropped, duplicated, appended or
truncated chunk fails authentication instead of yielding garbage tensors.

A per-file key is derived with HKDF from the user key and a random salt stored in the header,
so chunk nonces can be a plain counter without ever repeating under one key.

File layout::

    header (32 bytes) = b"TLCKENC\\x01" | mode u8 | 3 reserved | chunk_size u32 LE | salt (16)
    AES-GCM: chunk_i = AESGCM(key_i).encrypt(nonce=i, chunk, aad=header | u64 i | u8 last) ...
    AES-CBC: iv (16) | AES-CBC(PKCS7(plaintext)) | HMAC-SHA256(header | iv | ciphertext)

AES-CBC is encrypt-then-MAC: the HMAC is verified over the whole ciphertext before anything is
decrypted. Keys are never logged or put in messages.

``cryptography`` is an optional dependency (the ``torch`` extra): it is imported inside the
functions that encrypt or decrypt, so plain checkpoints and ``check_key`` never need it.
"""

from __future__ import annotations

import hmac
import os
import struct
from typing import Any, BinaryIO

from trainledger.errors import CheckpointDecryptError

__all__ = [
    "ENC_MODES",
    "MAGIC",
    "EncryptingWriter",
    "check_key",
    "decrypt_file",
    "is_encrypted_prefix",
]

MAGIC = b"TLCKENC\x01"
ENC_MODES = {"AES-GCM": 1, "AES-CBC": 2}
HEADER_SIZE = 32
CHUNK_SIZE = 4 * 1024 * 1024
_TAG = 16
_MAC = 32
_INFO = b"trainledger checkpoint v1"


def is_encrypted_prefix(first: bytes) -> bool:
    """Whether the first 8 bytes of a file mark an encrypted checkpoint."""
    return first[:8] == MAGIC


def check_key(key: object, mode: object, what: str = "enc_key") -> None:
    """Raise a clear error for a key or mode the cipher cannot take (never echoing the key)."""
    if not isinstance(key, (bytes, bytearray)):
        raise TypeError(
            f"{what} expected bytes of length 16, 24 or 32, received: {type(key).__name__}"
        )
    if len(key) not in (16, 24, 32):
        raise ValueError(
            f"{what} expected bytes of length 16, 24 or 32, received: bytes of length {len(key)}"
        )
    if mode not in ENC_MODES:
        raise ValueError(
            f"{what.replace('key', 'mode')} expected one of "
            f"{', '.join(ENC_MODES)}, received: {mode!r}"
        )


def _derive(key: bytes, salt: bytes, mode: int) -> tuple[bytes, bytes]:
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.kdf.hkdf import HKDF

    out = HKDF(
        algorithm=hashes.SHA256(), length=len(key) + _MAC, salt=salt, info=_INFO + bytes([mode])
    ).derive(bytes(key))
    return out[: len(key)], out[len(key) :]


def _header(mode: int, chunk_size: int, salt: bytes) -> bytes:
    return MAGIC + bytes([mode, 0, 0, 0]) + struct.pack("<I", chunk_size) + salt


class EncryptingWriter:
    """A write-only file wrapper that encrypts everything written through it.

    ``close()`` seals the last chunk (or the padding and MAC); the caller then fsyncs the
    underlying file as usual.
    """

    def __init__(
        self, fh: BinaryIO, key: bytes, mode: str = "AES-GCM", chunk_size: int = CHUNK_SIZE
    ) -> None:
        check_key(key, mode)
        self._fh = fh
        self._mode = ENC_MODES[mode]
        self._chunk = chunk_size
        salt = os.urandom(16)
        self._head = _header(self._mode, chunk_size, salt)
        enc_key, mac_key = _derive(bytes(key), salt, self._mode)
        fh.write(self._head)
        self._closed = False
        if self._mode == 1:
            from cryptography.hazmat.primitives.ciphers.aead import AESGCM

            self._gcm = AESGCM(enc_key)
            self._index = 0
            self._buf = bytearray()
        else:
            from cryptography.hazmat.primitives import hashes, padding
            from cryptography.hazmat.primitives import hmac as chmac
            from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

            iv = os.urandom(16)
            self._enc = Cipher(algorithms.AES(enc_key), modes.CBC(iv)).encryptor()
            self._pad = padding.PKCS7(128).padder()
            self._mac = chmac.HMAC(mac_key, hashes.SHA256())
            self._mac.update(self._head + iv)
            fh.write(iv)

    def __enter__(self) -> EncryptingWriter:
        return self

    def __exit__(self, exc_type: Any, *rest: Any) -> None:
        if exc_type is None:
            self.close()

    def _seal(self, chunk: bytes | bytearray, last: bool) -> None:
        nonce = struct.pack("<Q", self._index) + b"\0\0\0\0"
        aad = self._head + struct.pack("<QB", self._index, int(last))
        self._fh.write(self._gcm.encrypt(nonce, bytes(chunk), aad))
        self._index += 1

    def write(self, data: Any) -> int:
        mv = memoryview(data).cast("B")
        n = len(mv)
        if self._mode == 2:
            ct = self._enc.update(self._pad.update(mv))
            self._mac.update(ct)
            self._fh.write(ct)
            return n
        while len(mv):
            if len(self._buf) == self._chunk:  # more data follows, so this chunk is not last
                self._seal(self._buf, last=False)
                self._buf.clear()
            take = min(self._chunk - len(self._buf), len(mv))
            self._buf += mv[:take]
            mv = mv[take:]
        return n

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        if self._mode == 1:
            self._seal(self._buf, last=True)
            self._buf = bytearray()
        else:
            ct = self._enc.update(self._pad.finalize()) + self._enc.finalize()
            self._mac.update(ct)
            self._fh.write(ct)
            self._fh.write(self._mac.finalize())


def _fail(where: str) -> CheckpointDecryptError:
    return CheckpointDecryptError(
        f"{where}: decryption failed: wrong key or mode, or the file was tampered with, "
        "truncated or had chunks reordered"
    )


def decrypt_file(fh: BinaryIO, key: bytes, mode: str, where: str) -> bytearray:
    """Authenticate and decrypt a whole encrypted checkpoint; returns the plaintext container."""
    check_key(key, mode, "dec_key")
    blob = fh.read()
    head = blob[:HEADER_SIZE]
    if len(head) < HEADER_SIZE or not is_encrypted_prefix(head):
        raise CheckpointDecryptError(f"{where}: truncated encryption header")
    file_mode = head[8]
    if file_mode != ENC_MODES[mode]:
        names = {v: k for k, v in ENC_MODES.items()}
        raise CheckpointDecryptError(
            f"{where}: encrypted with {names.get(file_mode, 'an unknown mode')}, "
            f"but dec_mode is {mode}"
        )
    (chunk_size,) = struct.unpack("<I", head[12:16])
    enc_key, mac_key = _derive(bytes(key), head[16:32], file_mode)
    body = memoryview(blob)[HEADER_SIZE:]
    if file_mode == 2:
        return _decrypt_cbc(head, body, enc_key, mac_key, where)
    from cryptography.exceptions import InvalidTag
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM

    if chunk_size == 0 or not len(body):
        raise _fail(where)
    gcm = AESGCM(enc_key)
    step = chunk_size + _TAG
    nchunks = -(-len(body) // step)
    out = bytearray(len(body) - nchunks * _TAG) if len(body) >= nchunks * _TAG else None
    if out is None:
        raise _fail(where)
    pos = 0
    for index in range(nchunks):
        piece = body[index * step : (index + 1) * step]
        last = index == nchunks - 1
        nonce = struct.pack("<Q", index) + b"\0\0\0\0"
        aad = head + struct.pack("<QB", index, int(last))
        try:
            plain = gcm.decrypt(nonce, bytes(piece), aad)
        except InvalidTag:
            raise _fail(where) from None
        out[pos : pos + len(plain)] = plain
        pos += len(plain)
    return out


def _decrypt_cbc(
    head: bytes, body: memoryview, enc_key: bytes, mac_key: bytes, where: str
) -> bytearray:
    from cryptography.hazmat.primitives import padding
    from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

    if len(body) < 16 + 16 + _MAC or (len(body) - 16 - _MAC) % 16:
        raise _fail(where)
    iv, ct, tag = body[:16], body[16:-_MAC], body[-_MAC:]
    mac = hmac.new(mac_key, digestmod="sha256")
    mac.update(head)
    mac.update(iv)
    mac.update(ct)
    if not hmac.compare_digest(mac.digest(), bytes(tag)):  # verify before decrypting
        raise _fail(where)
    dec = Cipher(algorithms.AES(enc_key), modes.CBC(bytes(iv))).decryptor()
    unpad = padding.PKCS7(128).unpadder()
    try:
        plain = unpad.update(dec.update(ct) + dec.finalize()) + unpad.finalize()
    except ValueError:
        raise _fail(where) from None
    return bytearray(plain)
