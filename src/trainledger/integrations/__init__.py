"""Adapters for trainers trainledger does not run: hand-written loops (``track``), PyTorch
Lightning, Hugging Face Transformers, and an importer of MLflow runs.

Each adapter fills the same lineage and summaries as the native ``Model`` (through
``RunRecorder``); the Lightning, Transformers and MLflow modules import their library only
when used (extras ``lightning``, ``transformers``, ``mlflow``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from trainledger.lazy import lazy_exports

_EXPORTS: dict[str, str] = {
    "ImportReport": "trainledger.integrations.mlflow",
    "import_mlflow": "trainledger.integrations.mlflow",
    "RunRecorder": "trainledger.integrations.recorder",
    "flat_hparams": "trainledger.integrations.recorder",
    "Tracker": "trainledger.integrations.tracking",
    "track": "trainledger.integrations.tracking",
}

__all__ = [
    "flat_hparams",
    "import_mlflow",
    "ImportReport",
    "RunRecorder",
    "track",
    "Tracker",
]

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())

if TYPE_CHECKING:  # pragma: no cover - for type checkers and IDEs only
    from trainledger.integrations.mlflow import ImportReport, import_mlflow
    from trainledger.integrations.recorder import RunRecorder, flat_hparams
    from trainledger.integrations.tracking import Tracker, track
