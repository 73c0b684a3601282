"""The checkpoints of a run kept in object storage, for the run page's checkpoint table.

Why apart: an ``s3://`` base is read through a local copy that leaves checkpoints out (they
can be large), so their files are not on this machine; their listing is. A sharded checkpoint
(a ``<name>.ckpt/`` prefix holding ``manifest.json``) is one entry, its objects' total size.
"""

from __future__ import annotations

from typing import Any

from trainledger.storage import (
    LANDSCAPE_DIR,
    LANDSCAPE_METADATA,
    SHARDED_MANIFEST,
    ObjectLocation,
    ObjectStore,
    parse_checkpoint_name,
)

__all__ = ["object_checkpoints"]

_SUFFIXES = (".ckpt", ".safetensors")
_MANIFEST = SHARDED_MANIFEST


def object_checkpoints(url: str, store: ObjectStore | None = None) -> list[dict[str, Any]]:
    """``[{"name", "size", "epoch", "step", "step_in_epoch", "time", "kind"}]`` of the
    checkpoints under ``url`` (names relative to it; ``kind`` as
    ``checkpoint_listing.list_checkpoints``; ``step`` None: the lineage has it), oldest first."""
    listing = (store or ObjectStore()).list(ObjectLocation.parse(url))
    sharded = {rel[: -len(_MANIFEST) - 1] for rel in listing if rel.endswith(f".ckpt/{_MANIFEST}")}
    entries: dict[str, dict[str, Any]] = {}
    for rel, info in listing.items():
        owner = next((d for d in sharded if rel.startswith(f"{d}/")), None)
        name = owner or rel
        if owner is None and (not rel.endswith(_SUFFIXES) or "/." in f"/{rel}"):
            continue
        entry = entries.setdefault(name, {"name": name, "size": 0, "time": 0.0})
        entry["size"] += info.size
        entry["time"] = max(entry["time"], info.mtime_ns / 1e9)
    landscape = f"{LANDSCAPE_DIR}/{LANDSCAPE_METADATA}" in listing  # (as list_checkpoints)
    for entry in entries.values():
        folder, _, base = entry["name"].rpartition("/")
        entry["kind"] = "landscape" if landscape and folder == LANDSCAPE_DIR else "checkpoint"
        parsed = parse_checkpoint_name(base)
        entry["epoch"] = parsed.epoch if parsed else None
        entry["step"] = None  # the global step: the lineage's (checkpoint_listing)
        entry["step_in_epoch"] = parsed.step if parsed else None
    return sorted(entries.values(), key=lambda c: (c["time"], c["name"]))
