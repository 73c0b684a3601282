"""Where the varying fields sit in a scalar event's bytes: the bulk path of ``scalar_scan``.

Why its own module: this is byte-level protobuf layout (field tags, varints, float offsets),
kept apart from the scan that finds runs of equal-length records. TensorBoard's
``Event{wall_time step summary{value{tag simple_value}*}}`` and MindSpore's
``Event{wall_time step summary{value{tag scalar_value}*}}`` differ only in the field number
of the value (2 and 3), so one layout serves both (``FLOAT_TAGS``).
"""

from __future__ import annotations

import numpy as np

__all__ = ["Block", "Layout", "TENSORBOARD_FLOAT", "MINDSPORE_FLOAT"]

#: the tag byte of the float in a ``Summary.Value``: field 2 (TensorBoard's simple_value) or
#: field 3 (MindSpore's scalar_value), wire type 5 (32-bit)
TENSORBOARD_FLOAT = 0x15
MINDSPORE_FLOAT = 0x1D

# One layout's points: (row numbers, slot numbers, tag, steps, wall times, values)
Block = tuple[np.ndarray, int, str, np.ndarray, np.ndarray, np.ndarray]


class Layout:
    """Where the varying fields sit in an Event of the form ``wall_time? step? summary{value{tag
    simple_value}*}`` (the form every TensorBoard writer gives a scalar event)."""

    def __init__(self, first: np.ndarray, wall_at: int, step_at: int, step_len: int,
                 slots: list[tuple[int, int, int]]) -> None:  # fmt: skip
        self.first = first
        self.wall_at, self.step_at, self.step_len = wall_at, step_at, step_len
        self.slots = slots  # (tag offset, tag length, float offset) per value
        fixed = np.ones(len(first), bool)
        if wall_at >= 0:
            fixed[wall_at : wall_at + 8] = False
        fixed[step_at : step_at + step_len] = False
        for tag_at, tag_len, float_at in slots:
            fixed[tag_at : tag_at + tag_len] = False
            fixed[float_at : float_at + 4] = False
        self.fixed = np.flatnonzero(fixed)

    @classmethod
    def parse(cls, payload: bytes, float_tag: int = TENSORBOARD_FLOAT) -> Layout | None:
        """The layout of ``payload``, or None when it is not a plain scalar event."""
        try:
            return cls._parse(payload, float_tag)
        except (IndexError, UnicodeDecodeError):
            return None

    @classmethod
    def _parse(cls, p: bytes, float_tag: int) -> Layout | None:
        pos, wall_at, step_at, step_len = 0, -1, 0, 0
        if p[pos] == 0x09:
            wall_at, pos = 1, 9
        if p[pos] == 0x10:
            step_at = pos + 1
            pos = _skip_varint(p, step_at)
            step_len = pos - step_at
        if p[pos] != 0x2A or step_len > 10:
            return None
        size, pos = _varint(p, pos + 1)
        if pos + size != len(p):
            return None
        slots = []
        while pos < len(p):
            if p[pos] != 0x0A:
                return None
            value_len, pos = _varint(p, pos + 1)
            if p[pos] != 0x0A:
                return None
            tag_len, tag_at = _varint(p, pos + 1)
            p[tag_at : tag_at + tag_len].decode("utf-8")
            float_at = tag_at + tag_len + 1
            if (
                p[float_at - 1] != float_tag
                or float_at + 4 != pos + value_len
                or float_at + 4 > len(p)
            ):
                return None
            slots.append((tag_at, tag_len, float_at))
            pos = float_at + 4
        return cls(np.frombuffer(p, np.uint8), wall_at, step_at, step_len, slots)

    def matches(self, payloads: np.ndarray) -> np.ndarray:
        """Rows with this layout: same fixed bytes, a varint of the same length for the step."""
        ok = (payloads[:, self.fixed] == self.first[self.fixed]).all(axis=1)
        if self.step_len:
            step = payloads[:, self.step_at : self.step_at + self.step_len]
            ok &= (step[:, :-1] >= 0x80).all(axis=1) & (step[:, -1] < 0x80)
        return ok

    def decode(self, payloads: np.ndarray, rows: np.ndarray) -> tuple[list[Block], np.ndarray]:
        """The points of ``payloads`` (rows of this layout), one block per slot and tag, and
        the rows left out because a tag is not UTF-8 (protobuf refuses them: they must be
        decoded, and counted, by the protobuf path)."""
        tags = [_tags(payloads[:, at : at + size]) for at, size, _ in self.slots]
        bad = np.zeros(len(payloads), bool)
        for _names, ids in tags:
            if ids is not None:
                bad |= ids < 0
        if bad.any():
            keep = ~bad
            payloads, rows = payloads[keep], rows[keep]
            tags = [(t, None if i is None else i[keep]) for t, i in tags]
        n = len(payloads)
        walls = np.zeros(n)
        if self.wall_at >= 0:
            walls = payloads[:, self.wall_at : self.wall_at + 8].copy().view("<f8").ravel()
        steps = np.zeros(n, np.uint64)
        for j in range(self.step_len):
            byte = payloads[:, self.step_at + j].astype(np.uint64) & np.uint64(0x7F)
            steps |= byte << np.uint64(7 * j)
        steps = steps.view(np.int64)
        blocks: list[Block] = []
        for slot, ((names, ids), (_, _, float_at)) in enumerate(zip(tags, self.slots, strict=True)):
            values = payloads[:, float_at : float_at + 4].copy().view("<f4").ravel()
            if ids is None:
                blocks.append((rows, slot, str(names[0]), steps, walls, values.astype(np.float64)))
                continue
            for k, tag in enumerate(names):
                if tag is not None and (which := np.flatnonzero(ids == k)).size:
                    blocks.append((rows[which], slot, tag, steps[which], walls[which],
                                   values[which].astype(np.float64)))  # fmt: skip
        return blocks, np.flatnonzero(bad)


def _tags(column: np.ndarray) -> tuple[list[str | None], np.ndarray | None]:
    """The distinct tags of a ``(n, tag_len)`` column (None for one that is not UTF-8) and
    each row's index into them (-1 for a bad tag); None instead of indexes when all rows hold
    the first row's tag."""
    if (column == column[0]).all():
        return [column[0].tobytes().decode("utf-8")], None  # the layout checked it decodes
    keys = np.ascontiguousarray(column).view(f"V{column.shape[1]}").ravel()
    uniques, inverse = np.unique(keys, return_inverse=True)
    names: list[str | None] = []
    for raw in uniques:
        try:
            names.append(raw.tobytes().decode("utf-8"))
        except UnicodeDecodeError:
            names.append(None)
    ids = inverse.ravel().astype(np.int64)
    valid = np.array([name is not None for name in names])
    ids[~valid[ids]] = -1
    return names, ids


def _varint(p: bytes, pos: int) -> tuple[int, int]:
    value, shift = 0, 0
    while True:
        byte = p[pos]
        value |= (byte & 0x7F) << shift
        pos += 1
        if byte < 0x80:
            return value, pos
        shift += 7
        if shift > 63:
            raise IndexError("varint too long")


def _skip_varint(p: bytes, pos: int) -> int:
    return _varint(p, pos)[1]
