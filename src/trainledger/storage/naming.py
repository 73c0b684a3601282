"""Every file name trainledger writes or recognises, in one place.

Why one module: readers, writers, the retention policy, the index and the web UI must agree on
what a name means (a lineage file, an event file, a checkpoint of a given prefix, a temp file
of an interrupted write), and each rule here is MindSpore's or TensorBoard's own so files of
either are recognised:

- temp files: ``<final name>.tl-tmp-<pid>-<hex>`` (``atomic_write``); every reader skips them.
- event files (TensorBoard): ``<prefix>.out.tfevents.<unix_ts>.<host>.<pid>.<n><suffix>``.
- lineage files: ``events.out.events.summary.<unix_ts>.<rank>.<host>.<pid>.<seq>_lineage``.
  MindInsight finds them by ``summary.<digits>`` and the ``_lineage`` suffix, orders a
  directory's files by that ``<unix_ts>`` and treats it as the file's identity, so it is unique
  and increasing within a directory. MindSpore names files by the second only, which is how an
  evaluation started in the same second as its training truncated the training's file (fixture
  ``adam_lr001``): here a new file is created with ``O_EXCL`` under a directory lock, at the
  current second or the next free one (``lineage.writer``).
- checkpoints: ``<prefix>[_<N>]-<epoch>_<step>[_breakpoint].ckpt``; ``_<N>`` keeps a new run's
  files apart from an earlier run's of the same prefix (MindSpore's rule).
- the index directory ``<base>/.trainledger`` with ``index.db`` and ``annotations.json``.
- a sharded checkpoint's ``manifest.json``, the landscape snapshots' ``train_metadata.json``,
  an MLflow import's ``mlflow_run.json``.
- run ids of directories whose names are not UTF-8 (``id_of_name``/``name_of_id``).
- object storage (``storage.mirror``, ``storage.cache``): a download cache's record of object
  versions ``.trainledger-objects.json``, a staging directory's state
  ``.trainledger-staging.json``; neither is ever uploaded or downloaded.
"""

from __future__ import annotations

import itertools
import os
import re
import struct
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass

from trainledger.storage.listing import run_files
from trainledger.storage.redact import machine_name

__all__ = [
    "ANNOTATIONS_FILE",
    "CheckpointName",
    "INDEX_DIRNAME",
    "ARCHIVE_DIRNAME",
    "OBJECTS_MANIFEST",
    "CHANGES_STATE",
    "STAGING_STATE",
    "SHARDED_MANIFEST",
    "LANDSCAPE_METADATA",
    "MLFLOW_MARKER",
    "HPARAMS_YAML",
    "AUDIT_FILE",
    "MODELS_FILE",
    "INDEX_FILE",
    "LINEAGE_SUFFIX",
    "LineageFile",
    "TEMP_MARKER",
    "checkpoint_file_name",
    "event_file_name",
    "event_file_order",
    "event_files_in_writing_order",
    "event_writer",
    "MS_SUFFIX",
    "is_mindspore_summary_name",
    "is_summary_file_name",
    "file_timestamp",
    "is_event_file_name",
    "is_lineage_file_name",
    "is_temp_name",
    "id_of_name",
    "name_of_id",
    "lineage_file_name",
    "lineage_writer",
    "list_lineage_files",
    "parse_checkpoint_name",
    "safe_host",
    "temp_name",
    "temp_writer_pid",
]

# --- object storage ---------------------------------------------------------------------
#: a download cache's record of which object version each local file is (ETag per path)
OBJECTS_MANIFEST = ".trainledger-objects.json"
#: a copy's place in the bucket's change records (``storage.copy_sync``)
CHANGES_STATE = ".trainledger-changes.json"
#: a staging directory's state: its URL, its writer, and whether everything was uploaded
STAGING_STATE = ".trainledger-staging.json"

# --- other files of a run ------------------------------------------------------------------
#: a sharded checkpoint directory's metadata (``checkpoint.sharded``): written last, read first
SHARDED_MANIFEST = "manifest.json"
#: the weight snapshots' index of ``collect_landscape`` (MindSpore's name, in ``ckpt_dir``)
LANDSCAPE_METADATA = "train_metadata.json"
#: the directory of a run that holds ``collect_landscape``'s weight snapshots (MindSpore's
#: name): listed apart from the run's checkpoints
LANDSCAPE_DIR = "ckpt_dir"
#: what an MLflow import wrote into a run directory (``integrations.mlflow``)
MLFLOW_MARKER = "mlflow_run.json"
#: the hyper-parameters Lightning's loggers leave in a run's folder (``summary.hparams_yaml``)
HPARAMS_YAML = "hparams.yaml"

