"""The range query over an indexed base, query by query: its first answer, its second (the
records' answer forms are made), its warm answers, every run, and the range again after
every run has turned the record cache over.

Why apart from ``bench/query.py``: that one builds its base's index from scratch each run
(about a minute at 100,000 runs); this one times an index that exists, so ``bench/ab.py`` can
pair two source trees over the same base in minutes. Make the base with
``bench/query.py --sizes 100000 --dir DIR`` first, then:

    .venv/bin/python bench/ab.py --a <old worktree> --b . --rounds 6 -- \\
        bench/range_query.py DIR/runs100000

Both trees must read the index's schema (no refresh is made: ``refresh=False``).
"""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Any

from trainledger.query.index import LineageIndex

RANGE = {"metric/Accuracy": {"ge": 0.5, "le": 0.6}}


#: seconds to free each timed answer (its 10,010 objects), apart from the query's time
FREED: list[float] = []


def _times(index: LineageIndex, cond: Any, reps: int) -> list[float]:
    """The query's times from call to answer; freeing the answer is timed apart (``FREED``),
    as ``bench/query.py`` leaves it out (the caller frees it when done with it)."""
    out = []
    for _ in range(reps):
        start = time.perf_counter()
        answer = index.query(cond, refresh=False)
        out.append(time.perf_counter() - start)
        start = time.perf_counter()
        del answer
        FREED.append(time.perf_counter() - start)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("base", help="an indexed base (bench/query.py --dir DIR: DIR/runsN)")
    parser.add_argument("--reps", type=int, default=9)
    args = parser.parse_args()
    index = LineageIndex(args.base, watch=False)
    first, second = _times(index, RANGE, 2)
    print(f"range first {first * 1e3:.1f} ms")
    print(f"range second {second * 1e3:.1f} ms")
    print(f"range warm {statistics.median(_times(index, RANGE, args.reps)) * 1e3:.1f} ms")
    freed = statistics.median(FREED[-args.reps :])
    print(f"all {statistics.median(_times(index, None, 3)) * 1e3:.0f} ms")
    after = _times(index, RANGE, args.reps)[2:]  # (two to make the forms again)
    print(f"range after all {statistics.median(after) * 1e3:.1f} ms")
    print(f"range warm, freeing its answer {freed * 1e3:.1f} ms")
    index.close()


if __name__ == "__main__":
    main()
