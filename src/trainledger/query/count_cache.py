"""The count of a condition's matches kept between the queries of one ``LineageIndex``.

Why: a page of a filtered, sorted query reads about as many rows as it shows, but its count
(with the custom values' types and a series sort's segment sizes) reads every match. Over
10,000 runs of 1,650 custom values, two conditions on custom values cost 12-15 ms of a 16 ms
query, nearly all of it the count (BENCHMARKS.md, issue 34 item 3). Paging through a result,
or sorting it by another column, asks for the same count again. A one-field range answered
whole also keeps its runs' order here (``page_read._range_order``: an array of run numbers, 8
bytes a run), which took 10 of the 15 ms its page read at 100,000 runs.

Validity: an entry is keyed by what decides the count (the SQL of every match and its
parameters, and the sort field whose segments are counted) and kept while the index
generation it was counted at holds; every write of runs bumps the generation
(``backend.IndexDb.write``), read in the same transaction as the page. A condition on
annotations (a run's tag) is never kept: setting a tag does not bump the generation.
``forget`` drops everything (a new index file, ``LineageIndex._fresh``).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any

from trainledger.query import schema
from trainledger.query.schema import Connection

__all__ = ["CountCache"]

#: conditions kept (each: a count, the custom labels' type names, at most two sizes)
DEFAULT_LIMIT = 64


class CountCache:
    """Key -> (count, custom label -> type names, segment sizes), or a range's run order, of
    the current generation."""

    def __init__(self, limit: int = DEFAULT_LIMIT) -> None:
        self.limit = limit
        self._generation: Any = None
        self._entries: OrderedDict[Hashable, Any] = OrderedDict()

    def __len__(self) -> int:
        return len(self._entries)

    def forget(self) -> None:
        """Drop every entry (the index may have changed without a generation bump)."""
        self._entries.clear()
        self._generation = None

    def get(self, conn: Connection, key: Hashable, count: Callable[[], Any]) -> Any:
        """The kept result for ``key`` if counted at the current generation, else ``count()``
        (inside the caller's read transaction), kept. Results are shared: read-only."""
        generation = schema.read_meta(conn, "generation")
        if generation is None or generation != self._generation:
            self.forget()
            self._generation = generation
        if key in self._entries:
            self._entries.move_to_end(key)
            return self._entries[key]
        result = count()
        if generation is not None:
            self._entries[key] = result
            while len(self._entries) > self.limit:
                self._entries.popitem(last=False)
        return result
