"""``EvalShard``: one rank's part of an evaluation over a ``DistributedSampler``.

Why: each rank sees ``1/world`` of the data, and the sampler pads the last positions with
repeated samples so every rank gets as many. Metrics must therefore (1) leave the padding out
and (2) be merged over the ranks, so ``Model.eval`` under torchrun gives the numbers one
process gives over the whole data. The padding is always the tail of a rank's list (see
``distributed.shard_samples``), so it is cut from the last batch's predictions and labels.
"""

from __future__ import annotations

import logging
from typing import Any

from trainledger.run.distributed import gather_arrays, is_sharded, rank_and_world, shard_samples
from trainledger.run.metric_base import Metric

__all__ = ["EvalShard", "head"]

_log = logging.getLogger("trainledger.run")


class EvalShard:
    """Counts this rank's real samples down and merges the metrics at the end of a pass."""

    def __init__(self, real_samples: int | None) -> None:
        self.left = real_samples

    @classmethod
    def of(cls, dataset: Any) -> EvalShard | None:
        """The shard of ``dataset`` under a process group; None when it is not sharded."""
        if not is_sharded(dataset):
            return None
        return cls(shard_samples(dataset))

    def keep(self, label: Any) -> int | None:
        """How many leading samples of a batch with these labels are real (None: all)."""
        if self.left is None:
            return None
        size = batch_size(label)
        if size is None:
            _log.warning("cannot tell the batch size of %s labels: padding kept", type(label))
            self.left = None
            return None
        kept = max(0, min(size, self.left))
        self.left -= kept
        return None if kept == size else kept

    def merge(self, metrics: dict[str, Metric]) -> None:
        """Merge every metric over the ranks (a collective: every rank calls it). A metric
        without ``state()`` keeps this rank's value, with a warning."""
        for name in sorted(metrics):
            metric = metrics[name]
            state = metric.state()
            if state is None:
                _log.warning(
                    "metric %r has no state()/merge(): under a DistributedSampler its value is "
                    "rank %d's part of the data only",
                    name,
                    rank_and_world()[0],
                )
                continue
            metric.merge(gather_arrays(state))


def batch_size(label: Any) -> int | None:
    """The first dimension of a tensor or array of labels; None for anything else."""
    shape = getattr(label, "shape", None)
    if shape is None or len(shape) == 0:
        return None
    return int(shape[0])


def head(x: Any, n: int) -> Any:
    """The first ``n`` samples of a batch tensor/array (other values are returned as they are)."""
    return x[:n] if batch_size(x) is not None else x
