"""A bulk build's runs parsed in other processes while this one stores them.

Why: building an index parses each run (reading its lineage files, flattening them, writing
its record's JSON and splitting its custom values: ``index_tables.prepare``) and then writes
its rows; in one process the two add up. For a run of 1,500 metrics the parse is about half
of it (BENCHMARKS.md, issue 34 item 3). Two processes parse the next runs while this one
writes, so a build takes about as long as its writes alone.

When: a bulk build (``bulk_build.is_bulk``) of at least ``MIN_RUNS`` lineage runs with the
default reader, where this process may use two CPUs or more. A TensorBoard run is parsed here,
in its place (its record needs the index's series statistics).

How, without pickle (nothing is ever unpickled): the parent writes one JSON line per chunk to
a child's stdin, ``[file, [[path, summary_dir, update_time, extra], ...]]`` (the chunks go to the
children in turn; each run's entry ends with the groups its record takes besides its
lineage's, ``family_index.extras``, or null); the child writes the chunk's runs to that file,
one frame each, then prints the file's name. A frame is a header
(JSON: the run's warnings, its graph hash, its ``runs`` values, its non-float custom rows, and
its labels and type string by number, sent once each), the record's JSON text and the float
values as float64: three parts, each after its 8-byte length. The files live in a private
temporary directory, each deleted once read. If a child fails, the runs not yet answered are
parsed here, with a warning.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import struct
import subprocess
import sys
import tempfile
from array import array
from collections.abc import Callable, Generator, Mapping
from typing import IO, Any

from trainledger.query.discovery import RunFiles
from trainledger.query.flat_record import to_record
from trainledger.query.index_tables import UNSTORABLE, CustomRows, Prepared, prepare
from trainledger.query.schema import SQLITE, Dialect
from trainledger.storage import cores, start_ours

__all__ = ["MIN_RUNS", "parse_run", "parsed_chunks", "usable"]

log = logging.getLogger("trainledger.query.index")  # (the refresh's warnings, as in-process)
#: the fewest runs a build hands to parse processes (starting one costs about 0.2 s)
MIN_RUNS = 200
#: runs a chunk: the parent writes one chunk while the child parses the next ones
CHUNK = 50
#: chunks asked ahead of the one being written
AHEAD = 8
#: parse processes at most: a wide run's parse takes about twice its writing, so two keep
#: this process busy (and share two CPUs with it, which mostly waits on them)
PROCESSES = 2
_LENGTH = struct.Struct("<Q")


def usable(runs: int) -> bool:
    """Whether a build of ``runs`` lineage runs is worth parse processes here."""
    return runs >= MIN_RUNS and cores() >= 2


Parse = Callable[[RunFiles], Any]


def parsed_chunks(
    runs: list[RunFiles], parse_here: Parse, extras: Mapping[str, dict[str, Any]] | None = None
) -> Generator[list[tuple[RunFiles, Any]], None, None]:
    """(run, its ``Prepared`` rows or None: no usable lineage) for ``runs``, chunk by chunk, in
    order, parsed by ``PROCESSES`` processes (fewer where fewer CPUs), chunk ``k`` by process
    ``k`` modulo their number; ``parse_here`` parses a run in this process (a record or None):
    a TensorBoard run, in its place, and every run from the first chunk a process failed to
    answer on. ``extras``: groups a run's record takes (``family_index.extras``)."""
    chunks = [runs[i : i + CHUNK] for i in range(0, len(runs), CHUNK)]
    sent = [[run for run in chunk if not run.tensorboard] for chunk in chunks]
    work = tempfile.mkdtemp(prefix="trainledger-parse-")
    children: list[subprocess.Popen[bytes]] = []
    done = 0
    try:
        for _ in range(max(1, min(PROCESSES, cores(), len(chunks)))):
            children.append(_start())
        decoders = [_Decoder() for _ in children]

        def ask(k: int) -> None:
            if k < len(chunks):
                _ask(children[k % len(children)], work, k, sent[k], extras or {})

        for k in range(AHEAD):
            ask(k)
        for k, chunk in enumerate(chunks):
            which = k % len(children)
            answered = _answer(children[which], work, k, sent[k], decoders[which])
            if answered is None:
                break
            ask(k + AHEAD)
            done += 1
            parsed = iter(answered)
            yield [(run, parse_here(run)) if run.tensorboard else next(parsed) for run in chunk]
    except OSError as exc:  # (a child could not start, or its pipe broke)
        log.warning("the parse process failed (%s): parsing here", exc)
    finally:
        for child in children:
            _stop(child)
        shutil.rmtree(work, ignore_errors=True)
    for chunk in chunks[done:]:
        yield [(run, parse_here(run)) for run in chunk]


