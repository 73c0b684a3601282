"""Integrity of plain checkpoints: damage is a CheckpointFormatError, never different weights.

Issue 16 item 3: ``crc_check`` defaulted to False (flipped tensor bytes loaded as wrong weights)
and the header was not covered (flips raised raw KeyError/TypeError/ValueError or renamed a
tensor that a non-strict load then skipped).
"""

from __future__ import annotations

import json
import struct
from pathlib import Path

import crc32c
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from safetensors.torch import load_file

from tests.checkpoint.golden_v1.make_samples import KEY, expected_state
from trainledger.checkpoint import (
    checkpoint_info,
    latest_checkpoint,
    load_checkpoint,
    read_checkpoint,
    save_checkpoint,
)
from trainledger.errors import CheckpointFormatError

GOLDEN_V1 = Path(__file__).resolve().parent / "golden_v1"


def _state() -> dict[str, torch.Tensor]:
    gen = torch.Generator().manual_seed(1)
    return {
        "fc.weight": torch.randn(4, 3, generator=gen),
        "fc.bias": torch.randn(4, generator=gen),
        "ids": torch.arange(5, dtype=torch.int64),
        "half": torch.randn(3, generator=gen).half(),
    }


def _same(loaded: dict[str, object], state: dict[str, torch.Tensor]) -> bool:
    return all(
        isinstance(loaded.get(k), torch.Tensor) and torch.equal(loaded[k], v)  # type: ignore[arg-type]
        for k, v in state.items()
    ) and {k for k, v in loaded.items() if isinstance(v, torch.Tensor)} == set(state)


def _outcome(path: Path, data: bytes, state: dict[str, torch.Tensor]) -> str:
    """Write ``data`` to ``path`` and load it: "error" (CheckpointFormatError) or "same";
    anything else (another exception, different weights) fails the test."""
    path.write_bytes(data)
    try:
        loaded = load_checkpoint(path)
    except CheckpointFormatError:
        return "error"
    assert _same(loaded, state), "a damaged file loaded as different weights"
    return "same"


@pytest.fixture
def plain(tmp_path: Path) -> tuple[Path, bytes, dict[str, torch.Tensor]]:
    state = _state()
    path = tmp_path / "p.ckpt"
    save_checkpoint(state, path, append_dict={"lr": 0.1}, info={"epoch": 2})
    return path, path.read_bytes(), state


@pytest.mark.slow
def test_every_single_byte_flip_is_detected(
    plain: tuple[Path, bytes, dict[str, torch.Tensor]],
) -> None:
    """Each byte of the file (length prefix, header, padding, tensor bytes) is covered by a
    crc32c: flipping any one of them makes the default load raise CheckpointFormatError."""
    path, raw, state = plain
    for i in range(len(raw)):
        for mask in (0x01, 0x80, 0xFF):
            damaged = bytearray(raw)
            damaged[i] ^= mask
            assert _outcome(path, bytes(damaged), state) == "error", (i, mask)


@pytest.mark.slow
def test_every_truncation_is_detected(plain: tuple[Path, bytes, dict[str, torch.Tensor]]) -> None:
    path, raw, state = plain
    for cut in range(len(raw)):
        assert _outcome(path, raw[:cut], state) == "error", cut
    assert _outcome(path, raw + b"\0", state) == "error"  # a longer file is damaged too


@settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    flips=st.lists(
        st.tuples(st.integers(min_value=0), st.integers(min_value=1, max_value=255)),
        min_size=0,
        max_size=6,
    ),
    cut=st.one_of(st.none(), st.integers(min_value=0)),
    with_net=st.booleans(),
)
def test_fuzz_load_checkpoint_raises_only_format_error(
    plain: tuple[Path, bytes, dict[str, torch.Tensor]],
    flips: list[tuple[int, int]],
    cut: int | None,
    with_net: bool,
) -> None:
    """Random flips and truncations: only CheckpointFormatError, never different weights,
    also when loaded into a net non-strictly (where a renamed tensor used to be skipped)."""
    path, raw, state = plain
    damaged = bytearray(raw)
    for pos, mask in flips:
        damaged[pos % len(raw)] ^= mask
    if cut is not None:
        damaged = damaged[: cut % (len(raw) + 1)]
    path.write_bytes(bytes(damaged))
    net = torch.nn.Linear(3, 4)
    before = {k: v.clone() for k, v in net.state_dict().items()}
    try:
        loaded = load_checkpoint(path, net=net if with_net else None)
    except CheckpointFormatError:
        assert all(torch.equal(before[k], v) for k, v in net.state_dict().items())
        return
    assert bytes(damaged) == raw or _same(loaded, state)


