"""MindSpore protobuf checkpoints load with the names, shapes and values MindSpore gives.

The reference is tests/golden/mindspore-full/checkpoints-expected.json: what
``mindspore.load_checkpoint`` (MindSpore 2.10) returned for every .ckpt under tests/golden.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

import trainledger
from trainledger.checkpoint import load_checkpoint, load_param_into_net, save_checkpoint
from trainledger.checkpoint.mindspore_ckpt import MS_DTYPES, is_mindspore_checkpoint
from trainledger.errors import CheckpointDecryptError, CheckpointFormatError

GOLDEN = Path(__file__).parents[1] / "golden"
EXPECTED = json.loads((GOLDEN / "mindspore-full" / "checkpoints-expected.json").read_text())
KEY = b"trainledger-test"  # the public test key of make_fixtures.py
DTYPES = GOLDEN / "mindspore-full" / "ckpt-dtypes"


def _key(rel: str) -> bytes | None:
    return KEY if "encrypted" in rel else None


def test_every_ckpt_fixture_is_covered() -> None:
    on_disk = sorted(p.relative_to(GOLDEN).as_posix() for p in GOLDEN.rglob("*.ckpt"))
    assert on_disk == sorted(EXPECTED) and len(on_disk) >= 10


@pytest.mark.parametrize("rel", sorted(EXPECTED))
def test_names_shapes_dtypes_values_equal_mindspore(rel: str) -> None:
    got = load_checkpoint(GOLDEN / rel, dec_key=_key(rel))
    expected = EXPECTED[rel]
    assert sorted(got) == sorted(expected)
    for name, want in expected.items():
        if want["dtype"] == "str":  # MindSpore's string values come back as str
            assert got[name] == want["value"]
            continue
        tensor = got[name]
        assert tensor.dtype == getattr(torch, MS_DTYPES[want["dtype"]]), name
        assert list(tensor.shape) == want["shape"], name
        flat = tensor.reshape(-1)
        values = flat.float() if tensor.dtype == torch.bfloat16 else flat
        as_list = values.tolist()
        if "values" in want:
            assert as_list == want["values"], name
        else:
            assert as_list[:8] == want["first"]
            digest = hashlib.sha256(np.asarray(as_list, dtype=np.float64).tobytes()).hexdigest()
            assert digest == want["sha256_float64"], name


def test_every_dtype_mindspore_writes_is_in_the_fixtures() -> None:
    seen = {t["dtype"] for tensors in EXPECTED.values() for t in tensors.values()}
    assert {"str", "BFloat16", "Float16", "Float32", "Float64", "Int8", "Int16", "Int32", "Int64",
            "UInt8", "Bool"} <= seen  # fmt: skip


def test_encrypted_needs_the_key() -> None:
    with pytest.raises(CheckpointDecryptError, match="encrypted with AES-GCM; pass dec_key"):
        load_checkpoint(DTYPES / "encrypted.ckpt")
    with pytest.raises(CheckpointDecryptError, match="encrypted with AES-CBC"):
        load_checkpoint(DTYPES / "encrypted-cbc.ckpt")
    with pytest.raises(CheckpointDecryptError, match="wrong key") as info:
        load_checkpoint(DTYPES / "encrypted.ckpt", dec_key=b"0123456789abcdef")
    assert "0123456789abcdef" not in str(info.value)  # keys never appear in messages
    with pytest.raises(CheckpointDecryptError, match="16, 24 or 32 bytes"):
        load_checkpoint(DTYPES / "encrypted.ckpt", dec_key=b"short")
    with pytest.raises(CheckpointDecryptError, match="not encrypted"):
        load_checkpoint(DTYPES / "dtypes.ckpt", dec_key=KEY)


def test_tampered_encrypted_block_is_refused(tmp_path: Path) -> None:
    data = bytearray((DTYPES / "encrypted.ckpt").read_bytes())
    data[-3] ^= 1  # GCM authenticates the ciphertext
    (tmp_path / "x.ckpt").write_bytes(bytes(data))
    with pytest.raises(CheckpointDecryptError):
        load_checkpoint(tmp_path / "x.ckpt", dec_key=KEY)


def test_crc_trailer_is_verified(tmp_path: Path) -> None:
    data = bytearray((DTYPES / "crc.ckpt").read_bytes())
    assert data[-17:-10] == b"crc_num"
    data[-40] ^= 0x01  # a value byte: only the CRC can tell
    (tmp_path / "x.ckpt").write_bytes(bytes(data))
    with pytest.raises(CheckpointFormatError, match="CRC-32 mismatch"):
        load_checkpoint(tmp_path / "x.ckpt")
    assert len(load_checkpoint(DTYPES / "crc.ckpt", crc_check=True)) == 4


def test_crc_check_refuses_a_file_without_crc() -> None:
    with pytest.raises(CheckpointFormatError, match="has none"):
        load_checkpoint(DTYPES / "dtypes.ckpt", crc_check=True)


def _record_ends(data: bytes) -> set[int]:
    """Offsets where one top-level ``Checkpoint.value`` record ends."""
    ends, pos = set(), 0
    while pos < len(data):
        assert data[pos] == 0x0A
        pos, length, shift = pos + 1, 0, 0
        while True:
            byte = data[pos]
            length |= (byte & 0x7F) << shift
            pos, shift = pos + 1, shift + 7
            if not byte & 0x80:
                break
        pos += length
        ends.add(pos)
    return ends


def test_truncation_is_refused_unless_at_a_record_boundary(tmp_path: Path) -> None:
    """MindSpore writes records back to back with no count or checksum: a file cut exactly
    between two records is a valid checkpoint with fewer parameters (documented); any other
    cut is refused."""
    data = (DTYPES / "dtypes.ckpt").read_bytes()
    ends = _record_ends(data)
    full = load_checkpoint(DTYPES / "dtypes.ckpt")
    target = tmp_path / "cut.ckpt"
    refused = 0
    for cut in range(3, len(data)):
        target.write_bytes(data[:cut])
        if cut in ends:
            got = load_checkpoint(target)
            assert set(got) < set(full)
            for key, value in got.items():
                same = value == full[key] if isinstance(value, str) else value.equal(full[key])
                assert same, key
            continue
        with pytest.raises(CheckpointFormatError):
            load_checkpoint(target)
        refused += 1
    assert refused > len(data) // 2


def test_structural_damage_is_refused(tmp_path: Path) -> None:
    data = (DTYPES / "dtypes.ckpt").read_bytes()
    bad_type = data.replace(b"Float32", b"Float99", 1)
    bad_size = data.replace(b"Float32", b"Float64", 1)  # 12 float32 read as float64
    for name, content in (("type", bad_type), ("size", bad_size)):
        (tmp_path / f"{name}.ckpt").write_bytes(content)
        with pytest.raises(CheckpointFormatError, match="f32.weight"):
            load_checkpoint(tmp_path / f"{name}.ckpt")


class TorchTiny(torch.nn.Module):
    """The torch twin of make_fixtures.TinyNet (Conv2d -> BatchNorm2d -> ReLU -> Dense)."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = torch.nn.Conv2d(1, 2, 3, padding=1, bias=False)
        self.bn = torch.nn.BatchNorm2d(2)
        self.fc = torch.nn.Linear(2 * 8 * 8, 3)


