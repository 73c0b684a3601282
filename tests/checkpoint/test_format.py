"""The safetensors container: round trips, interop with the safetensors library, corruption."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import numpy as np
import pytest
import torch
from safetensors import safe_open
from safetensors.numpy import save_file as np_save_file
from safetensors.torch import load_file, save_file

from trainledger.checkpoint import load_checkpoint, read_checkpoint, save_checkpoint
from trainledger.checkpoint.format import (
    numpy_to_raw,
    raw_to_numpy,
    read_container,
    read_info,
    save_container,
)
from trainledger.errors import CheckpointDecryptError, CheckpointFormatError

DTYPES = [
    torch.float64,
    torch.float32,
    torch.float16,
    torch.bfloat16,
    torch.int64,
    torch.int32,
    torch.int16,
    torch.int8,
    torch.uint8,
    torch.bool,
    torch.float8_e4m3fn,
    torch.float8_e5m2,
]


def sample(dtype: torch.dtype, shape: tuple[int, ...] = (3, 5)) -> torch.Tensor:
    base = torch.randn(shape) * 4
    if dtype == torch.bool:
        return base > 0
    return base.to(dtype)


def test_every_dtype_round_trips_and_opens_with_safetensors(tmp_path: Path) -> None:
    tensors = {f"t_{str(d).split('.')[-1]}": sample(d) for d in DTYPES}
    tensors["scalar"] = torch.tensor(3.5)
    tensors["empty"] = torch.empty(0, 4)
    tensors["noncontig"] = torch.arange(12.0).reshape(3, 4).t()
    path = tmp_path / "all.ckpt"
    save_checkpoint(tensors, path)
    ours = load_checkpoint(path, crc_check=True)
    theirs = load_file(str(path))
    with safe_open(str(path), framework="pt") as fh:
        assert fh.metadata()["format"] == "pt"
        assert json.loads(fh.metadata()["trainledger"])["format_version"] == 2
    for name, t in tensors.items():
        for loaded in (ours[name], theirs[name]):
            assert loaded.dtype == t.dtype and loaded.shape == t.shape
            assert torch.equal(
                loaded.view(torch.uint8)
                if t.dtype.itemsize == 1 and t.dtype.is_floating_point
                else loaded,
                t.contiguous().view(torch.uint8)
                if t.dtype.itemsize == 1 and t.dtype.is_floating_point
                else t,
            )


def test_files_written_by_safetensors_load(tmp_path: Path) -> None:
    tensors = {
        "w": torch.randn(4, 3).bfloat16(),
        "b": torch.arange(7, dtype=torch.int8),
        "z": torch.randn(2, 2, 2).double(),
    }
    path = tmp_path / "st.safetensors"
    save_file(tensors, str(path), metadata={"note": "x"})
    loaded = load_checkpoint(path, crc_check=True)  # no trainledger header: nothing to check
    assert set(loaded) == set(tensors)
    for k, t in tensors.items():
        assert torch.equal(loaded[k], t)
    assert read_info(path) == {}


def test_unaligned_foreign_offsets_are_handled(tmp_path: Path) -> None:
    arrays = {"a": np.arange(3, dtype=np.uint8), "b": np.arange(5, dtype=np.float64)}
    path = tmp_path / "np.safetensors"
    np_save_file(arrays, str(path))
    loaded = load_checkpoint(path)
    assert np.array_equal(loaded["b"].numpy(), arrays["b"])


def test_numpy_level_round_trip(tmp_path: Path) -> None:
    arrays = {"x": np.random.rand(5, 2).astype(np.float32), "y": np.arange(4, dtype=np.int64)}
    path = tmp_path / "n.ckpt"
    save_container(path, [(k, numpy_to_raw(v)) for k, v in arrays.items()], {"epoch": 2})
    c = read_container(path, crc_check=True)
    assert c.info["epoch"] == 2 and c.info["format_version"] == 2
    for e in c.entries:
        assert np.array_equal(raw_to_numpy(e, c.data), arrays[e.name])
    with pytest.raises(TypeError, match="cannot be stored"):
        numpy_to_raw(np.array(["a"]))


def test_header_is_padded_and_data_aligned(tmp_path: Path) -> None:
    path = tmp_path / "a.ckpt"
    save_checkpoint({"u": torch.ones(3, dtype=torch.uint8), "d": torch.ones(3).double()}, path)
    raw = path.read_bytes()
    (n,) = struct.unpack("<Q", raw[:8])
    assert (8 + n) % 8 == 0
    header = json.loads(raw[8 : 8 + n])
    assert header["d"]["data_offsets"][0] % 8 == 0


def test_truncated_file_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "t.ckpt"
    save_checkpoint({"w": torch.randn(100)}, path)
    raw = path.read_bytes()
    for cut in (4, 20, len(raw) - 1):
        path.write_bytes(raw[:cut])
        with pytest.raises(CheckpointFormatError):
            load_checkpoint(path)


def test_large_file_read_by_threads_round_trips_and_detects_truncation(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Above 64 MB the tensor bytes are read in chunks by several threads; every byte lands
    where it belongs, also in a ragged last chunk, and a short file is still an error."""
    import trainledger.checkpoint.format as fmt

    monkeypatch.setattr(fmt, "_PARALLEL_READ_MIN", 1 << 20)  # take the threaded path at 5 MB
    monkeypatch.setattr(fmt, "_READ_CHUNK", (1 << 20) + 7)
    gen = torch.Generator().manual_seed(0)
    state = {f"w{i}": torch.randn(1000 + i, 313, generator=gen) for i in range(4)}
    path = tmp_path / "big.ckpt"
    save_checkpoint(state, path)
    loaded = load_checkpoint(path, crc_check=True)
    for name, tensor in state.items():
        assert torch.equal(loaded[name], tensor)
    raw = path.read_bytes()
    path.write_bytes(raw[: len(raw) - 3 * (1 << 20)])
    with pytest.raises(CheckpointFormatError, match="short read|truncated"):
        load_checkpoint(path)


