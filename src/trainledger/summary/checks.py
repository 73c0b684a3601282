"""Checks of what callers give ``SummaryRecord``: steps, tags and scalar rows."""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["check_rows", "check_step", "check_tag"]

PLAIN_NUMBERS = {int, float}


def check_step(step: Any) -> int:
    if isinstance(step, bool) or not isinstance(step, (int, np.integer)):
        raise TypeError(f"step expected an int, received: {type(step).__name__}")
    return int(step)


def check_tag(name: Any) -> str:
    if not isinstance(name, str):
        raise TypeError(f"summary name expected a str, received: {type(name).__name__}")
    if not name:
        raise ValueError("summary name expected a non-empty str, received: ''")
    return name


def check_rows(tags: tuple[str, ...], rows: list[Any]) -> None:
    """Rows ``(step:int, wall_time, *values)`` of real numbers, one value per tag. The common
    all-int/all-float case is checked column by column at C speed; anything else row by row,
    to name the row at fault."""
    width = len(tags) + 2
    try:
        columns = list(zip(*rows, strict=True)) if set(map(len, rows)) == {width} else None
    except TypeError:  # a row without len()
        columns = None
    if (
        columns is not None
        and set(map(type, columns[0])) == {int}
        and all(set(map(type, col)) <= PLAIN_NUMBERS for col in columns[1:])
    ):
        return
    for row in rows:
        if not isinstance(row, tuple | list) or len(row) != width or type(row[0]) is not int:
            raise ValueError(
                f"record_scalar_rows expected rows (step, wall_time, {len(tags)} values), "
                f"received: {row!r}"
            )
        for value in row[1:]:
            if isinstance(value, bool) or not isinstance(value, int | float | np.number):
                raise TypeError(
                    f"record_scalar_rows expected real numbers, received: {value!r} in {row!r}"
                )
