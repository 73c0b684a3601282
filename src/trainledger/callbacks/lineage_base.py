"""What ``TrainLineage`` and ``EvalLineage`` share: construction, MindInsight's error policy
(log and go on unless ``raise_exception``), the rank that writes, and the writing itself."""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Mapping
from typing import Any

from trainledger.errors import LineageError, LineageParamTypeError, TrainledgerError
from trainledger.lineage import (
    distributed_info,
    get_writer,
    user_defined_event,
    validate_user_defined_info,
)
from trainledger.lineage import lineage_pb2 as pb
from trainledger.run import Callback, CallbackParams, RunContext
from trainledger.storage import writable_dir

__all__ = ["LineageCallback"]

_log = logging.getLogger("trainledger.lineage")


def _log_dir_of(summary_record: Any) -> str:
    """The run directory: a SummaryRecord's ``log_dir`` (duck-typed) or a path."""
    target = getattr(summary_record, "log_dir", summary_record)
    if isinstance(target, (str, os.PathLike)) and os.fspath(target):
        return os.path.abspath(writable_dir(target, "summary_record"))
    raise LineageParamTypeError(
        "summary_record expected a SummaryRecord or a directory path, received: "
        f"{type(summary_record).__name__}"
    )


class LineageCallback(Callback):
    """Shared construction, error policy and writing of the two lineage callbacks."""

    def __init__(
        self,
        summary_record: Any,
        raise_exception: bool = False,
        user_defined_info: Mapping[str, Any] | None = None,
        *,
        all_ranks: bool = False,
    ) -> None:
        # MindInsight's policy for bad arguments too: raise only when asked to, else log the
        # error and let training go on (a bad summary_record: this callback records nothing)
        self.raise_exception = bool(raise_exception)
        self._log_dir: str | None = None
        self._user_info: dict[str, int | float | str] = {}
        self._user_info_written = False
        try:
            if not isinstance(raise_exception, bool):
                raise LineageParamTypeError(
                    f"raise_exception expected a bool, received: {type(raise_exception).__name__}"
                )
            self._log_dir = _log_dir_of(summary_record)
            os.makedirs(self._log_dir, exist_ok=True)
            if user_defined_info is not None:
                self._user_info = validate_user_defined_info(user_defined_info)
        except (LineageError, OSError) as exc:
            if self.raise_exception:
                raise
            _log.error("%s: %s (training goes on)", type(self).__name__, exc)
        self._all_ranks = bool(all_ranks)

    @property
    def log_dir(self) -> str | None:
        """The run directory; None when a bad ``summary_record`` disabled the callback."""
        return self._log_dir

    @property
    def user_defined_info(self) -> dict[str, int | float | str]:
        return dict(self._user_info)

    def update_user_defined_info(self, info: Mapping[str, Any]) -> None:
        """Merge more user fields (validated); written with the next lineage record."""
        self._user_info.update(validate_user_defined_info(info))
        self._user_info_written = False

    def _guarded(self, hook: str, fn: Callable[[CallbackParams], None], rc: RunContext) -> None:
        """Run a hook body; on failure log and go on, or raise when ``raise_exception``."""
        try:
            fn(rc.original_args())
        except Exception as exc:
            if self.raise_exception:
                if isinstance(exc, TrainledgerError):
                    raise
                raise LineageError(
                    f"{type(self).__name__}.{hook} failed: {type(exc).__name__}: {exc}"
                ) from exc
            _log.error(
                "%s.%s failed, training goes on: %s", type(self).__name__, hook, exc, exc_info=exc
            )

    def _writes(self) -> bool:
        if self._log_dir is None:
            return False
        rank = distributed_info()[0]
        return rank == 0 or self._all_ranks

    def _write(self, events: list[pb.LineageEvent]) -> str:
        assert self._log_dir is not None  # _writes() said so
        path = get_writer(self._log_dir, rank=distributed_info()[0]).write(events)
        if any(e.WhichOneof("what") == "user_defined_info" for e in events):
            self._user_info_written = True  # only once it is on disk
        return path

    def _user_events(self) -> list[pb.LineageEvent]:
        if self._user_info and not self._user_info_written:
            return [user_defined_event(self._user_info)]
        return []
