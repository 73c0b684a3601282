"""Streaming data sources for online training (``RecModel.online_train``).

- ``QueueStream``: a bounded queue that producer threads or processes feed (back-pressure,
  clean end-of-stream).
- ``FileTailSource``: tails a growing directory of JSONL or CSV files, resuming from offsets
  persisted atomically.

Both batch records with a user-given ``collate_fn`` and count bad records in ``bad_records``
instead of crashing the trainer. This package never imports ``trainledger.run``.
"""

from trainledger.data.batcher import BadRecordWarning, StreamWarning, default_collate
from trainledger.data.file_tail import FileTailSource
from trainledger.data.queue_stream import QueueProducer, QueueStream

__all__ = [
    "BadRecordWarning",
    "FileTailSource",
    "QueueProducer",
    "QueueStream",
    "StreamWarning",
    "default_collate",
]
