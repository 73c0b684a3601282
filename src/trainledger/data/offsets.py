"""The offsets document of ``FileTailSource``: what was trained on, per file, and which file.

Why identity and a checksum: a byte offset alone cannot tell "the file I read 400 bytes of" from
"another file now under that name" (replaced, or truncated and rewritten longer); reading the
second one on from byte 400 silently loses its first records. So each file's entry also keeps
its device and inode and the CRC-32 of the bytes already read; a resumed source trusts the
offset only when both still match.

Format (JSON, ``version`` 1)::

    {"version": 1, "directory": "...", "pattern": "*.jsonl",
     "offsets": {"part-1.jsonl": 4096},
     "files": {"part-1.jsonl": {"dev": 2049, "ino": 131, "crc32": 305419896}},
     "checkpoint": "/runs/r0/m-1_40.ckpt",
     "bad_records": 0}

``checkpoint`` (optional) names the checkpoint holding exactly the records before these
offsets: a trainer resumes from it (``FileTailSource.committed_checkpoint``), not from a newer
file written just before a crash, so no record is trained twice or never.

``files`` is optional (documents written before it existed load as offsets without identity),
so older readers still read newer documents.
"""

from __future__ import annotations

import json
import os
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from trainledger.errors import StreamError

__all__ = [
    "FileMark",
    "OFFSETS_VERSION",
    "crc_of_prefix",
    "load_offsets",
    "offsets_document",
    "saved_checkpoint",
]

OFFSETS_VERSION = 1
_CHUNK = 1 << 20


@dataclass(frozen=True)
class FileMark:
    """How far one file was read: ``offset`` bytes whose CRC-32 is ``crc``, of file ``ident``
    (device, inode; None when unknown, as in documents of older versions)."""

    offset: int = 0
    crc: int | None = 0
    ident: tuple[int, int] | None = None


def load_offsets(path: Path, directory: Path, pattern: str) -> dict[str, FileMark]:
    """The marks of ``path``; ``StreamError`` saying what is wrong when it is not a document
    of this directory and pattern."""
    try:
        doc = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise StreamError(
            f"offsets file {path} expected a trainledger offsets document, "
            f"received unreadable content ({exc})"
        ) from exc
    if not isinstance(doc, dict) or "offsets" not in doc:
        raise StreamError(
            f"offsets file {path} expected a JSON object with an 'offsets' entry, "
            f"received: {type(doc).__name__}"
        )
    if doc.get("version") != OFFSETS_VERSION:
        raise StreamError(
            f"offsets file {path} expected version {OFFSETS_VERSION}, "
            f"received version {doc.get('version')!r}"
        )
    _check_same_stream(path, doc, directory, pattern)
    offsets = doc["offsets"]
    if not isinstance(offsets, dict):
        raise StreamError(
            f"offsets file {path}: 'offsets' expected a mapping of file name to byte offset, "
            f"received: {type(offsets).__name__}"
        )
    files = doc.get("files", {})
    if not isinstance(files, dict):
        raise StreamError(f"offsets file {path}: 'files' expected a mapping, received: {files!r}")
    return {str(name): _mark(path, name, value, files.get(name)) for name, value in offsets.items()}


def _check_same_stream(path: Path, doc: dict[str, Any], directory: Path, pattern: str) -> None:
    saved_dir, saved_pattern = doc.get("directory"), doc.get("pattern")
    if saved_dir is not None and os.path.realpath(str(saved_dir)) != os.path.realpath(directory):
        raise StreamError(
            f"offsets file {path} belongs to directory {saved_dir!r}, "
            f"received a source tailing {str(directory)!r} (use another offsets_path)"
        )
    if saved_pattern is not None and saved_pattern != pattern:
        raise StreamError(
            f"offsets file {path} belongs to pattern {saved_pattern!r}, "
            f"received a source with pattern {pattern!r} (use another offsets_path)"
        )


def _mark(path: Path, name: str, offset: Any, info: Any) -> FileMark:
    if not _is_int(offset) or offset < 0:
        raise StreamError(
            f"offsets file {path}: offset of {name!r} expected a non-negative integer, "
            f"received: {offset!r}"
        )
    if info is None:
        return FileMark(offset, None, None)
    fields = (info.get(k) for k in ("dev", "ino", "crc32")) if isinstance(info, dict) else ()
    dev, ino, crc = (*fields, None, None, None)[:3]
    if not (_is_int(dev) and _is_int(ino) and _is_int(crc)):
        raise StreamError(
            f"offsets file {path}: identity of {name!r} expected integer dev, ino and crc32, "
            f"received: {info!r}"
        )
    return FileMark(offset, crc, (dev, ino))


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def saved_checkpoint(path: Path) -> str | None:
    """The ``checkpoint`` of a valid offsets document at ``path`` (read after
    ``load_offsets`` accepted it), None when it names none."""
    try:
        value = json.loads(path.read_text()).get("checkpoint")
    except (OSError, ValueError, AttributeError):
        return None
    return value if isinstance(value, str) else None


def offsets_document(
    directory: Path,
    pattern: str,
    marks: dict[str, FileMark],
    bad_records: int,
    checkpoint: str | None = None,
) -> bytes:
    """The JSON bytes of the document holding ``marks``."""
    files = {
        name: {"dev": m.ident[0], "ino": m.ident[1], "crc32": m.crc}
        for name, m in marks.items()
        if m.ident is not None and m.crc is not None
    }
    doc = {
        "version": OFFSETS_VERSION,
        "directory": str(directory),
        "pattern": pattern,
        "offsets": {name: m.offset for name, m in marks.items()},
        "files": files,
        "bad_records": bad_records,
    }
    if checkpoint is not None:
        doc["checkpoint"] = checkpoint
    return json.dumps(doc, indent=1).encode()


def crc_of_prefix(fh: Any, length: int) -> int | None:
    """CRC-32 of the first ``length`` bytes of the open binary file; None when it is shorter."""
    fh.seek(0)
    crc, left = 0, length
    while left > 0:
        data = fh.read(min(left, _CHUNK))
        if not data:
            return None
        crc = zlib.crc32(data, crc)
        left -= len(data)
    return crc
