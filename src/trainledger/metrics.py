"""``trainledger.metrics`` is :mod:`trainledger.run.metrics` (the same module object).

Why an alias: MindSpore users write ``import mindspore.nn.metrics``-style imports and the
documentation names ``trainledger.metrics``; the metrics themselves live with the training host
(``run/``), which imports nothing else of the package.
"""

from __future__ import annotations

import sys
from typing import Any

from trainledger.run import metrics as _metrics

__all__ = list(_metrics.__all__)


def __getattr__(name: str) -> Any:  # for type checkers; at run time the module is replaced
    return getattr(_metrics, name)


sys.modules[__name__] = _metrics
