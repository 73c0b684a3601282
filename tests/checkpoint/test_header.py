"""The header's checks against hostile files, compared with the real ``safetensors`` library.

Issue 49 item 9: a safetensors file whose tensors overlap or leave gaps loaded here although
the library refuses it (tiling was required only of files with a trainledger crc), and a
header length over the limit was reported as "truncated?".
"""

from __future__ import annotations

import json
import struct
from pathlib import Path

import pytest
import torch
from safetensors import SafetensorError, safe_open
from safetensors.torch import load_file, save_file

from trainledger.checkpoint import load_checkpoint, read_checkpoint
from trainledger.checkpoint.header import MAX_HEADER
from trainledger.errors import CheckpointFormatError


def _foreign(path: Path, entries: dict[str, list[int]], data_len: int) -> Path:
    """A safetensors file built by hand: F32 tensors at the given [begin, end) offsets."""
    header = {
        name: {"dtype": "F32", "shape": [(end - begin) // 4], "data_offsets": [begin, end]}
        for name, (begin, end) in entries.items()
    }
    raw = json.dumps(header).encode()
    raw += b" " * (-(8 + len(raw)) % 8)
    path.write_bytes(struct.pack("<Q", len(raw)) + raw + bytes(range(data_len)))
    return path


@pytest.mark.parametrize(
    ("entries", "data_len", "found"),
    [
        ({"a": [0, 8], "b": [4, 12]}, 12, "overlap"),  # b's first 4 bytes are a's last
        ({"a": [0, 8], "b": [0, 8]}, 8, "overlap"),  # two names, the same bytes
        ({"a": [0, 8], "b": [12, 20]}, 20, "gap"),  # 4 bytes between them
        ({"a": [4, 12]}, 12, "gap"),  # 4 bytes before the first
        ({"a": [0, 8]}, 12, "no tensor covers"),  # 4 bytes after the last
    ],
)
def test_tensors_that_overlap_or_leave_gaps_are_refused_as_safetensors_does(
    tmp_path: Path, entries: dict[str, list[int]], data_len: int, found: str
) -> None:
    path = _foreign(tmp_path / "f.safetensors", entries, data_len)
    with pytest.raises(SafetensorError):  # the reference refuses it ...
        safe_open(str(path), framework="pt")
    with pytest.raises(SafetensorError):
        load_file(str(path))
    for read in (load_checkpoint, read_checkpoint):  # ... and so do we, saying why
        with pytest.raises(CheckpointFormatError, match=found):
            read(path)


def test_files_the_library_writes_still_load(tmp_path: Path) -> None:
    """Zero-size tensors share an offset with their neighbour; that is tiling, not overlap."""
    state = {
        "empty": torch.empty(0, 3),
        "w": torch.randn(3, 5),
        "none": torch.empty(2, 0, dtype=torch.int64),
        "b": torch.arange(7, dtype=torch.int8),
    }
    path = tmp_path / "st.safetensors"
    save_file(state, str(path))
    loaded = load_checkpoint(path, crc_check=True)
    assert set(loaded) == set(state)
    for name, tensor in state.items():
        assert torch.equal(loaded[name], tensor)


def test_a_header_over_the_limit_is_reported_as_over_the_limit(tmp_path: Path) -> None:
    path = tmp_path / "big.safetensors"
    declared = MAX_HEADER + 1
    path.write_bytes(struct.pack("<Q", declared) + b"{}" + bytes(14))
    with pytest.raises(SafetensorError):
        safe_open(str(path), framework="pt")
    with pytest.raises(CheckpointFormatError) as raised:
        load_checkpoint(path)
    message = str(raised.value)
    assert f"{declared}" in message and f"limit of {MAX_HEADER}" in message
    assert "truncated" not in message


def test_a_header_longer_than_the_file_is_reported_as_truncated(tmp_path: Path) -> None:
    path = tmp_path / "cut.safetensors"
    path.write_bytes(struct.pack("<Q", 1000) + b"{}" + bytes(14))
    with pytest.raises(CheckpointFormatError, match="exceeds the file's 24 bytes.*truncated"):
        load_checkpoint(path)
