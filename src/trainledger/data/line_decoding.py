"""How ``FileTailSource`` turns one complete line into a record: UTF-8 text, then a JSON value
or a CSV row under its file's header (numbers as numbers); a line that yields no record is
``SKIP``.

Why a module of its own: what a line means is independent of how the files are found, followed
and committed (``file_tail.py``) and of how one file is read (``tailed_file.py``); the rule for a
bad line (reported through ``bad`` and skipped, never raised) is kept in this one place.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Callable
from typing import Any, Final

from trainledger.data.tailed_file import TailedFile

__all__ = ["SKIP", "csv_value", "decode_line"]

#: what ``decode_line`` answers for a line that is no record (a CSV header, a bad line)
SKIP: Final[object] = object()


def decode_line(
    tailed: TailedFile,
    raw: bytes,
    where: str,
    *,
    is_first: bool,
    fmt: str,
    csv_fieldnames: list[str] | None,
    bad: Callable[[str, str], None],
) -> Any:
    """The record of one line of ``tailed`` (``raw``, without its newline, read at ``where``),
    or ``SKIP``: for the header line of a CSV file (``is_first``, unless ``csv_fieldnames``
    names the fields), and for a bad line, which ``bad(where, reason)`` reports."""
    try:
        text = raw.decode("utf-8").rstrip("\r")
    except UnicodeDecodeError as exc:
        bad(where, f"not UTF-8 ({exc})")
        return SKIP
    if fmt == "jsonl":
        try:
            return json.loads(text)
        except ValueError as exc:
            bad(where, f"invalid JSON ({exc})")
            return SKIP
    fields = _csv_header(tailed, text if is_first else None, csv_fieldnames)
    if fields is None:
        return SKIP  # this line was the header
    try:
        values = next(csv.reader([text]))
    except (csv.Error, StopIteration) as exc:
        bad(where, f"invalid CSV ({exc})")
        return SKIP
    if len(values) != len(fields):
        bad(where, f"expected {len(fields)} CSV fields, received {len(values)}")
        return SKIP
    return {k: csv_value(v) for k, v in zip(fields, values, strict=True)}


def _csv_header(
    tailed: TailedFile, first_line: str | None, csv_fieldnames: list[str] | None
) -> list[str] | None:
    """The field names of ``tailed``'s rows; None when ``first_line`` is the header itself."""
    if csv_fieldnames is not None:
        return csv_fieldnames
    if first_line is not None:
        tailed.header = next(csv.reader([first_line]))
        return None
    if tailed.header is None:  # resumed past the header: read it again from the start
        line = tailed.first_line().decode("utf-8", errors="replace").rstrip("\r\n")
        tailed.header = next(csv.reader([line]))
    return tailed.header


def csv_value(value: str) -> Any:
    """CSV text -> int or float when it is one, else the text."""
    try:
        return int(value)
    except ValueError:
        pass
    try:
        return float(value)
    except ValueError:
        return value