def test_large_file_crc_is_checked_by_the_reading_threads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Above the parallel-read threshold each thread checks its chunks; a flip in any chunk,
    the ragged last one included, is caught."""
    import trainledger.checkpoint.format as fmt

    monkeypatch.setattr(fmt, "_PARALLEL_READ_MIN", 1 << 16)
    monkeypatch.setattr(fmt, "_READ_CHUNK", (1 << 16) + 13)
    state = {"w": torch.arange(200_000, dtype=torch.float32)}
    path = tmp_path / "big.ckpt"
    save_checkpoint(state, path)
    raw = path.read_bytes()
    assert torch.equal(load_checkpoint(path)["w"], state["w"])
    for pos in (len(raw) - 800_000, len(raw) - 70_000, len(raw) - 1):
        damaged = bytearray(raw)
        damaged[pos] ^= 0x10
        path.write_bytes(bytes(damaged))
        with pytest.raises(CheckpointFormatError, match="crc32c mismatch"):
            load_checkpoint(path)


def test_resume_from_a_damaged_latest_checkpoint_fails_loudly(tmp_path: Path) -> None:
    """The resume idiom (latest_checkpoint then load into the net) refuses damaged weights."""
    net = torch.nn.Linear(3, 4)
    save_checkpoint(net, tmp_path / "net-1_10.ckpt")
    path = Path(latest_checkpoint(tmp_path, "net") or "")
    raw = bytearray(path.read_bytes())
    raw[-3] ^= 0x40  # inside the last tensor's bytes
    path.write_bytes(bytes(raw))
    with pytest.raises(CheckpointFormatError):
        load_checkpoint(path, net=torch.nn.Linear(3, 4))


def test_header_damage_is_caught_by_read_info_too(
    plain: tuple[Path, bytes, dict[str, torch.Tensor]],
) -> None:
    path, raw, _ = plain
    (n,) = struct.unpack("<Q", raw[:8])
    header = raw[8 : 8 + n]
    renamed = raw[:8] + header.replace(b'"fc.bias"', b'"fc.biaz"') + raw[8 + n :]
    path.write_bytes(renamed)
    with pytest.raises(CheckpointFormatError, match="header crc32c mismatch"):
        checkpoint_info(path)


def test_a_format_2_header_without_its_crc_is_damage(tmp_path: Path) -> None:
    path = tmp_path / "x.ckpt"
    save_checkpoint({"w": torch.ones(2)}, path)
    raw = path.read_bytes()
    path.write_bytes(raw.replace(b"header_crc32c", b"header_crc32C"))
    with pytest.raises(CheckpointFormatError, match="requires header_crc32c"):
        load_checkpoint(path)


@pytest.mark.parametrize(
    "header",
    [
        {"w": {"dtype": "F32", "shape": [2], "data_offsets": [0]}},
        {"w": {"dtype": "F32", "shape": "2", "data_offsets": [0, 8]}},
        {"w": {"dtype": "F99", "shape": [2], "data_offsets": [0, 8]}},
        {"w": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8.0]}},
        {"w": {"dtype": "F32", "shape": [-2], "data_offsets": [0, 8]}},
        {"w": [1, 2]},
        {"w": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}, "__metadata__": [1]},
        {"w": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}, "__metadata__": {"a": 1}},
        {
            "w": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
            "__metadata__": {"trainledger": "[1]"},
        },
        {
            "w": {"dtype": "F32", "shape": [1], "data_offsets": [4, 8]},
            "__metadata__": {"trainledger": json.dumps({"format_version": 1, "crc32c": "0"})},
        },
        [1, 2],
    ],
)
def test_malformed_foreign_headers_are_format_errors(tmp_path: Path, header: object) -> None:
    """Headers without our crc (other writers, format 1) are still checked for structure."""
    raw = json.dumps(header).encode()
    raw += b" " * (-len(raw) % 8)
    path = tmp_path / "f.safetensors"
    path.write_bytes(struct.pack("<Q", len(raw)) + raw + bytes(8))
    with pytest.raises(CheckpointFormatError):
        load_checkpoint(path)


def test_deeply_nested_header_json_is_a_format_error(tmp_path: Path) -> None:
    raw = b'{"w": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
    path = tmp_path / "deep.ckpt"
    path.write_bytes(struct.pack("<Q", len(raw)) + raw)
    with pytest.raises(CheckpointFormatError, match="not valid JSON"):
        load_checkpoint(path)


# --- files written by the original version (format 1) ---------------------------------------


def _v1_optimizer_reference() -> tuple[torch.nn.Module, torch.optim.Optimizer]:
    """The net and optimizer make_samples.py saved, rebuilt by the same closed-form steps."""
    state = expected_state()
    net = torch.nn.Linear(4, 3)
    with torch.no_grad():
        net.weight.copy_(state["fc.weight"])
        net.bias.copy_(state["fc.bias"])
    opt = torch.optim.SGD(net.parameters(), lr=0.5, momentum=0.9)
    net(torch.ones(2, 4)).sum().backward()
    opt.step()
    return net, opt


@pytest.mark.parametrize("name", ["plain.ckpt", "encrypted.ckpt"])
def test_format_1_samples_load_with_the_same_values(name: str) -> None:
    key = KEY if name == "encrypted.ckpt" else None
    loaded = load_checkpoint(GOLDEN_V1 / name, dec_key=key)
    expected = expected_state()
    for k, v in expected.items():
        assert loaded[k].dtype == v.dtype and torch.equal(loaded[k], v), k
    assert loaded["epoch_num"] == 3 and loaded["lr"] == 0.125 and loaded["tag"] == "v1"
    info = checkpoint_info(GOLDEN_V1 / name, dec_key=key)
    assert info["format_version"] == 1 and "header_crc32c" not in info
    if key is None:
        assert info["epoch"] == 3 and info["step"] == 30
        theirs = load_file(str(GOLDEN_V1 / name))
        assert all(torch.equal(theirs[k], v) for k, v in expected.items())


def test_format_1_optimizer_sample_restores_the_same_state() -> None:
    ref_net, ref_opt = _v1_optimizer_reference()
    net = torch.nn.Linear(4, 3)
    opt = torch.optim.SGD(net.parameters(), lr=0.1, momentum=0.9)
    load_checkpoint(GOLDEN_V1 / "with_optimizer.ckpt", net=net, strict_load=True, optimizer=opt)
    assert all(
        torch.equal(a, b) for a, b in zip(net.parameters(), ref_net.parameters(), strict=True)
    )
    ours, ref = opt.state_dict(), ref_opt.state_dict()
    assert ours["param_groups"] == ref["param_groups"]
    for pid, s in ref["state"].items():
        assert torch.equal(ours["state"][pid]["momentum_buffer"], s["momentum_buffer"])


def test_format_1_tensor_flips_are_still_caught() -> None:
    """Format-1 files carry the crc32c of their tensor bytes: verified by default now."""
    raw = (GOLDEN_V1 / "plain.ckpt").read_bytes()
    (n,) = struct.unpack("<Q", raw[:8])
    ckpt = read_checkpoint(GOLDEN_V1 / "plain.ckpt")
    assert "crc32c" in ckpt.info
    for i in range(8 + n, len(raw)):
        damaged = bytearray(raw)
        damaged[i] ^= 0x01
        path = GOLDEN_V1.parent / "golden_v1_damaged.tmp"  # never committed: removed below
        try:
            path.write_bytes(bytes(damaged))
            with pytest.raises(CheckpointFormatError, match="crc32c mismatch"):
                load_checkpoint(path)
        finally:
            path.unlink(missing_ok=True)


@pytest.mark.slow
def test_format_1_header_flips_raise_only_format_errors(tmp_path: Path) -> None:
    """Format-1 headers carry no crc, so a flipped name or dtype can go unseen (documented in
    docs/reliability.md); but a flip never escapes as a raw KeyError/TypeError/ValueError."""
    raw = (GOLDEN_V1 / "plain.ckpt").read_bytes()
    (n,) = struct.unpack("<Q", raw[:8])
    path = tmp_path / "v1.ckpt"
    for i in range(8 + n):
        damaged = bytearray(raw)
        damaged[i] ^= 0x01
        path.write_bytes(bytes(damaged))
        try:
            load_checkpoint(path)
        except CheckpointFormatError:
            pass


@given(a=st.binary(max_size=300), b=st.binary(max_size=300))
def test_crc32c_combine_matches_crc_of_the_concatenation(a: bytes, b: bytes) -> None:
    from trainledger.checkpoint.header import crc32c_combine

    assert crc32c_combine(crc32c.crc32c(a), crc32c.crc32c(b), len(b)) == crc32c.crc32c(a + b)


def test_a_header_damaged_to_look_like_another_writers_file_is_refused(
    plain: tuple[Path, bytes, dict[str, torch.Tensor]],
) -> None:
    """Found by the fuzz test: flips that rename the ``trainledger`` metadata key and break the
    header crc's key at once made the file look like another writer's (no checks), so a flipped
    tensor byte loaded. Our other header fields still give it away."""
    path, raw, state = plain
    damaged = bytearray(raw)
    damaged[raw.index(b'"trainledger"') + 1] ^= 1  # "uainledger"
    damaged[raw.index(b"header_crc32c")] ^= 1
    damaged[len(raw) - 1] ^= 1  # a tensor byte
    assert _outcome(path, bytes(damaged), state) == "error"
