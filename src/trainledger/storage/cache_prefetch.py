"""Downloads that start while a prefix is still being listed.

A first sync of a big base is a listing (one request per 1,000 objects, one after another)
and then thousands of downloads; done in turn, the listing's round trips come on top of the
downloads'. So each page of the listing is looked at as it arrives, and the objects a copy
will download anyway start at once on ``storage.cache``'s download threads.

An object starts early only when nothing later in the listing can change what is done with
it: it is wanted, its key passes ``key_problem`` and stays inside the copy, it is not an event
file whose fate waits for its folder's sidecars (a stand-in), its local copy is not of this
version, and the listing has passed every key that could make it a folder (``x`` beside
``x/y``: every key under ``x/`` sorts before ``x0``). Anything that fails here is left to the
ordinary pass, which decides again. The downloads run on the store's client
(``ObjectStore.start_get``), as many at once as it allows.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from concurrent.futures import Future

from trainledger.storage.mirror import skipped
from trainledger.storage.naming import is_event_file_name
from trainledger.storage.objects import ObjectInfo, ObjectLocation, ObjectStore, key_problem

__all__ = ["Prefetch"]


class Prefetch:
    """Starts the downloads a listing's pages make certain (module doc); ``finish`` waits for
    them and says which arrived (rel -> ETag)."""

    def __init__(
        self,
        store: ObjectStore,
        loc: ObjectLocation,
        local: str,
        want: Callable[[str], bool],
        stand_ins: bool,
        have: Callable[[], dict[str, str]],
        inside: Callable[[str, str], str | None],
    ) -> None:
        self._store, self._loc, self._local = store, loc, local
        self._want, self._stand_ins = want, stand_ins
        self._have_of, self._inside = have, inside  # (storage.cache's, which imports this)
        self._have: dict[str, str] | None = None
        self._waiting: list[tuple[str, ObjectInfo]] = []
        self._started: dict[str, tuple[Future[None], str]] = {}

    def page(self, page: dict[str, ObjectInfo], last: str) -> None:
        """One page of the listing (``last``: its greatest key)."""
        if self._have is None:
            self._have = self._have_of()
        for rel in sorted(page):
            name = rel.rsplit("/", 1)[-1]
            if not self._want(rel) or skipped(rel) or key_problem(rel) is not None:
                continue
            if self._stand_ins and is_event_file_name(name):
                continue
            self._waiting.append((rel, page[rel]))
        ready = [w for w in self._waiting if last >= w[0] + "0"]
        self._waiting = self._waiting[len(ready) :]
        for rel, info in ready:
            self._start(rel, info)

    def _start(self, rel: str, info: ObjectInfo) -> None:
        path = self._inside(self._local, rel)
        have = self._have or {}
        if path is None or (have.get(rel) == info.etag and os.path.isfile(path)):
            return
        job = self._store.start_get(self._loc.child(rel), path)
        self._started[rel] = (job, info.etag)

    def finish(self) -> dict[str, str]:
        """Wait for the downloads started; those that arrived (rel -> ETag)."""
        done = {}
        for rel, (job, etag) in self._started.items():
            try:
                job.result()
            except Exception:  # noqa: BLE001 - the ordinary pass decides again
                continue
            done[rel] = etag
        return done