# --- temp files ---------------------------------------------------------------------------
TEMP_MARKER = ".tl-tmp-"
_TEMP_RE = re.compile(re.escape(TEMP_MARKER) + r"(\d+)-[0-9a-f]+$")


def temp_name(final_name: str, pid: int, token: str) -> str:
    """The temp name ``atomic_write`` writes ``final_name`` under before the rename."""
    return f"{final_name}{TEMP_MARKER}{pid}-{token}"


_ESCAPED = re.compile(r"%(25|[89A-F][0-9A-F])")


def id_of_name(name: str) -> str:
    """A file name as a run id that is valid text everywhere (SQLite, PostgreSQL, JSON, URLs).

    Old NFS shares and other tools leave names whose bytes are not UTF-8; Python lists them
    with each such byte as a lone surrogate (U+DC80-U+DCFF), which no database or JSON
    encoder takes. Each such byte is written ``%XX`` and a literal ``%`` as ``%25``, so the
    id names one directory only and ``name_of_id`` gives the name back. A UTF-8 name
    without ``%`` is its own id (the common case costs one scan of the text).
    """
    if "%" not in name and (name.isascii() or name.isprintable()):
        return name  # (a lone surrogate is not printable)
    out = []
    for ch in name:
        code = ord(ch)
        if 0xDC80 <= code <= 0xDCFF:
            out.append(f"%{code - 0xDC00:02X}")
        else:
            out.append("%25" if ch == "%" else ch)
    return "".join(out)


def name_of_id(run_id: str) -> str:
    """The name ``id_of_name`` made ``run_id`` from; only its own escapes are decoded (a
    ``%2E`` stays as it is: no escape can spell ``..`` or ``/``)."""
    if "%" not in run_id:
        return run_id
    return _ESCAPED.sub(lambda m: "%" if m[1] == "25" else chr(0xDC00 + int(m[1], 16)), run_id)


def is_temp_name(name: str) -> bool:
    """Whether ``name`` is an in-progress temp file of ``atomic_write``."""
    return bool(_TEMP_RE.search(name))


def temp_writer_pid(name: str) -> int | None:
    """The pid that wrote temp file ``name``, or None when it is not a temp name."""
    match = _TEMP_RE.search(name)
    return int(match.group(1)) if match else None


# --- index ----------------------------------------------------------------------------------
INDEX_DIRNAME = ".trainledger"
INDEX_FILE = "index.db"
ANNOTATIONS_FILE = "annotations.json"
#: the team's record of who changed what through the UI or CLI (JSON lines, in INDEX_DIRNAME)
AUDIT_FILE = "audit.jsonl"
#: the named-model registry's events of a base without a shared index (JSON lines, beside it)
MODELS_FILE = "models.jsonl"
#: archived runs move here, below the base; discovery never looks inside
ARCHIVE_DIRNAME = ".trainledger-archive"

# --- event files (TensorBoard) --------------------------------------------------------------
_EVENT_RE = re.compile(r"\.tfevents\.(\d+)\.(.*)\.(\d+)\.(\d+)")
_event_counter = itertools.count()
_event_counter_lock = threading.Lock()


def event_file_name(
    prefix: str = "events", suffix: str = "", wall_time: float | None = None
) -> str:
    """``<prefix>.out.tfevents.<unix_ts>.<host>.<pid>.<n><suffix>``, ``n`` unique per process.

    TensorBoard recognises event files by ``tfevents`` in the name; ``n`` keeps names of several
    writers (or rollovers) in the same second apart. ``n`` has six digits because TensorBoard
    reads a directory's files in string order: ``.9`` would sort after ``.10``, and the later
    file's steps would be read first.
    """
    with _event_counter_lock:
        n = next(_event_counter)
    ts = int(time.time() if wall_time is None else wall_time)
    return f"{prefix}.out.tfevents.{ts}.{machine_name()}.{os.getpid()}.{n:06d}{suffix}"


def is_event_file_name(name: str) -> bool:
    """Whether TensorBoard would read ``name`` as an event file (and it is not a temp file)."""
    return "tfevents" in name and not is_temp_name(name)


