"""Reading past damage: how fast the record reader resynchronises over a damaged region.

A damaged region of an event or lineage file (garbage, or a run of zeros where a crash left a
hole) is scanned for the next plausible record header. The numpy scan of
``trainledger.storage.framing`` runs against the per-position search it replaced (the
reference below, the same code as before issue 16), alternating in each round, on
``--mib`` MiB of damage between two valid records. Prints the median MiB/s of each and the
paired speed-up (median and range). Target: >= 200 MiB/s over damage.

    .venv/bin/python bench/resync.py [--mib 16] [--repeat 5]
"""

from __future__ import annotations

import argparse
import random
import statistics
import struct
import time
from collections.abc import Callable

from trainledger.storage import MAX_RECORD_BYTES, frame, framing, masked_crc32c


def simple_resync(data: bytes, view: memoryview, start: int) -> int:
    """The per-position search (the original ``_resync``)."""
    end = len(data) - framing.HEADER_SIZE
    unpack_header = struct.Struct("<QI").unpack_from
    for pos in range(start, end + 1):
        length, length_crc = unpack_header(data, pos)
        if length <= MAX_RECORD_BYTES and length_crc == masked_crc32c(view[pos : pos + 8]):
            return pos
    return -1


def parse_with(resync: Callable[[bytes, memoryview, int], int], data: bytes) -> float:
    original = framing._resync
    framing._resync = resync  # type: ignore[assignment]
    try:
        t0 = time.perf_counter()
        payloads, _, corrupt = framing._parse(data)
        elapsed = time.perf_counter() - t0
    finally:
        framing._resync = original  # type: ignore[assignment]
    assert payloads == [b"before", b"after"] and corrupt >= 1, (len(payloads), corrupt)
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--mib", type=int, default=16)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    size = args.mib << 20
    damages = {
        "random garbage": random.Random(16).randbytes(size),
        "zeros (a hole)": bytes(size),
        "repeated small ints": struct.pack("<4I", 1, 2, 3, 0) * (size // 16),
    }
    for label, damage in damages.items():
        data = frame(b"before") + damage + frame(b"after")
        fast, slow = [], []
        for _ in range(args.repeat):
            fast.append(parse_with(framing._resync, data))
            slow.append(parse_with(simple_resync, data))
        ratios = sorted(s / f for f, s in zip(fast, slow, strict=True))
        print(
            f"{label:20s} {args.mib} MiB: numpy {args.mib / statistics.median(fast):8.1f} MiB/s "
            f"({statistics.median(fast):.3f} s)  per-position "
            f"{args.mib / statistics.median(slow):6.1f} MiB/s ({statistics.median(slow):.2f} s)  "
            f"speed-up {statistics.median(ratios):.0f}x ({ratios[0]:.0f}-{ratios[-1]:.0f}x)"
        )


if __name__ == "__main__":
    main()
