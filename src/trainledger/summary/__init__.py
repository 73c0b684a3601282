"""TensorBoard-format summaries: framing, protobuf schema, pure encoders, writer, reader.

``read_scalars(run_dir)``, ``iter_events(run_dir)``, ``RunReader`` (incremental) and
``SummaryRecord`` are re-exported lazily, so importing ``trainledger.summary.framing`` (as the
lineage files do) loads nothing else. Nothing here imports torch.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS: dict[str, str] = {
    "SummaryRecord": "trainledger.summary.record",
    "RunReader": "trainledger.summary.reader",
    "iter_events": "trainledger.summary.reader",
    "list_event_files": "trainledger.summary.reader",
    "read_scalars": "trainledger.summary.reader",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module_name = _EXPORTS.get(name)
    if module_name is None:
        raise AttributeError(f"module 'trainledger.summary' has no attribute {name!r}")
    value = getattr(importlib.import_module(module_name), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))