def series_sidecar_name(event_name: str) -> str:
    """The series sidecar (``summary/series_sidecar.py``) of the writer whose first event file
    is ``event_name``: ``tlseries`` for ``tfevents``, so TensorBoard's readers (which take any
    name holding ``tfevents``) never read it, and ``.json``."""
    return event_name.replace("tfevents", "tlseries", 1) + ".json"


def is_series_sidecar_name(name: str) -> bool:
    """Whether ``name`` is a series sidecar (and not a temp file)."""
    return ".tlseries." in name and name.endswith(".json") and not is_temp_name(name)


def event_writer(name: str) -> tuple[str, int] | None:
    """``(host, pid)`` of the process that created event file ``name`` (ours, torch's and
    TensorFlow's writers name files ``...tfevents.<ts>.<host>.<pid>.<n>``); None otherwise."""
    m = _EVENT_RE.search(name)
    return None if m is None else (m.group(2), int(m.group(3)))


def event_file_order(name: str) -> tuple[int, str, int, int, str]:
    """Sort key of event files in writing order: the numbers of the name, not its string."""
    m = _EVENT_RE.search(name)
    if m is None:
        return (0, "", 0, 0, name)
    return (int(m.group(1)), m.group(2), int(m.group(3)), int(m.group(4)), name)


def event_files_in_writing_order(folder: str, names: Iterable[str]) -> list[str]:
    """``names`` (event files in ``folder``) in writing order: ``event_file_order``, except
    that writers whose names give the same second are ordered by their first event's time.
    Why: names give whole seconds, so a failed session and its resume can share one, and the
    resume's process may have the smaller pid; every reader of a run's sessions (the summary
    reader, the series sidecars) must agree on one order."""
    orders = {name: event_file_order(name) for name in names}
    writers: dict[int, set[tuple[str, int]]] = {}
    for ts, host, pid, _, _ in orders.values():
        writers.setdefault(ts, set()).add((host, pid))
    started: dict[tuple[int, str, int], float] = {}  # (ts, host, pid) -> its first event's time
    for name, (ts, host, pid, _, _) in sorted(orders.items(), key=lambda item: item[1]):
        if len(writers[ts]) > 1 and (ts, host, pid) not in started:
            started[(ts, host, pid)] = _first_wall_time(os.path.join(folder, name))
    return sorted(orders, key=lambda n: (orders[n][0], started.get(orders[n][:3], 0.0), orders[n]))


