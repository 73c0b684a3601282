"""Encrypted checkpoints: round trips and detection of every kind of tampering."""

from __future__ import annotations

import io
import logging
import struct
from pathlib import Path

import pytest
import torch

from trainledger.checkpoint import crypto, load_checkpoint, save_checkpoint
from trainledger.checkpoint.crypto import EncryptingWriter, decrypt_file
from trainledger.errors import CheckpointDecryptError

KEY = bytes(range(32))


@pytest.mark.parametrize("mode", ["AES-GCM", "AES-CBC"])
@pytest.mark.parametrize("size", [16, 24, 32])
def test_round_trip(tmp_path: Path, mode: str, size: int) -> None:
    tensors = {"w": torch.randn(50, 7), "h": torch.randn(3).bfloat16()}
    path = tmp_path / "e.ckpt"
    save_checkpoint(tensors, path, enc_key=KEY[:size], enc_mode=mode, append_dict={"a": 1})
    assert b"dtype" not in path.read_bytes() and b"trainledger" not in path.read_bytes()
    out = load_checkpoint(path, dec_key=KEY[:size], dec_mode=mode, crc_check=True)
    assert torch.equal(out["w"], tensors["w"]) and torch.equal(out["h"], tensors["h"])
    assert out["a"] == 1


def encrypt(data: bytes, mode: str = "AES-GCM", chunk: int = 64) -> bytes:
    sink = io.BytesIO()
    with EncryptingWriter(sink, KEY, mode, chunk_size=chunk) as enc:
        enc.write(data[:10])
        enc.write(memoryview(data)[10:])
    return sink.getvalue()


def decrypt(blob: bytes, mode: str = "AES-GCM", key: bytes = KEY) -> bytes:
    return bytes(decrypt_file(io.BytesIO(blob), key, mode, "blob"))


PLAIN = bytes(range(256)) * 2  # 512 bytes -> 8 chunks of 64


@pytest.mark.parametrize("length", [0, 1, 63, 64, 65, 128, 512])
def test_chunk_boundaries(length: int) -> None:
    assert decrypt(encrypt(PLAIN[:length])) == PLAIN[:length]
    assert decrypt(encrypt(PLAIN[:length], "AES-CBC"), "AES-CBC") == PLAIN[:length]


def chunks(blob: bytes, chunk: int = 64) -> tuple[bytes, list[bytes]]:
    head, body = blob[: crypto.HEADER_SIZE], blob[crypto.HEADER_SIZE :]
    step = chunk + 16
    return head, [body[i : i + step] for i in range(0, len(body), step)]


def gcm_attacks() -> dict[str, bytes]:
    blob = encrypt(PLAIN)
    head, parts = chunks(blob)
    flipped = bytearray(blob)
    flipped[100] ^= 1
    header_flip = bytearray(blob)
    header_flip[20] ^= 1
    return {
        "reordered": head + b"".join([parts[1], parts[0], *parts[2:]]),
        "dropped middle": head + b"".join(parts[:3] + parts[4:]),
        "truncated at chunk boundary": head + b"".join(parts[:-1]),
        "truncated mid chunk": blob[:-7],
        "duplicated chunk": head + b"".join(parts + [parts[-1]]),
        "appended garbage": blob + b"\0" * 80,
        "flipped ciphertext bit": bytes(flipped),
        "flipped header (salt)": bytes(header_flip),
        "header only": head,
    }


@pytest.mark.parametrize("attack", list(gcm_attacks()))
def test_gcm_detects(attack: str) -> None:
    with pytest.raises(CheckpointDecryptError, match="decryption failed|truncated"):
        decrypt(gcm_attacks()[attack])


@pytest.mark.parametrize("cut", [1, 16, 32, 40])
def test_cbc_detects_truncation(cut: int) -> None:
    blob = encrypt(PLAIN, "AES-CBC")
    with pytest.raises(CheckpointDecryptError):
        decrypt(blob[:-cut], "AES-CBC")


@pytest.mark.parametrize("pos", [crypto.HEADER_SIZE + 3, crypto.HEADER_SIZE + 100, -3, 20])
def test_cbc_detects_tampering(pos: int) -> None:
    blob = bytearray(encrypt(PLAIN, "AES-CBC"))
    blob[pos] ^= 0x40
    with pytest.raises(CheckpointDecryptError):
        decrypt(bytes(blob), "AES-CBC")


@pytest.mark.parametrize("mode", ["AES-GCM", "AES-CBC"])
def test_wrong_key_is_clear_and_never_logged(
    tmp_path: Path, mode: str, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "k.ckpt"
    save_checkpoint({"w": torch.ones(3)}, path, enc_key=KEY, enc_mode=mode)
    wrong = b"W" * 32
    caplog.set_level(logging.DEBUG)
    with pytest.raises(CheckpointDecryptError, match="wrong key") as info:
        load_checkpoint(path, dec_key=wrong, dec_mode=mode)
    assert KEY.hex() not in str(info.value) and "WWWW" not in str(info.value)
    assert "WWWW" not in caplog.text and KEY.hex() not in caplog.text


def test_mode_mismatch_and_missing_key(tmp_path: Path) -> None:
    path = tmp_path / "m.ckpt"
    save_checkpoint({"w": torch.ones(3)}, path, enc_key=KEY)
    with pytest.raises(CheckpointDecryptError, match="encrypted with AES-GCM"):
        load_checkpoint(path, dec_key=KEY, dec_mode="AES-CBC")
    with pytest.raises(CheckpointDecryptError, match="pass dec_key"):
        load_checkpoint(path)
    with pytest.raises(ValueError, match="16, 24 or 32"):
        load_checkpoint(path, dec_key=b"short")


def test_same_plaintext_encrypts_differently() -> None:
    assert encrypt(PLAIN) != encrypt(PLAIN)  # fresh salt per file


def test_large_tensor_spans_many_chunks(tmp_path: Path) -> None:
    t = torch.randn(3 * crypto.CHUNK_SIZE // 4 + 123)  # ~3 chunks
    path = tmp_path / "big.ckpt"
    save_checkpoint({"t": t}, path, enc_key=KEY)
    assert torch.equal(load_checkpoint(path, dec_key=KEY)["t"], t)
    raw = bytearray(path.read_bytes())
    step = crypto.CHUNK_SIZE + 16
    head = bytes(raw[: crypto.HEADER_SIZE])
    body = bytes(raw[crypto.HEADER_SIZE :])
    swapped = head + body[step : 2 * step] + body[:step] + body[2 * step :]
    path.write_bytes(swapped)
    with pytest.raises(CheckpointDecryptError):
        load_checkpoint(path, dec_key=KEY)
    assert struct.unpack("<I", head[12:16])[0] == crypto.CHUNK_SIZE
