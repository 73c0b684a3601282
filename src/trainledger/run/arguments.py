"""Checks of the host's arguments: a clear ``ValueError`` saying what was expected."""

from __future__ import annotations

from typing import Any

__all__ = ["check_frequency", "check_int", "check_positive_int"]


def check_int(value: Any, name: str, minimum: int) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or value < minimum:
        raise ValueError(f"{name} expected an int >= {minimum}, received: {value!r}")


def check_positive_int(value: Any, name: str) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{name} expected a positive int, received: {value!r}")


def check_frequency(freq: Any) -> None:
    if isinstance(freq, list) and all(isinstance(f, int) and f >= 1 for f in freq):
        return
    if isinstance(freq, int) and not isinstance(freq, bool) and freq >= 1:
        return
    raise ValueError(
        f"valid_frequency expected an int >= 1 or a list of epoch numbers, received: {freq!r}"
    )