def _start() -> subprocess.Popen[bytes]:
    return start_ours("trainledger.query.parse_worker")


def _ask(
    child: subprocess.Popen[bytes],
    work: str,
    k: int,
    chunk: list[RunFiles],
    extras: Mapping[str, dict[str, Any]],
) -> None:
    request = [
        os.path.join(work, f"{k}.bin"),
        [[r.path, r.summary_dir, r.update_time, extras.get(r.summary_dir)] for r in chunk],
    ]
    assert child.stdin is not None
    child.stdin.write(json.dumps(request).encode() + b"\n")
    child.stdin.flush()


def _answer(
    child: subprocess.Popen[bytes], work: str, k: int, chunk: list[RunFiles], decoder: _Decoder
) -> list[tuple[RunFiles, Any]] | None:
    """Chunk ``k``'s answers, or None (warned) when the child failed to give them."""
    path = os.path.join(work, f"{k}.bin")
    assert child.stdout is not None
    line = child.stdout.readline()
    try:
        if line.rstrip(b"\n").decode() != path:
            raise ValueError(f"expected the answer {path!r}, received {line[:200]!r}")
        with open(path, "rb") as file:
            data = file.read()
        os.unlink(path)
        return decoder.chunk(data, chunk)
    except (OSError, ValueError, TypeError, KeyError, IndexError, struct.error) as exc:
        log.warning("the parse process failed (%s): parsing here", exc)
        return None


def _stop(child: subprocess.Popen[bytes]) -> None:
    for pipe in (child.stdin, child.stdout):
        if pipe is not None:
            pipe.close()
    try:
        child.wait(timeout=10)
    except subprocess.TimeoutExpired:
        child.kill()
        child.wait()


class _Decoder:
    """Frames back into ``Prepared`` rows; labels and type strings by number."""

    def __init__(self) -> None:
        self.labels: dict[int, list[str]] = {}
        self.types: dict[int, str] = {}

    def chunk(self, data: bytes, chunk: list[RunFiles]) -> list[tuple[RunFiles, Any]]:
        view = memoryview(data)
        at = 0
        out: list[tuple[RunFiles, Any]] = []
        logs: list[Any] = []
        for run in chunk:
            parts = []
            for _ in range(3):
                (size,) = _LENGTH.unpack_from(view, at)
                parts.append(view[at + 8 : at + 8 + size])
                at += 8 + size
            out.append((run, self.run(run, logs, *parts)))
        if at != len(data):
            raise ValueError(
                f"expected {len(chunk)} runs' frames, received {len(data) - at} more bytes"
            )
        for name, level, message in logs:  # (once the whole chunk is good: else parsed here)
            logging.getLogger(name).log(level, "%s", message)
        return out

    def run(
        self, run: RunFiles, logs: list[Any], head: memoryview, text: memoryview, floats: memoryview
    ) -> Any:
        header = json.loads(bytes(head))
        if header["dir"] != run.summary_dir:
            raise ValueError(f"expected run {run.summary_dir!r}, received {header['dir']!r}")
        logs += [(str(name), int(level), str(message)) for name, level, message in header["logs"]]
        if not header["ok"]:
            return None
        labels, types = header["labels"], header["types"]
        if len(labels) > 1:
            self.labels[labels[0]] = labels[1]
        if len(types) > 1:
            self.types[types[0]] = types[1]
        values = array("d")
        values.frombytes(floats)
        rows = CustomRows(
            self.labels[labels[0]],
            values.tolist(),
            [tuple(row) for row in header["others"]],
            self.types[types[0]],
        )
        return Prepared(header["hash"], header["values"], str(text, "ascii"), rows, None)


