"""Scalar events encoded straight to bytes, the hot path of writing summaries.

Scalars are most of what gets written (one or a few per step, often the same tags every
step), so they skip protobuf message construction: the bytes are assembled from cached tag
prefixes and packed numbers. Every function here returns exactly what
``encoders.event(...).SerializeToString()`` returns for the same input; the tests check that
with arbitrary tags, values, steps and times.
"""

from __future__ import annotations

import struct
from typing import Any

from trainledger.summary.encoders import event, scalar

__all__ = ["scalar_event_bytes", "scalars_event_bytes", "scalar_rows_event_bytes"]


_DOUBLE = struct.Struct("<d")
_FLOAT = struct.Struct("<f")


def _varint(value: int) -> bytes:
    value &= 0xFFFFFFFFFFFFFFFF  # int64 two's complement, as protobuf encodes negatives
    out = bytearray()
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


_TAG_PREFIX: dict[str, bytes] = {}  # tag -> encoded "tag" field, bounded below


def _tag_prefix(tag: str) -> bytes:
    prefix = _TAG_PREFIX.get(tag)
    if prefix is None:
        raw = tag.encode("utf-8")
        prefix = b"\x0a" + _varint(len(raw)) + raw
        if len(_TAG_PREFIX) < 4096:
            _TAG_PREFIX[tag] = prefix
    return prefix


def _scalar_value_bytes(tag: str, value: float) -> bytes:
    val = _tag_prefix(tag) + b"\x15" + _FLOAT.pack(value)  # OverflowError beyond float32
    n = len(val)
    return (b"\x0a" + bytes((n,)) if n < 128 else b"\x0a" + _varint(n)) + val


def scalars_event_bytes(pairs: list[tuple[str, float]], step: int, wall_time: float) -> bytes:
    """``event(step, wall_time, [scalar(t, v) for t, v in pairs]).SerializeToString()``,
    built without messages.

    Scalars are most of what gets written (one or a few per step), so they skip message
    construction; a test checks the bytes equal the protobuf encoding for arbitrary inputs.
    """
    try:
        summ = b"".join([_scalar_value_bytes(tag, value) for tag, value in pairs])
    except OverflowError:  # beyond float32: protobuf stores +-inf
        values = [scalar(tag, value) for tag, value in pairs]
        return event(step, wall_time, values).SerializeToString()
    n = len(summ)
    body = (b"\x2a" + bytes((n,)) if n < 128 else b"\x2a" + _varint(n)) + summ
    if step:
        body = (b"\x10" + (bytes((step,)) if 0 < step < 128 else _varint(step))) + body
    if wall_time or _DOUBLE.pack(wall_time) != _ZERO8:  # proto3 leaves zero fields out
        body = b"\x09" + _DOUBLE.pack(wall_time) + body
    return body


def scalar_rows_event_bytes(tags: tuple[str, ...], rows: list[tuple[Any, ...]]) -> list[bytes]:
    """Events for rows ``(step, wall_time, value_0, value_1, ...)`` of scalars with the same
    ``tags``: each equals ``scalars_event_bytes(list(zip(tags, values)), step, wall_time)``.

    A collector writing the same few scalars every step sends rows; the tag bytes are built
    once per batch instead of once per value.
    """
    prefixes = [_tag_prefix(tag) + b"\x15" for tag in tags]
    out: list[bytes] = []
    append = out.append
    pack_f, pack_d = _FLOAT.pack, _DOUBLE.pack
    for row in rows:
        step, wall_time = row[0], row[1]
        try:
            summ = b"".join(
                [_len_prefixed(p + pack_f(v)) for p, v in zip(prefixes, row[2:], strict=True)]
            )
        except OverflowError:  # beyond float32: the general path stores +-inf
            append(scalars_event_bytes(list(zip(tags, row[2:], strict=True)), step, wall_time))
            continue
        n = len(summ)
        body = (b"\x2a" + bytes((n,)) if n < 128 else b"\x2a" + _varint(n)) + summ
        if step:
            body = (b"\x10" + (bytes((step,)) if 0 < step < 128 else _varint(step))) + body
        if wall_time or pack_d(wall_time) != _ZERO8:
            body = b"\x09" + pack_d(wall_time) + body
        append(body)
    return out


def _len_prefixed(val: bytes) -> bytes:
    n = len(val)
    return (b"\x0a" + bytes((n,)) if n < 128 else b"\x0a" + _varint(n)) + val


def scalar_event_bytes(tag: str, value: float, step: int, wall_time: float) -> bytes:
    """One scalar's event bytes (see ``scalars_event_bytes``), the most common event."""
    try:
        val = _tag_prefix(tag) + b"\x15" + _FLOAT.pack(value)
    except OverflowError:  # beyond float32: protobuf stores +-inf
        return event(step, wall_time, [scalar(tag, value)]).SerializeToString()
    n = len(val)
    if n < 126:  # both lengths fit one varint byte
        body = b"\x2a" + bytes((n + 2, 0x0A, n)) + val
    else:
        summ = b"\x0a" + _varint(n) + val
        body = b"\x2a" + _varint(len(summ)) + summ
    if step:
        body = (b"\x10" + (bytes((step,)) if 0 < step < 128 else _varint(step))) + body
    if wall_time or _DOUBLE.pack(wall_time) != _ZERO8:  # proto3 leaves zero fields out
        body = b"\x09" + _DOUBLE.pack(wall_time) + body
    return body


_ZERO8 = bytes(8)
