"""How numbers outside SQLite's INTEGER range are indexed and compared.

Why: a lineage file can hold any integer (a uint64 counter, a JSON metric of 400 digits), but
SQLite (and PostgreSQL's BIGINT) stop at signed 64 bits, and binding a larger Python int raises
``OverflowError``. The rule, the same for stored values and condition values so that both
sides of every comparison agree on any SQL engine:

- an integer within ``[-2**63, 2**63 - 1]`` is stored and compared exactly;
- a larger one is stored and compared as the nearest float64 (``REAL`` / ``double
  precision``), and as +/-infinity beyond float64's range (about 1.8e308).

So ``2**64`` and ``2**64 + 1`` compare equal in queries; the run's record (what queries
return and the UI shows) keeps the exact integer.
"""

from __future__ import annotations

import math
from typing import Any

INT64_MIN = -(2**63)
INT64_MAX = 2**63 - 1


def sql_number(value: Any) -> Any:
    """``value`` as bound to SQL: out-of-range ints become float64; anything else unchanged."""
    if not isinstance(value, int) or INT64_MIN <= value <= INT64_MAX:  # (bools are in range)
        return value
    try:
        return float(value)
    except OverflowError:
        return math.inf if value > 0 else -math.inf