BN = {"gamma": "weight", "beta": "bias", "moving_mean": "running_mean",
      "moving_variance": "running_var"}  # fmt: skip


def test_load_into_torch_module_through_a_name_map() -> None:
    path = GOLDEN / "mindspore-full" / "run" / "ckpt" / "tiny-2_6.ckpt"
    params = load_checkpoint(path)
    name_map = {f"bn.{ms}": f"bn.{pt}" for ms, pt in BN.items()}
    net = TorchTiny()
    not_loaded, _ = load_param_into_net(net, params, name_map=name_map)
    assert not_loaded == ["bn.num_batches_tracked"]
    state = net.state_dict()
    assert torch.equal(state["fc.weight"], params["fc.weight"])  # Dense = Linear layout
    assert torch.equal(state["conv.weight"], params["conv.weight"])
    for ms_name, pt_name in BN.items():
        assert torch.equal(state[f"bn.{pt_name}"], params[f"bn.{ms_name}"])
    net2 = TorchTiny()
    load_checkpoint(path, net=net2, name_map=name_map)
    assert torch.equal(net2.bn.running_var, params["bn.moving_variance"])


def test_our_own_checkpoints_are_not_taken_for_mindspore(tmp_path: Path) -> None:
    for n in (1, 10, 300):
        path = tmp_path / f"own{n}.ckpt"
        save_checkpoint({f"w{i}": torch.ones(2) for i in range(n)}, str(path))
        assert not is_mindspore_checkpoint(path.read_bytes()[:16])
        assert len(load_checkpoint(path)) == n


def test_random_damage_raises_only_checkpoint_errors(tmp_path: Path) -> None:
    """Flipped bytes anywhere: the file loads (MindSpore wrote no checksum, so a flipped value
    goes unnoticed, as documented) or is refused with ``CheckpointFormatError``; nothing
    else escapes. With the CRC trailer, every flip is refused."""
    rng = np.random.default_rng(14)
    target = tmp_path / "x.ckpt"
    for source in ("dtypes.ckpt", "crc.ckpt"):
        data = (DTYPES / source).read_bytes()
        for _ in range(150):
            damaged = bytearray(data)
            damaged[int(rng.integers(0, len(data)))] ^= int(rng.integers(1, 256))
            target.write_bytes(bytes(damaged))
            try:
                load_checkpoint(target)
            except CheckpointFormatError:
                continue
            assert source == "dtypes.ckpt", "a flip in a CRC-protected file went unnoticed"


