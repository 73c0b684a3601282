"""One file ``FileTailSource`` tails: an open handle, how far it was read, and its identity.

Why keep the file open: the handle follows the file, not its name, so a file renamed while
being tailed (renamed within the pattern, or away from it) is still read to its end, and a
name that now points at another file (replaced) is noticed by comparing device and inode.
"""

from __future__ import annotations

import os
import zlib
from pathlib import Path
from typing import BinaryIO

from trainledger.data.offsets import FileMark, crc_of_prefix

__all__ = ["TailedFile", "ident_at"]

_CHUNK = 1 << 20
_LAST = 64  # bytes before the offset kept to notice a file rewritten in place


class TailedFile:
    """An open file read line by line from ``offset`` (CRC-32 of the bytes before: ``crc``)."""

    def __init__(self, fh: BinaryIO) -> None:
        self.fh = fh
        st = os.fstat(fh.fileno())
        self.ident = (st.st_dev, st.st_ino)
        self.offset = 0
        self.crc = 0
        self.last = b""  # the last bytes before ``offset``
        self.header: list[str] | None = None

    @classmethod
    def open(cls, path: str | os.PathLike[str]) -> TailedFile | None:
        """The file at ``path`` read from its start; None when it is gone."""
        try:
            return cls(open(path, "rb"))  # noqa: SIM115 - kept open while tailed
        except (FileNotFoundError, IsADirectoryError):
            return None

    def resume(self, mark: FileMark) -> bool:
        """Start at ``mark`` when it describes this file's first bytes (same identity when
        known, same checksum); False (nothing changed) when it does not."""
        if mark.ident is not None and mark.ident != self.ident:
            return False
        if self.size() < mark.offset:
            return False
        crc = crc_of_prefix(self.fh, mark.offset)
        if crc is None or (mark.crc is not None and crc != mark.crc):
            return False
        self.offset, self.crc = mark.offset, crc
        self.fh.seek(max(0, mark.offset - _LAST))
        self.last = self.fh.read(mark.offset - max(0, mark.offset - _LAST))
        return True

    def mark(self) -> FileMark:
        return FileMark(self.offset, self.crc, self.ident)

    def size(self) -> int:
        return os.fstat(self.fh.fileno()).st_size

    def restart(self) -> None:
        """Read again from the start (the file was truncated or rewritten)."""
        self.offset, self.crc, self.last, self.header = 0, 0, b"", None

    def rewritten(self) -> bool:
        """Whether the bytes before ``offset`` changed (truncated, or rewritten in place)."""
        size = self.size()
        if size < self.offset:
            return True
        if not self.last:
            return False
        self.fh.seek(self.offset - len(self.last))
        return self.fh.read(len(self.last)) != self.last

    def lines(self, final: bool) -> list[tuple[bytes, int]]:
        """The complete lines after ``offset`` (with the bytes each occupies), and with
        ``final`` an unterminated last line too; ``offset`` is not moved (``consume`` does)."""
        size = self.size()
        if size <= self.offset:
            return []
        fh = self.fh
        fh.seek(self.offset)
        data = fh.read(min(size - self.offset, _CHUNK))
        while b"\n" not in data and self.offset + len(data) < size:
            more = fh.read(_CHUNK)
            if not more:
                break
            data += more
        end = data.rfind(b"\n") + 1
        final = final and self.offset + len(data) >= size  # only a real end of file is final
        lines = [(raw, len(raw) + 1) for raw in data[:end].split(b"\n")[:-1]]
        if final and end < len(data):
            lines.append((data[end:], len(data) - end))  # the producer is done
        return lines

    def consume(self, raw: bytes, used: int) -> None:
        """Move past one line returned by ``lines``."""
        consumed = raw + b"\n" if used > len(raw) else raw
        self.offset += used
        self.crc = zlib.crc32(consumed, self.crc)
        self.last = (self.last + consumed)[-_LAST:]

    def first_line(self) -> bytes:
        self.fh.seek(0)
        return self.fh.readline()

    def close(self) -> None:
        self.fh.close()


def ident_at(path: Path) -> tuple[int, int] | None:
    """(device, inode) of the file now at ``path``, None when there is none."""
    try:
        st = path.stat()
    except FileNotFoundError:
        return None
    return (st.st_dev, st.st_ino)
