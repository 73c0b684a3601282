"""Issue 16 item 10 (first half): resynchronising over damage scans with numpy, exactly as the
simple per-position search did (the speed is measured in bench/resync.py, not here)."""

from __future__ import annotations

import struct

from hypothesis import given, settings
from hypothesis import strategies as st

from trainledger.storage import MAX_RECORD_BYTES, frame, masked_crc32c, read_records
from trainledger.storage.framing import HEADER_SIZE, _parse, _resync


def simple_resync(data: bytes, start: int) -> int:
    """The reference: try every position in turn."""
    for pos in range(start, len(data) - HEADER_SIZE + 1):
        length, length_crc = struct.unpack_from("<QI", data, pos)
        if length <= MAX_RECORD_BYTES and length_crc == masked_crc32c(data[pos : pos + 8]):
            return pos
    return -1


def header(length: int) -> bytes:
    raw = struct.pack("<Q", length)
    return raw + struct.pack("<I", masked_crc32c(raw))


pieces = st.one_of(
    st.binary(max_size=64),  # garbage
    st.integers(min_value=1, max_value=6000).map(bytes),  # runs of zeros
    st.binary(max_size=40).map(frame),  # valid records
    st.integers(min_value=0, max_value=2**64 - 1).map(header),  # headers, most too long
    st.sampled_from([header(0), header(MAX_RECORD_BYTES), header(MAX_RECORD_BYTES + 1)]),
    st.integers(min_value=0, max_value=2**32 - 1).map(lambda v: bytes(8) + struct.pack("<I", v)),
    st.binary(min_size=1, max_size=8).map(lambda b: b * 700),  # long repeated patterns
)


@settings(max_examples=400, deadline=None)
@given(parts=st.lists(pieces, max_size=12), starts=st.lists(st.integers(0), max_size=4))
def test_fast_resync_agrees_with_the_simple_search(parts: list[bytes], starts: list[int]) -> None:
    data = b"".join(parts)
    for start in [0, 1, *starts]:
        start %= len(data) + 2
        assert _resync(data, memoryview(data), start) == simple_resync(data, start)


def test_zero_runs_are_never_a_header() -> None:
    """What lets the scan skip runs of zeros without computing their crc."""
    assert masked_crc32c(bytes(8)) != 0
    data = bytes(3 << 20) + frame(b"after the hole")
    assert _resync(data, memoryview(data), 1) == 3 << 20
    assert read_records_from(data) == ([b"after the hole"], 1)


def test_headers_across_block_boundaries_are_found() -> None:
    for offset in (4093, 4096, 4100, 12 * 1024 - 5, (1 << 20) + 3):
        data = b"\xff" * offset + frame(b"x")
        assert _resync(data, memoryview(data), 0) == offset == simple_resync(data, 0)


def read_records_from(data: bytes) -> tuple[list[bytes], int]:
    payloads, _, corrupt = _parse(data)
    return payloads, corrupt


def test_records_after_a_large_damaged_region_are_read(tmp_path) -> None:  # type: ignore[no-untyped-def]
    import random

    garbage = random.Random(10).randbytes(2 << 20)
    path = tmp_path / "events"
    path.write_bytes(frame(b"first") + garbage + frame(b"second"))
    payloads, corrupt = read_records(path)
    assert payloads == [b"first", b"second"] and corrupt >= 1