@pytest.mark.timeout(30)
@pytest.mark.parametrize(
    ("dims", "match"),
    [
        ([2] * 100_000, "expected at most 64 dims, found 100000"),  # a 976 KB crafted file
        ([10**9] * 60, "expected more than the file holds"),  # a product of 540 digits
        ([3, 0, 10**18], "expected 0 bytes"),
    ],
    ids=["100000-dims", "huge-product", "zero-dim"],
)
def test_crafted_dims_are_a_format_error_without_big_integers(
    tmp_path: Path, dims: list[int], match: str
) -> None:
    from trainledger.checkpoint.proto import mindspore_checkpoint_pb2 as ckpt_pb

    message = ckpt_pb.Checkpoint()
    value = message.value.add(tag="w")
    value.tensor.dims.extend(dims)
    value.tensor.tensor_type = "Float32"
    value.tensor.tensor_content = b"\0" * 4
    path = tmp_path / "crafted.ckpt"
    path.write_bytes(message.SerializeToString())
    with pytest.raises(CheckpointFormatError, match=match) as caught:
        load_checkpoint(path)
    assert len(str(caught.value)) < 2000  # the dims are never formatted whole


# --- issue 49 item 9: a crafted file costs a small multiple of its size before its refusal --


def _record(tag: str, dims: list[int], kind: str, content: bytes) -> bytes:
    from trainledger.checkpoint.proto import mindspore_checkpoint_pb2 as ckpt_pb

    value = ckpt_pb.Checkpoint.Value(tag=tag)
    value.tensor.dims.extend(dims)
    value.tensor.tensor_type = kind
    value.tensor.tensor_content = content
    return ckpt_pb.Checkpoint(value=[value]).SerializeToString()


def _many_values(size: int) -> bytes:
    """Valid 1-byte tensors of distinct names, then one with an unknown dtype."""
    records = [_record(f"{i:x}", [1], "Int8", b"x") for i in range(size // 16)]
    return b"".join(records) + _record("bad", [1], "Float99", b"x")


def _many_slices(size: int) -> bytes:
    """One tensor declared as 3 MB of Int8 in 1-byte slices, far fewer than it declares."""
    one = _record("w", [3 << 20], "Int8", b"x")
    return one * (size // len(one))


def _petabytes(size: int) -> bytes:
    """A tensor that declares 2**50 bytes (dims no file holds), in 1-byte slices."""
    one = _record("w", [1 << 50], "Int8", b"x")
    return one * (size // len(one))


_PEAK = """
import resource, sys
import torch
from trainledger.checkpoint import load_checkpoint
from trainledger.checkpoint.proto import mindspore_checkpoint_pb2
from trainledger.errors import CheckpointFormatError
load_checkpoint(sys.argv[2])  # a small valid file: every lazy import and cache is made
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
try:
    load_checkpoint(sys.argv[1])
    print("loaded")
except CheckpointFormatError as exc:
    print("refused:", exc)
print((resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - base) * 1024)
"""


@pytest.mark.slow
@pytest.mark.timeout(120)
@pytest.mark.parametrize(
    ("craft", "match"),
    [
        (_many_values, "'bad' has dtype 'Float99'"),
        (_many_slices, r"'w' expected 3145728 bytes for Int8\[3145728\], found \d+"),
        (_petabytes, r"'w' expected more than the file holds for Int8\[1125899906842624\]"),
    ],
    ids=["many-values", "many-slices", "petabytes"],
)
def test_a_crafted_file_is_refused_in_a_small_multiple_of_its_size(
    tmp_path: Path, craft: object, match: str
) -> None:
    """Peak memory of the refusal, measured in a fresh process: the old reader parsed the whole
    file as one message (1 KB a tiny value) and joined every slice before checking them."""
    path = tmp_path / "crafted.ckpt"
    path.write_bytes(craft(6 << 20))  # type: ignore[operator]
    size = path.stat().st_size
    proc = subprocess.run(
        [sys.executable, "-c", _PEAK, str(path), str(DTYPES / "dtypes.ckpt")],
        capture_output=True,
        text=True,
        timeout=100,
        env={**os.environ, "PYTHONPATH": str(Path(trainledger.__file__).resolve().parents[1])},
    )
    assert proc.returncode == 0, proc.stderr
    verdict, peak = proc.stdout.strip().splitlines()
    assert int(peak) < 3 * size, f"peak {int(peak) >> 20} MB for a {size >> 20} MB file"
    assert verdict.startswith("refused:") and re.search(match, verdict), verdict
