"""Schema 13: the kind of each series' first NaN or infinity (``series_stats.nonfinite_kind``:
``"nan"``, ``"inf"`` or ``"-inf"``; issue 51 item 3).

Why the kind and not only the step: a loss that overflowed to inf and one that went NaN are
different failures, and the UI says which (``as: inf at step 72``). Why apart from
``schema.py``: that module is at its size limit.

The migration forgets the saved series state of the runs holding a series that went
non-finite, so the next scan reads them again and learns the kind; the others are not read.
Code of version 12 can still use the index: the rows it stores leave the kind NULL, which the
UI shows as "non-finite".
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

__all__ = ["v13"]


class _Dialect(Protocol):
    """What the migration needs of ``schema.Dialect`` (schema imports this module)."""

    @property
    def txt(self) -> str: ...


_DIVERGED = "SELECT summary_dir FROM series_stats WHERE nonfinite_step IS NOT NULL"


def v13(conn: Any, dialect: _Dialect, tables: Sequence[str]) -> None:
    """Add ``nonfinite_kind`` and forget what the index holds of the diverged runs' series
    (stats last: the others are found through them). ``conn``: a ``schema.Connection``."""
    conn.execute(f"ALTER TABLE series_stats ADD COLUMN nonfinite_kind {dialect.txt}")
    for table in ("series_files", "series_overviews", "series_stats"):
        conn.execute(f"DELETE FROM {table} WHERE summary_dir IN ({_DIVERGED})")
