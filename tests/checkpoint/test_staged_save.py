"""Device tensors staged chunk by chunk while they are written (``torch_adapter.StagingRing``,
``DeviceBytes``; the synchronous save of GPU tensors). A GPU is not needed to check what
reaches the file: the ring stages CPU tensors the same way, without pinning, so these tests
compare the staged file with the direct one byte for byte (tests/gpu saves from CUDA)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch

from trainledger.checkpoint import load_checkpoint, read_checkpoint
from trainledger.checkpoint.format import RawTensor, save_container
from trainledger.checkpoint.torch_adapter import StagingRing, staged_raw, tensor_to_raw

KEY = bytes(range(32))


def _state() -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(0)
    return {
        "w": torch.randn(5, 7, generator=g),  # 140 bytes: not a multiple of the chunk
        "exact": torch.arange(12, dtype=torch.int32),  # 48 bytes: exactly 3 chunks of 16
        "half": torch.randn(9, generator=g).to(torch.bfloat16),
        "t": torch.randn(4, 6, generator=g).t(),  # not contiguous
        "empty": torch.zeros(0, 3),
        "flag": torch.tensor([True, False, True]),
    }


def _raws(state: dict[str, torch.Tensor], ring: StagingRing | None) -> list[tuple[str, Any]]:
    if ring is None:
        return [(n, tensor_to_raw(n, t)) for n, t in state.items()]
    return [(n, staged_raw(n, t, ring)) for n, t in state.items()]


@pytest.mark.parametrize("chunk", [16, 4096])
def test_a_staged_save_writes_the_same_file_as_a_direct_one(tmp_path: Path, chunk: int) -> None:
    state = _state()
    info = {"epoch": 1}
    save_container(tmp_path / "direct.ckpt", _raws(state, None), info)
    ring = StagingRing(torch.device("cpu"), chunk)
    save_container(tmp_path / "staged.ckpt", _raws(state, ring), info)
    assert (tmp_path / "staged.ckpt").read_bytes() == (tmp_path / "direct.ckpt").read_bytes()
    loaded = load_checkpoint(tmp_path / "staged.ckpt")  # checksums verified
    for name, value in state.items():
        torch.testing.assert_close(loaded[name], value)


def test_a_staged_save_can_be_encrypted(tmp_path: Path) -> None:
    state = _state()
    ring = StagingRing(torch.device("cpu"), 16)
    save_container(tmp_path / "enc.ckpt", _raws(state, ring), {}, enc_key=KEY)
    loaded = load_checkpoint(tmp_path / "enc.ckpt", dec_key=KEY)
    for name, value in state.items():
        torch.testing.assert_close(loaded[name], value)


class _FailingBytes:
    """Bytes whose staging fails after the first chunk (a device error mid-copy)."""

    nbytes = 32

    def chunks(self) -> Any:
        yield memoryview(bytes(16))
        raise RuntimeError("CUDA error: an illegal memory access was encountered")


def test_a_staging_failure_leaves_the_previous_checkpoint_intact(tmp_path: Path) -> None:
    path = tmp_path / "m.ckpt"
    state = _state()
    save_container(path, _raws(state, None), {"epoch": 1})
    before = path.read_bytes()
    broken = [*_raws(state, None), ("bad", RawTensor("F32", (8,), _FailingBytes()))]
    with pytest.raises(RuntimeError, match="illegal memory access"):
        save_container(path, broken, {"epoch": 2})
    assert path.read_bytes() == before
    assert read_checkpoint(path).info["epoch"] == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.ckpt"]  # no temp file left


def test_staged_bytes_of_the_wrong_size_are_refused_before_writing(tmp_path: Path) -> None:
    raw = RawTensor("F32", (9,), _FailingBytes())  # 32 bytes are not 9 float32
    with pytest.raises(ValueError, match="expected 36 bytes for shape \\(9,\\) F32, received 32"):
        save_container(tmp_path / "x.ckpt", [("bad", raw)], {})
    assert not (tmp_path / "x.ckpt").exists()
