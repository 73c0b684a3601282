"""A generated click stream whose click probability drifts, and the producer process writing it.

The ground truth: a user's affinity to an item category, an item's quality, the display
position, and a category popularity that rotates over time (what is "hot" changes every
``drift_period`` records). So a model that stops learning gets worse, and the windowed AUC and
log loss of an online learner show it adapting.

The producer writes JSONL files ``part-000001.jsonl``, ... into a directory (the layout
``FileTailSource`` tails), appends in chunks so readers see files grow, injects a malformed line
now and then (the source must count and skip it), stays at most ``max_pending_files`` files
ahead of the consumer (read from the consumer's offsets file) and deletes files the consumer
has finished, so an unbounded run uses bounded disk.
"""

from __future__ import annotations

import json
import math
import signal
import time
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["FIELDS", "DENSE", "ClickStream", "collate_clicks", "produce"]

FIELDS = ("user", "item", "cat", "hour", "device")
DENSE = ("price", "pos")
NUM_CATS = 24


def _hash01(*keys: np.ndarray) -> np.ndarray:
    """Deterministic pseudo-random numbers in [0, 1) from integer keys (no stored tables)."""
    h = np.zeros_like(keys[0], dtype=np.uint64)
    with np.errstate(over="ignore"):
        for i, k in enumerate(keys):
            h = (h ^ (k.astype(np.uint64) + np.uint64(0x9E3779B97F4A7C15 + i))) * np.uint64(
                0xBF58476D1CE4E5B9
            )
            h ^= h >> np.uint64(31)
    return (h >> np.uint64(11)).astype(np.float64) / float(1 << 53)


class ClickStream:
    """Chunks of click records; record ``t`` is the same for the same seed, in any process."""

    def __init__(self, seed: int = 0, drift_period: int = 50_000) -> None:
        self.rng = np.random.default_rng(seed)
        self.drift_period = drift_period
        self.t = 0

    def click_probability(self, cols: dict[str, np.ndarray], t: np.ndarray) -> np.ndarray:
        affinity = _hash01(cols["user"], cols["cat"]) - 0.5
        quality = _hash01(cols["item"] + 7) - 0.5
        phase = 2 * np.pi * (t / self.drift_period + cols["cat"] / NUM_CATS)
        logit = (
            -1.5
            + 3.0 * affinity
            + 1.5 * quality
            + 1.2 * np.sin(phase)
            - 0.25 * cols["pos"]
            + 0.3 * (cols["device"] == 0)
        )
        return 1.0 / (1.0 + np.exp(-logit))

    def next_chunk(self, n: int) -> list[dict[str, Any]]:
        rng = self.rng
        t = np.arange(self.t, self.t + n)
        self.t += n
        cols = {
            "user": np.minimum(rng.zipf(1.3, n), 10**9),
            "item": rng.integers(0, 200_000, n),
            "cat": rng.integers(0, NUM_CATS, n),
            "hour": (t // 2000) % 24,
            "device": rng.integers(0, 3, n),
            "pos": rng.integers(0, 5, n),
        }
        price = np.round(rng.lognormal(3.0, 1.0, n), 2)
        click = rng.random(n) < self.click_probability(cols, t)
        return [
            {
                "t": int(t[i]),
                **{k: int(cols[k][i]) for k in FIELDS},
                "price": float(price[i]),
                "pos": int(cols["pos"][i]),
                "click": int(click[i]),
            }
            for i in range(n)
        ]


def collate_clicks(records: list[dict[str, Any]]) -> tuple[Any, Any, Any]:
    """Records -> ``(ids int64 (B, 5), dense float32 (B, 2), click float32 (B,))``."""
    import torch  # only here: the producer process imports this module and needs no torch

    ids = torch.tensor([[r[k] for k in FIELDS] for r in records], dtype=torch.int64)
    dense = torch.tensor(
        [[math.log1p(float(r["price"])), float(r["pos"])] for r in records], dtype=torch.float32
    )
    click = torch.tensor([float(r["click"]) for r in records], dtype=torch.float32)
    return ids, dense, click


def _consumed(offsets_path: Path, directory: Path) -> tuple[set[str], int]:
    """Files the consumer has read to their end, and how many files it has not."""
    try:
        offsets = json.loads(offsets_path.read_text())["offsets"]
    except (OSError, ValueError, KeyError):
        offsets = {}
    done, pending = set(), 0
    for p in directory.glob("part-*.jsonl"):
        if offsets.get(p.name, -1) >= p.stat().st_size:
            done.add(p.name)
        else:
            pending += 1
    return done, pending


def produce(
    directory: str,
    offsets_path: str,
    stop: Any = None,
    *,
    seed: int = 0,
    total: int | None = None,
    records_per_file: int = 10_000,
    chunk: int = 1_000,
    bad_every: int = 4_999,
    max_pending_files: int = 3,
    keep_done_files: int = 2,
) -> None:
    """Write the click stream into ``directory`` until ``total`` records or ``stop`` is set.

    Runs in its own process (``multiprocessing`` target). Ends with the ``_END`` marker.
    SIGINT is ignored here: Ctrl-C in a terminal reaches the whole process group, and the
    trainer, not the producer, decides when to stop (it sets ``stop``).
    """
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    out, offsets = Path(directory), Path(offsets_path)
    out.mkdir(parents=True, exist_ok=True)
    stream = ClickStream(seed)
    written, file_no = 0, 0
    while (total is None or written < total) and not (stop is not None and stop.is_set()):
        done, pending = _consumed(offsets, out)
        if pending >= max_pending_files:  # back-pressure: the trainer is behind
            time.sleep(0.05)
            continue
        for name in sorted(done)[: -keep_done_files or None]:
            (out / name).unlink(missing_ok=True)
        file_no += 1
        with open(out / f"part-{file_no:06d}.jsonl", "a") as fh:
            in_file = 0
            while in_file < records_per_file and (total is None or written < total):
                n = min(chunk, records_per_file - in_file)
                if total is not None:
                    n = min(n, total - written)
                lines = []
                for rec in stream.next_chunk(n):
                    if bad_every and rec["t"] % bad_every == bad_every - 1:
                        lines.append('{"user": 1, "item": "truncated')  # a malformed line
                    lines.append(json.dumps(rec, separators=(",", ":")))
                fh.write("\n".join(lines) + "\n")
                fh.flush()  # readers see the file grow chunk by chunk
                written += n
                in_file += n
                if stop is not None and stop.is_set():
                    break
    (out / "_END").touch()