def test_bit_flip_caught_by_crc(tmp_path: Path) -> None:
    path = tmp_path / "c.ckpt"
    save_checkpoint({"w": torch.randn(100)}, path)
    raw = bytearray(path.read_bytes())
    raw[-5] ^= 0xFF
    path.write_bytes(bytes(raw))
    with pytest.raises(CheckpointFormatError, match="crc32c mismatch"):
        load_checkpoint(path)  # verified by default
    load_checkpoint(path, crc_check=False)  # the caller's explicit choice: bytes trusted


def test_not_a_checkpoint(tmp_path: Path) -> None:
    path = tmp_path / "x.ckpt"
    path.write_bytes(struct.pack("<Q", 8) + b"notjson!")
    with pytest.raises(CheckpointFormatError, match="not valid JSON"):
        load_checkpoint(path)
    path.write_bytes(b"\x00")
    with pytest.raises(CheckpointFormatError, match="too short"):
        load_checkpoint(path)


def test_dec_key_on_plain_file_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "p.ckpt"
    save_checkpoint({"w": torch.ones(2)}, path)
    with pytest.raises(CheckpointDecryptError, match="not encrypted"):
        load_checkpoint(path, dec_key=b"k" * 16)


def test_no_pickle_anywhere(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import pickle

    net = torch.nn.Linear(3, 2)
    opt = torch.optim.Adam(net.parameters())
    net(torch.randn(4, 3)).sum().backward()
    opt.step()

    def forbidden(*a: object, **k: object) -> None:
        raise AssertionError("pickle used")

    for name in ("load", "loads", "dump", "dumps"):
        monkeypatch.setattr(pickle, name, forbidden)
    monkeypatch.setattr(torch, "load", forbidden)
    monkeypatch.setattr(torch, "save", forbidden)
    save_checkpoint(net, tmp_path / "n.ckpt", optimizer=opt, enc_key=b"k" * 16)
    ckpt = read_checkpoint(tmp_path / "n.ckpt", dec_key=b"k" * 16)
    assert ckpt.optimizer_state is not None


def test_crc_patched_in_place_even_with_lookalike_fields(tmp_path: Path) -> None:
    path = tmp_path / "l.ckpt"
    save_checkpoint(
        {"w": torch.randn(1000)},
        path,
        append_dict={"crc32c": "00000000"},
        info={"crc32c": "ffffffff", "note": '"crc32c": "00000000"'},
    )
    c = read_container(path, crc_check=True)  # verifies the patched value
    assert c.info["crc32c"] != "00000000" and c.info["append_info"]["crc32c"] == "00000000"
    assert c.info["note"] == '"crc32c": "00000000"'
    assert load_file(str(path))["w"].shape == (1000,)
