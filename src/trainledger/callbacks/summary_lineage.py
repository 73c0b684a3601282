"""The lineage a ``SummaryCollector`` writes: which lineage callbacks its switches ask for.

The collector never writes lineage itself; it drives these callbacks (the one lineage writer
is theirs) and forwards its hooks to them.
"""

from __future__ import annotations

from typing import Any

from trainledger.callbacks.hparams_session import HParamsSession
from trainledger.callbacks.lineage import EvalLineage, TrainLineage
from trainledger.run import Callback

__all__ = ["CollectorTrainLineage", "collector_lineage"]


def collector_lineage(
    summary_dir: str, switches: dict[str, Any], custom: dict[str, int | float | str] | None
) -> list[Callback]:
    """The lineage callbacks for the collector's switches (``collect_train_lineage``,
    ``collect_dataset_graph``, ``collect_eval_lineage``) and ``custom_lineage_data``, which
    goes with the first of them."""
    children: list[Callback] = []
    keep_train = bool(switches.get("collect_train_lineage"))
    keep_graph = bool(switches.get("collect_dataset_graph"))
    if keep_train or keep_graph or custom:
        children.append(CollectorTrainLineage(summary_dir, custom, keep_train, keep_graph))
    if switches.get("collect_eval_lineage"):
        children.append(EvalLineage(summary_dir, user_defined_info=None if children else custom))
    if keep_train:  # TensorBoard's HParams session, written when the summary file closes
        children.append(HParamsSession(summary_dir, custom, live=False))
    return children


class CollectorTrainLineage(TrainLineage):
    """``TrainLineage`` whose records are filtered by the collector's switches, so
    ``collect_train_lineage`` and ``collect_dataset_graph`` can be turned off separately."""

    def __init__(
        self,
        log_dir: str,
        user_defined_info: dict[str, Any] | None,
        keep_train: bool,
        keep_graph: bool,
    ) -> None:
        super().__init__(log_dir, user_defined_info=user_defined_info)
        self._keep_train = keep_train
        self._keep_graph = keep_graph

    def _keeps(self, event: Any) -> bool:
        kind = event.WhichOneof("what")
        if kind == "dataset_graph":
            return self._keep_graph
        if kind == "user_defined_info":
            return True  # only present when custom_lineage_data was given
        return self._keep_train

    def _write(self, events: list[Any]) -> str:
        kept = [e for e in events if self._keeps(e)]
        return super()._write(kept) if kept else ""