# -- the child ------------------------------------------------------------------------------


class _Kept(logging.Handler):
    """The child's log records, sent with the run they were logged for."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[list[Any]] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append([record.name, record.levelno, record.getMessage()])


def parse_run(
    path: str,
    summary_dir: str,
    update_time: float,
    dialect: Dialect,
    extra: Mapping[str, Any] | None = None,
) -> Prepared | None:
    """A lineage run's rows (``index_tables.prepare``), or None (logged) when it has no
    usable lineage; the metric's JSON text is stored as the file holds it where the record
    kept its value as read; ``extra``: groups the record takes besides its lineage's (its
    known parents, ``family_index.py``). Here or in a parse process alike."""
    from trainledger.lineage import read_lineage_texts

    try:
        lineage, texts = read_lineage_texts(path)
    except Exception as exc:  # a damaged run must not break the build of the others
        log.warning("cannot read lineage of %s: %s", path, exc)
        return None
    if not lineage:
        return None
    record = to_record(lineage, summary_dir, update_time)
    if extra:
        record.update(extra)
    kept = {key: text for key, text in texts.items() if record.get(key) == lineage.get(key)}
    try:
        return prepare(record, dialect, kept)
    except UNSTORABLE as exc:
        log.warning("cannot index run %s: %s", summary_dir, exc)
        return None


class _Encoder:
    """A run's frame; labels and type strings numbered, each sent once."""

    def __init__(self, kept: _Kept) -> None:
        self.kept = kept
        self.labels: dict[tuple[str, ...], int] = {}
        self.types: dict[str, int] = {}

    def frame(
        self, path: str, summary_dir: str, update_time: float, extra: dict[str, Any] | None
    ) -> bytes:
        self.kept.records = []
        header: dict[str, Any] = {"dir": summary_dir, "ok": False}
        text, floats = b"", b""
        prepared = parse_run(path, summary_dir, update_time, SQLITE, extra)
        if prepared is not None:
            rows = prepared.rows
            header.update(
                ok=True,
                hash=prepared.graph_hash,
                values=prepared.run_values,
                others=rows.others,
                labels=self._numbered(self.labels, tuple(rows.labels), rows.labels),
                types=self._numbered(self.types, rows.types, rows.types),
            )
            text, floats = prepared.stored.encode("ascii"), array("d", rows.floats).tobytes()
        header["logs"] = self.kept.records
        head = json.dumps(header).encode("ascii")
        return b"".join(part for p in (head, text, floats) for part in (_LENGTH.pack(len(p)), p))

    @staticmethod
    def _numbered(numbers: dict[Any, int], key: Any, value: Any) -> list[Any]:
        number = numbers.get(key)
        if number is None:
            number = numbers[key] = len(numbers)
            return [number, value]
        return [number]


def _serve(requests: IO[bytes], answers: IO[bytes]) -> None:
    """Answer each chunk asked on ``requests`` (see the module's docstring)."""
    kept = _Kept()
    logging.getLogger().addHandler(kept)
    logging.getLogger().setLevel(logging.WARNING)
    encoder = _Encoder(kept)
    for line in requests:
        out, runs = json.loads(line)
        with open(out, "wb") as file:
            for path, summary_dir, update_time, extra in runs:
                file.write(encoder.frame(path, summary_dir, update_time, extra))
        answers.write(out.encode() + b"\n")
        answers.flush()


if __name__ == "__main__":
    _serve(sys.stdin.buffer, sys.stdout.buffer)
