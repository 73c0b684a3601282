"""CSV export, streamed and kept off the threads that serve the page.

Why: an export of every run builds one row per run (reading each run's ``run`` fields), which
is long CPU work. Run on the request thread pool, twenty concurrent exports took every thread
and the GIL, and the page's small requests waited behind them (p99 10.8 s). Here exports run
on their own small pool (``EXPORT_WORKERS`` at a time; more wait their turn) and are sent in
parts of ``CHUNK_ROWS`` rows as they are made, so the first bytes leave at once. The text of
the last ``CACHED_EXPORTS`` exports is kept with the search result it was made from (the
query service shares one result object per data version and condition), so the same export
asked again before the data changes is sent without being made again.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections import OrderedDict
from collections.abc import AsyncIterator, Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from trainledger.lineage import Redaction, redact_object
from trainledger.query import flatten_object
from trainledger.server.columns import columns_of, to_csv
from trainledger.server.run_store import RunStore

EXPORT_WORKERS = 2
CHUNK_ROWS = 500
CACHED_EXPORTS = 2
T = TypeVar("T")
_POOL = ThreadPoolExecutor(max_workers=EXPORT_WORKERS, thread_name_prefix="trainledger-export")
# (id of the result, columns) -> (the result, kept so its id is not reused; the parts)
_MADE: OrderedDict[tuple[int, tuple[str, ...] | None], tuple[dict[str, Any], list[str]]] = (
    OrderedDict()
)
_MADE_LOCK = threading.Lock()


async def on_export_pool(fn: Callable[[], T]) -> T:
    """Run ``fn`` on the export pool (not the pool that serves the page's requests)."""
    return await asyncio.get_running_loop().run_in_executor(_POOL, fn)


def csv_parts(store: RunStore, result: dict[str, Any], columns: list[str] | None) -> Iterator[str]:
    """The CSV text of ``result`` in parts: the header first, then ``CHUNK_ROWS`` rows each.

    The header needs every row's keys but not the runs' ``run`` fields (those columns are
    always listed), so only the parts read them, as they are sent.
    """
    key = (id(result), tuple(columns) if columns else None)
    with _MADE_LOCK:
        made = _MADE.get(key)
        if made is not None and made[0] is result:
            _MADE.move_to_end(key)
            return iter(made[1])
    objects = result["object"]
    policy = Redaction.from_env()  # TRAINLEDGER_REDACT: an export leaves the machine
    names = columns or [
        "run_id",
        *columns_of(
            (flatten_object(obj, scalar_cells=True) for obj in _polite(objects)),
            result.get("customized", {}),
        ),
        "tag",
        "remark",
    ]

    def parts() -> Iterator[str]:
        sent = [to_csv([], names)]
        yield sent[-1]
        for start in range(0, len(objects), CHUNK_ROWS):
            chunk = objects[start : start + CHUNK_ROWS]
            if chunk and "run" not in chunk[0]:  # large results come without them
                chunk = [{**obj, "run": store.run_info(obj["run_id"])} for obj in chunk]
            rows = (
                flatten_object(redact_object(o, policy), scalar_cells=True) for o in _polite(chunk)
            )
            sent.append(to_csv(rows, names, header=False))
            yield sent[-1]
        with _MADE_LOCK:
            _MADE[key] = (result, sent)
            while len(_MADE) > CACHED_EXPORTS:
                _MADE.popitem(last=False)

    return parts()


_POLITE_ROWS = 10


def _polite(items: list[Any]) -> Iterator[Any]:
    """``items``, letting other threads run every ``_POLITE_ROWS`` of them: making an export
    is pure Python and holds the GIL, and the page's requests must not queue behind it."""
    for start in range(0, len(items), _POLITE_ROWS):
        yield from items[start : start + _POLITE_ROWS]
        time.sleep(0)  # releases the GIL: a waiting request thread takes it


async def stream_on_pool(parts: Iterator[str]) -> AsyncIterator[str]:
    """Each part made on the export pool, then sent."""
    done = object()
    while True:
        part = await on_export_pool(lambda: next(parts, done))
        if part is done:
            return
        yield part  # type: ignore[misc]
