"""What a mistaken field name is answered with: the nearest names there are ("did you mean"),
and the notes for a condition naming a field no run has.

Why one module: the Python API, the CLI and the web UI answer the same mistake, and they must
say the same thing. A condition on ``metric/Accuracy`` where the runs record
``metric/accuracy`` is valid, and matches nothing; without a note it reads as "no run is that
good".
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from trainledger.query.fields import PREFIXES

__all__ = ["nearest_fields", "did_you_mean", "condition_fields", "missing_field_notes"]

_CUTOFF = 0.6


def nearest_fields(name: str, choices: Iterable[str], n: int = 2) -> list[str]:
    """The ``choices`` closest to ``name``, best first, never ``name`` itself: compared whole
    and, for a name without a prefix, by the part after a choice's prefix too (``acuracy``
    finds ``metric/accuracy``); a choice equal but for case stands alone."""
    options = [c for c in dict.fromkeys(choices) if c != name]
    same_case = [c for c in options if c.lower() == name.lower()]
    if same_case:
        return same_case[:n]
    wanted = name.lower()

    def score(choice: str) -> float:
        parts = [choice.lower()]
        if "/" not in name and "/" in choice:
            parts.append(choice.split("/", 1)[1].lower())
        return max(difflib.SequenceMatcher(None, wanted, p).ratio() for p in parts)

    scored = sorted(((score(c), c) for c in options), key=lambda sc: -sc[0])
    return [c for s, c in scored if s >= _CUTOFF][:n]


def did_you_mean(name: str, choices: Iterable[str]) -> str:
    """ "; did you mean 'a' or 'b'?" with the nearest of ``choices``, or ""."""
    close = nearest_fields(name, choices)
    return f"; did you mean {' or '.join(repr(c) for c in close)}?" if close else ""


def condition_fields(condition: Mapping[str, Any]) -> list[str]:
    """The fields a condition tests or sorts by, nested ``or``/``and``/``not`` included."""
    names: list[str] = []
    for key, value in condition.items():
        if key in ("or", "and") and isinstance(value, (list, tuple)):
            for sub in value:
                names += condition_fields(sub) if isinstance(sub, Mapping) else []
        elif key == "not" and isinstance(value, Mapping):
            names += condition_fields(value)
        elif key == "sorted_name" and isinstance(value, str):
            names.append(value)
        elif isinstance(value, Mapping):
            names.append(key)
    return list(dict.fromkeys(names))


def missing_field_notes(
    condition: Mapping[str, Any],
    customized: Mapping[str, Any],
    known: Callable[[], Iterable[str]],
) -> list[str]:
    """One note per ``metric/``, ``user_defined/``, ``optimizer/`` or ``scheduler/`` field
    that ``condition`` names and no run has, with the nearest the runs do have.
    ``customized``: the answer's (a field there is some run's); ``known()``: every run's,
    asked only when a named field is missing from ``customized``."""
    missing = [
        n for n in condition_fields(condition) if n.startswith(PREFIXES) and n not in customized
    ]
    if not missing:
        return []
    have = list(known())
    return [
        f"no run has the field {name!r}, so the condition or sort on it matches or orders "
        f"nothing{did_you_mean(name, have)}"
        for name in missing
        if name not in have
    ]
