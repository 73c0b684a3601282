"""Names of registered models and aliases, and references to a version: ``NAME@ALIAS``,
``NAME/VERSION``.

Why short words only: a name travels in shell arguments, URLs, file names and log lines, so
it must need no quoting or escaping anywhere, and ``@`` and ``/`` must stay free to separate
a name from an alias or a version. Every check says what was expected and what was received.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from trainledger.errors import LineageParamValueError

__all__ = ["ModelRef", "WORD_RULE", "check_word", "check_version", "parse_reference"]

#: what a model name or an alias must be, as the errors say it
WORD_RULE = (
    "a short word: 1 to 64 letters, digits, '_', '-' or '.', starting with a letter or a digit"
)
_WORD = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
_REFERENCE_RULE = (
    "NAME@ALIAS or NAME/VERSION (NAME and ALIAS each " + WORD_RULE + "; VERSION a number from 1)"
)


def check_word(value: Any, what: str = "model name") -> str:
    """``value`` if it is a model name or alias (``WORD_RULE``), else an error naming it."""
    if not isinstance(value, str) or _WORD.fullmatch(value) is None:
        shown = repr(value) if isinstance(value, str) else type(value).__name__
        raise LineageParamValueError(f"a {what} expected {WORD_RULE}; received: {shown}")
    return value


def check_version(value: Any, name: str | None = None) -> int:
    """``value`` if it is a version number (an int from 1; a bool is not one)."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        shown = repr(value) if isinstance(value, (int, str)) else type(value).__name__
        of = f" of model {name!r}" if name else ""
        raise LineageParamValueError(f"a version{of} expected a number from 1; received: {shown}")
    return value


@dataclass(frozen=True)
class ModelRef:
    """A parsed reference: the model's ``name`` and either an ``alias`` or a ``version``."""

    name: str
    alias: str | None = None
    version: int | None = None

    def __str__(self) -> str:
        return f"{self.name}@{self.alias}" if self.alias else f"{self.name}/{self.version}"


def parse_reference(ref: Any) -> ModelRef:
    """``"classifier@production"`` -> alias, ``"classifier/3"`` -> version 3; anything else
    is an error saying both forms."""
    if isinstance(ref, ModelRef):
        return ref
    text = ref if isinstance(ref, str) else None
    found = None
    if text is not None:
        found = re.fullmatch(r"([^@/]+)(?:@([^@/]+)|/([0-9]+))", text)
    if found is None:
        shown = repr(ref) if isinstance(ref, str) else type(ref).__name__
        raise LineageParamValueError(
            f"a model reference expected {_REFERENCE_RULE}; received: {shown}"
        )
    name, alias, version = found.groups()
    if _WORD.fullmatch(name) is None or (alias is not None and _WORD.fullmatch(alias) is None):
        raise LineageParamValueError(
            f"a model reference expected {_REFERENCE_RULE}; received: {text!r}"
        )
    if version is not None and int(version) < 1:
        raise LineageParamValueError(
            f"a model reference expected {_REFERENCE_RULE}; received: {text!r} (version 0)"
        )
    return ModelRef(name, alias, int(version) if version is not None else None)
