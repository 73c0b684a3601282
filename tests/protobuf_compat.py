"""What the tests ask of a field descriptor on every protobuf runtime the package supports
(4.21 to today): newer runtimes add ``is_repeated`` and deprecate ``label``."""

from __future__ import annotations

from typing import Any


def is_repeated(field: Any) -> bool:
    """Whether a ``FieldDescriptor`` is a repeated field, on any supported runtime."""
    flag = getattr(field, "is_repeated", None)
    if flag is not None:
        return bool(flag)
    return bool(field.label == field.LABEL_REPEATED)
