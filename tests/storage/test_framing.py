"""Record framing: known CRC values, round trips, incremental and damaged reads."""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from trainledger.storage import (
    RecordReader,
    frame,
    frame_equal_length,
    masked_crc32c,
    read_records,
)


def test_masked_crc_matches_tensorflow_reference() -> None:
    # TensorFlow's crc32c_test: crc32c(b"") == 0, masking formula applied by hand.
    crc = 0xE3069283  # crc32c(b"123456789"), the standard check value
    expected = (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF
    assert masked_crc32c(b"123456789") == expected


def test_frame_layout() -> None:
    rec = frame(b"abc")
    length, length_crc = struct.unpack_from("<QI", rec)
    assert length == 3
    assert length_crc == masked_crc32c(rec[:8])
    assert rec[12:15] == b"abc"
    assert struct.unpack_from("<I", rec, 15)[0] == masked_crc32c(b"abc")
    assert len(rec) == 19


def test_incremental_reader_returns_only_new_records(tmp_path: Path) -> None:
    path = tmp_path / "f"
    path.write_bytes(frame(b"one") + frame(b"two"))
    reader = RecordReader(path)
    assert reader.read() == [b"one", b"two"]
    assert reader.read() == []
    second = frame(b"three")
    with open(path, "ab") as fh:
        fh.write(second[:7])  # a record still being written
    assert reader.read() == []
    with open(path, "ab") as fh:
        fh.write(second[7:])
    assert reader.read() == [b"three"]
    assert reader.corrupt == 0


def test_corrupt_payload_is_skipped_and_counted(tmp_path: Path) -> None:
    good1, bad, good2 = frame(b"first"), bytearray(frame(b"second")), frame(b"third")
    bad[13] ^= 0xFF
    path = tmp_path / "f"
    path.write_bytes(good1 + bytes(bad) + good2)
    payloads, corrupt = read_records(path)
    assert payloads == [b"first", b"third"]
    assert corrupt == 1


def test_corrupt_length_resynchronises_on_next_record(tmp_path: Path) -> None:
    good1, bad, good2 = frame(b"first"), bytearray(frame(b"second")), frame(b"third")
    bad[2] ^= 0x01
    path = tmp_path / "f"
    path.write_bytes(good1 + bytes(bad) + good2)
    payloads, corrupt = read_records(path)
    assert payloads == [b"first", b"third"]
    assert corrupt >= 1


def test_missing_and_empty_files(tmp_path: Path) -> None:
    assert read_records(tmp_path / "missing") == ([], 0)
    (tmp_path / "empty").write_bytes(b"")
    assert read_records(tmp_path / "empty") == ([], 0)


def test_replaced_shorter_file_is_read_from_start(tmp_path: Path) -> None:
    path = tmp_path / "f"
    path.write_bytes(frame(b"aaaa") + frame(b"bbbb"))
    reader = RecordReader(path)
    assert len(reader.read()) == 2
    path.write_bytes(frame(b"c"))
    assert reader.read() == [b"c"]


@settings(max_examples=200, deadline=None)
@given(
    st.integers(1, 200),
    st.integers(1, 80),
    st.lists(st.integers(0, 79), max_size=12),
    st.integers(0, 2**32 - 1),
)
def test_frame_equal_length_equals_framing_each_row(n, length, columns, seed):
    """Rows equal but for a few columns (the CRCs come from the first row's by linearity),
    and rows that differ everywhere (one CRC per row): the same bytes as ``frame`` per row."""
    rng = np.random.default_rng(seed)
    rows = np.tile(rng.integers(0, 256, length, dtype=np.uint8), (n, 1))
    for column in columns:
        if column < length:
            rows[:, column] = rng.integers(0, 256, n, dtype=np.uint8)
    assert frame_equal_length(rows) == b"".join(frame(r.tobytes()) for r in rows)
    noise = rng.integers(0, 256, (n, length), dtype=np.uint8)
    assert frame_equal_length(noise) == b"".join(frame(r.tobytes()) for r in noise)
