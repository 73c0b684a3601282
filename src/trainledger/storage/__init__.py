"""The ground every store stands on: atomic writes and locks, record framing, the background
writer, chunked parallel I/O, and the names of every file trainledger writes or recognises.

It imports nothing else of trainledger, so the summary, lineage, checkpoint, data and query
packages share it without depending on each other.
"""

from trainledger.storage.atomic import (
    atomic_write,
    atomic_write_bytes,
    exclusive_lock,
    fsync_dir,
    pid_alive,
    scan_dir,
    sweep_temp_files,
)
from trainledger.storage.background import BackgroundWorker
from trainledger.storage.framing import (
    FOOTER_SIZE,
    HEADER_SIZE,
    MAX_RECORD_BYTES,
    RecordReader,
    frame,
    frame_equal_length,
    masked_crc32c,
    read_records,
)
from trainledger.storage.naming import (
    ANNOTATIONS_FILE,
    INDEX_DIRNAME,
    INDEX_FILE,
    LINEAGE_SUFFIX,
    TEMP_MARKER,
    CheckpointName,
    LineageFile,
    checkpoint_file_name,
    event_file_name,
    event_file_order,
    file_timestamp,
    is_event_file_name,
    is_lineage_file_name,
    is_temp_name,
    lineage_file_name,
    lineage_writer,
    list_lineage_files,
    parse_checkpoint_name,
    safe_host,
    temp_name,
    temp_writer_pid,
)
from trainledger.storage.parallel import executor, helper_threads, run_chunks

__all__ = [
    "ANNOTATIONS_FILE",
    "FOOTER_SIZE",
    "HEADER_SIZE",
    "INDEX_DIRNAME",
    "INDEX_FILE",
    "LINEAGE_SUFFIX",
    "MAX_RECORD_BYTES",
    "TEMP_MARKER",
    "BackgroundWorker",
    "CheckpointName",
    "LineageFile",
    "RecordReader",
    "atomic_write",
    "atomic_write_bytes",
    "checkpoint_file_name",
    "event_file_name",
    "event_file_order",
    "exclusive_lock",
    "executor",
    "file_timestamp",
    "frame",
    "frame_equal_length",
    "fsync_dir",
    "helper_threads",
    "is_event_file_name",
    "is_lineage_file_name",
    "is_temp_name",
    "lineage_file_name",
    "lineage_writer",
    "list_lineage_files",
    "masked_crc32c",
    "parse_checkpoint_name",
    "pid_alive",
    "read_records",
    "run_chunks",
    "safe_host",
    "scan_dir",
    "sweep_temp_files",
    "temp_name",
    "temp_writer_pid",
]
