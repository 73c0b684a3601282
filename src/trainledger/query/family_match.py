"""Where a model came from and what came of it: parents found from the weights themselves
(docs/lineage.md, "Across runs").

A run records the digests of its network's tensors when training begins, and of every
checkpoint it saves (``lineage.weights``). A run whose starting tensors match a checkpoint's,
by digest, dtype and shape whatever their names, started from it, however the file was
loaded (``load_checkpoint``, ``safetensors`` + ``load_state_dict``, ``torch.load`` of a state
dict, a partial load with a new head). No argument declares the link, so an unrelated run
must never look like a child:

- a tensor whose elements are all equal (norm weights of 1, zero biases, counters) never
  counts: any initialisation has it;
- a checkpoint saved before the first step (step 0) never counts: two runs with one seed
  start from the same weights, and neither is the other's child;
- loss-landscape snapshots (``ckpt_dir/``) never count, nor do a run's own checkpoints (a
  run resumed into its own folder is a session of that run, not its child);
- a source must hold at least one non-constant tensor and 1 % of the run's tensor bytes
  (``match`` is the share of the bytes of its non-constant tensors: 1.0 for a full load).

A file a run's process loaded with ``load_checkpoint`` from outside the base (its digests are
in the run's lineage) is a source too, with no run; once that file's run is in the base, the
run is named.

Several sources (a backbone from one run, an embedding from another) are found greedily,
largest first: each takes the tensors it explains, so one run's earlier checkpoints, which
share only its frozen tensors, do not follow its latest as extra sources. ``find_sources``
is the decision, a pure function over digests (docs/development.md, convention 3).

Not handled, documented: weights cast to another dtype (bf16 from fp32) and FSDP shards hold
other bytes; a run that froze a layer shares that layer's initial bytes with every run of the
same seed.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from trainledger.lineage import RunWeights, read_weights
from trainledger.storage import Digests

__all__ = ["BaseWeights", "Candidate", "Source", "find_sources", "owner_map", "MIN_MATCH"]

#: the smallest share of a run's tensor bytes a source must explain
MIN_MATCH = 0.01


@dataclass(frozen=True)
class Candidate:
    """A set of weights a run may have started from: a checkpoint of ``run`` (None: a file
    outside the base that a process loaded), saved at ``step``."""

    run: str | None
    checkpoint: str
    step: int | None
    digests: Digests


@dataclass(frozen=True)
class Source:
    """Where part of a run's starting weights came from: ``match`` is the share (0 to 1) of
    the run's tensor bytes this checkpoint explains, ``tensors`` how many tensors."""

    run: str | None
    checkpoint: str
    step: int | None
    match: float
    tensors: int


def _counts(candidate: Candidate) -> bool:
    if candidate.step == 0:
        return False  # saved before the first step: an initialisation, not a parent
    return "/ckpt_dir/" not in candidate.checkpoint.replace(os.sep, "/")


def find_sources(
    start: Digests, candidates: Sequence[Candidate], own: str | None = None
) -> list[Source]:
    """The sources of weights ``start`` among ``candidates`` (those of run ``own`` left
    out), largest first (module doc)."""
    by_key: dict[tuple[int, str], list[int]] = {}
    for i, key in enumerate(start.keys()):
        if not (start.constant and start.constant[i]):
            by_key.setdefault(key, []).append(i)
    # the bytes that can tell where weights came from: a full load is 1.0 whatever counters
    # and fresh norm layers the network also holds
    total = sum(start.nbytes(i) for tensors in by_key.values() for i in tensors)
    if not total:
        return []
    usable = [c for c in candidates if c.run != own and _counts(c)]
    covers = [_covered(c.digests, by_key) for c in usable]
    left = {i for tensors in by_key.values() for i in tensors}
    found: list[Source] = []
    while left:
        best, best_bytes, best_set = -1, 0, set()
        for k, covered in enumerate(covers):
            hit = covered & left
            size = sum(start.nbytes(i) for i in hit)
            if size > best_bytes:
                best, best_bytes, best_set = k, size, hit
        if best < 0 or best_bytes < MIN_MATCH * total:
            break
        c = usable[best]
        found.append(Source(c.run, c.checkpoint, c.step, best_bytes / total, len(best_set)))
        left -= best_set
    return found


def _covered(digests: Digests, by_key: Mapping[tuple[int, str], list[int]]) -> set[int]:
    """The start's tensors (their positions) whose digest this checkpoint holds."""
    hit: set[int] = set()
    for key in set(digests.keys()):
        hit.update(by_key.get(key, ()))
    return hit


@dataclass
class BaseWeights:
    """Every run's weights in a base: run (``summary_dir``) -> its ``RunWeights``."""

    runs: dict[str, RunWeights]

    @classmethod
    def read(cls, base: str, summary_dirs: Iterable[str]) -> BaseWeights:
        return cls({d: read_weights(os.path.join(base, d)) for d in summary_dirs})

    def candidates(self, owner: Mapping[str, str]) -> list[Candidate]:
        """Every checkpoint of every run, and every file a run loaded (its run: the one
        whose folder holds it, by ``owner``: path -> run; else None)."""
        out = [
            Candidate(run, path, step, digests)
            for run, weights in self.runs.items()
            for path, (step, digests) in weights.checkpoints.items()
        ]
        known = {c.checkpoint for c in out}
        for weights in self.runs.values():
            for path, digests in weights.loaded:
                if path not in known:
                    known.add(path)
                    out.append(Candidate(_owner(path, owner), path, None, digests))
        return out

    def sources(self, candidates: Sequence[Candidate]) -> dict[str, list[Source]]:
        """Each run's sources (only runs that recorded their starting weights)."""
        return {
            run: find_sources(w.initial, candidates, own=run)
            for run, w in self.runs.items()
            if w.initial is not None
        }


def owner_map(root: str, dirs: Iterable[str]) -> dict[str, str]:
    """The run folders of ``dirs`` (``summary_dir``s) as writers named them under ``root``
    (the base's ``s3://`` URL for a copy, else its path): folder -> run."""
    return {f"{root}/{d[2:]}" if d != "." else root: d for d in dirs}


def _owner(path: str, owner: Mapping[str, str]) -> str | None:
    """The run whose folder holds ``path`` (``owner``: folder -> run), or None."""
    parent = path.replace(os.sep, "/").rsplit("/", 1)[0]
    while parent:
        if parent in owner:
            return owner[parent]
        if "/" not in parent:
            return None
        parent = parent.rsplit("/", 1)[0]
    return None
