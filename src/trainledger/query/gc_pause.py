"""Pausing Python's cyclic garbage collector while a large answer is built.

Why: an answer of 10,000 runs is about 100,000 new dicts and lists. Each 700 allocations
start a young collection, and the survivors soon start full ones, which walk every object the
process holds, the index's cached records included. Measured on a range query over 100,000
runs (10,010 answers): 129 ms with the collector running, 75 ms with it paused
(BENCHMARKS.md, issue 34 item 6). Building answers makes no reference cycles (fresh dicts,
lists and scalars only), so pausing leaves nothing for the collector to find, and the
allocations still count toward the next collection once it runs again.

Only reads and answer building are paused, never a refresh: parsing run files may make
cycles (an exception's traceback) and may run for minutes.

The pause is process-wide and nests across threads: the first to enter pauses the collector
if it was running, the last to leave starts it again. A collector the program had disabled
stays disabled.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["gc_paused"]

_lock = threading.Lock()
_depth = 0
_resume = False


@contextmanager
def gc_paused() -> Iterator[None]:
    """Within the block, no cyclic collection runs (module docstring: why and when)."""
    global _depth, _resume
    with _lock:
        if _depth == 0:
            _resume = gc.isenabled()
            gc.disable()
        _depth += 1
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0 and _resume:
                gc.enable()
