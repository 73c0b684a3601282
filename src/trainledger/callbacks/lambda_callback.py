"""``LambdaCallback``: a callback from plain functions, for one-off hooks."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from trainledger.run import HOOKS, TRAIN_TO_OLD, Callback, RunContext

__all__ = ["LambdaCallback"]

_NAMES = (*HOOKS, *TRAIN_TO_OLD.values())


class LambdaCallback(Callback):
    """Build a callback from functions of ``run_context``, one per hook.

    ``LambdaCallback(on_train_epoch_end=lambda rc: print(rc.original_args().cur_epoch_num))``.
    Any hook name is accepted, new (``on_train_step_end``) or old (``step_end``); hooks not
    given do nothing and cost nothing (the host skips them).
    """

    def __init__(self, **hooks: Callable[[RunContext], Any] | None) -> None:
        for name, fn in hooks.items():
            if name not in _NAMES:
                raise TypeError(
                    f"LambdaCallback expected hook names among {', '.join(_NAMES)}, "
                    f"received: {name!r}"
                )
            if fn is None:
                continue
            if not callable(fn):
                raise TypeError(
                    f"LambdaCallback {name} expected a callable of run_context, "
                    f"received: {type(fn).__name__}"
                )
            setattr(self, name, fn)