def _first_wall_time(path: str) -> float:
    """The wall time of the event file's first event (its ``file_version`` record); an
    unreadable one sorts last."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(64)
    except OSError:
        return float("inf")
    data = head[12:]  # (a record: 8 bytes of length, 4 of its crc, then the Event)
    if len(data) < 9 or data[0] != 0x09:  # (field 1, wall_time, a double)
        return float("inf")
    return float(struct.unpack("<d", data[1:9])[0])


# --- lineage files --------------------------------------------------------------------------
LINEAGE_SUFFIX = "_lineage"
_LINEAGE_PREFIX = "events.out.events.summary."
# MindInsight's own rule for the timestamp of a summary/lineage file name.
_TS_RE = re.compile(r"summary\.(\d+)")
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]+")


@dataclass(frozen=True)
class LineageFile:
    """One lineage file of a run directory, as listed (cheap: a stat, no parsing)."""

    name: str
    path: str
    timestamp: int
    size: int
    mtime: float


def safe_host(host: str | None = None) -> str:
    """The host name reduced to characters that cannot break the file-name pattern."""
    host = machine_name() if host is None else host
    return _UNSAFE.sub("-", host).strip("-") or "host"


def lineage_file_name(timestamp: int, rank: int, host: str | None, pid: int, seq: int) -> str:
    """``events.out.events.summary.<ts>.<rank>.<host>.<pid>.<seq>_lineage`` (``host`` None:
    this machine's)."""
    parts = (int(timestamp), int(rank), safe_host(host), int(pid), int(seq))
    return _LINEAGE_PREFIX + ".".join(str(p) for p in parts) + LINEAGE_SUFFIX


def file_timestamp(name: str) -> int | None:
    """The ``<unix_ts>`` of a summary/lineage file name (MindInsight's regex), or None."""
    match = _TS_RE.search(name)
    return int(match.group(1)) if match else None


def is_lineage_file_name(name: str) -> bool:
    """Whether MindInsight would read ``name`` as a lineage file (and it is not a temp file)."""
    return (
        name.endswith(LINEAGE_SUFFIX) and _TS_RE.search(name) is not None and not is_temp_name(name)
    )


#: The suffix of MindSpore's summary files (its lineage files end in ``_lineage``).
MS_SUFFIX = "_MS"


def is_mindspore_summary_name(name: str) -> bool:
    """Whether ``name`` is a MindSpore summary file: ``summary.<digits>`` (MindInsight's rule)
    and the ``_MS`` suffix, and not one of our temp files."""
    return name.endswith(MS_SUFFIX) and file_timestamp(name) is not None and not is_temp_name(name)


def is_summary_file_name(name: str) -> bool:
    """Whether ``name`` holds a run's scalar series: an event file or a MindSpore ``_MS``
    file (what the index reads for series statistics)."""
    return is_event_file_name(name) or is_mindspore_summary_name(name)


def lineage_writer(name: str) -> tuple[str, int] | None:
    """``(host, pid)`` of the process that created lineage file ``name``, when trainledger
    named it; None for other layouts (MindSpore's names carry no pid)."""
    if not name.endswith(LINEAGE_SUFFIX) or not name.startswith(_LINEAGE_PREFIX):
        return None
    parts = name[len(_LINEAGE_PREFIX) : -len(LINEAGE_SUFFIX)].split(".")
    if len(parts) != 5 or not all(parts[i].isdigit() for i in (0, 1, 3, 4)):
        return None
    return parts[2], int(parts[3])


# --- checkpoints ----------------------------------------------------------------------------
_CKPT_RE = re.compile(
    r"^(?P<prefix>.+?)(?:_(?P<n>\d+))?-(?P<epoch>\d+)_(?P<step>\d+)(?P<bp>_breakpoint)?\.ckpt$"
)


@dataclass(frozen=True)
class CheckpointName:
    """The parts of ``<prefix>[_<N>]-<epoch>_<step>[_breakpoint].ckpt``.

    ``prefix`` is the family's base name and ``family`` the prefix the file was written under
    (``prefix`` or ``<prefix>_<N>``).
    """

    prefix: str
    family: str
    epoch: int
    step: int
    breakpoint: bool


def checkpoint_file_name(prefix: str, epoch: int, step: int, breakpoint: bool = False) -> str:
    """``<prefix>-<epoch>_<step>[_breakpoint].ckpt``."""
    return f"{prefix}-{epoch}_{step}{'_breakpoint' if breakpoint else ''}.ckpt"


def parse_checkpoint_name(name: str, prefix: str | None = None) -> CheckpointName | None:
    """The parts of a checkpoint file name, or None when it is not one.

    With ``prefix``, only files of that family count (``prefix`` or ``<prefix>_<N>``); without,
    a trailing ``_<N>`` of the prefix is read as part of the prefix.
    """
    if is_temp_name(name) or not name.endswith(".ckpt"):
        return None
    if prefix is None:
        m = _CKPT_RE.match(name)
        if m is None:
            return None
        family = m.group("prefix") + (f"_{m.group('n')}" if m.group("n") else "")
        base = family
    else:
        if not name.startswith(prefix):
            return None
        m = _CKPT_RE.match("x" + name[len(prefix) :])
        if m is None or m.group("prefix") != "x":
            return None
        base = prefix
        family = prefix + (f"_{m.group('n')}" if m.group("n") else "")
    return CheckpointName(
        base, family, int(m.group("epoch")), int(m.group("step")), m.group("bp") is not None
    )


def list_lineage_files(run_dir: str | os.PathLike[str]) -> list[LineageFile]:
    """The lineage files directly in ``run_dir``, in MindInsight's reading order.

    Oldest first by ``<unix_ts>``; equal timestamps by name, descending (MindInsight's sort).
    Symlinks are skipped, as MindInsight skips them. A missing directory lists nothing.
    """
    out: list[LineageFile] = []
    for entry in run_files(run_dir, is_lineage_file_name):
        try:
            st = entry.stat()
        except OSError:
            continue  # vanished between listing and stat
        ts = file_timestamp(entry.name)
        if ts is None:  # pragma: no cover - excluded by is_lineage_file_name
            continue
        out.append(LineageFile(entry.name, entry.path, ts, st.st_size, st.st_mtime))
    out.sort(key=lambda f: f.name, reverse=True)
    out.sort(key=lambda f: f.timestamp)
    return out
