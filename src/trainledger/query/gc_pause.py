"""Pausing Python's cyclic garbage collector while a large answer is built.

Why: an answer of 10,000 runs is about 100,000 new dicts and lists. Each 700 allocations
start a young collection, and the survivors soon start full ones, which walk every object the
process holds, the index's cached records included. Measured on a range query over 100,000
runs (10,010 answers): 129 ms with the collector running, 75 ms with it paused
(BENCHMARKS.md, issue 34 item 6). Building answers makes no reference cycles (fresh dicts,
lists and scalars only), so pausing leaves nothing for the collector to find.

When the last pause ends, what was allocated meanwhile is moved to the oldest generation
without a walk (``gc.freeze`` then ``gc.unfreeze``: two list splices, documented to put the
objects back into the oldest generation). Else the first allocation after the pause started
a young collection over every answer object (60,000 containers for 10,010 answers: 10-16 ms
of a 75-85 ms range query, measured). Those objects are walked at the next full collection
instead, if they still live; a cycle made meanwhile (an exception's traceback) is found
there too. A program that froze objects itself (``gc.get_freeze_count()``) is left alone:
its frozen objects must stay frozen.

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
                if not gc.get_freeze_count():
                    gc.freeze()
                    gc.unfreeze()
                gc.enable()
