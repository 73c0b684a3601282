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

__all__ = [
    "Candidate",
    "Families",
    "Source",
    "find_sources",
    "MIN_MATCH",
    "family_of",
    "run_family",
]

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


def family_of(
    run: str, sources: Mapping[str, list[Source]], evaluations: Mapping[str, list[Source]]
) -> dict[str, list[dict[str, object]]]:
    """``run``'s ancestors (its sources, theirs...), descendants (runs with it among their
    sources, theirs...) and the evaluations of its checkpoints, each an entry with ``run``,
    ``checkpoint``, ``step``, ``match`` and ``depth``."""
    ancestors: list[dict[str, object]] = []
    frontier, seen = [run], {run}
    for depth in range(1, 64):
        nxt = []
        for child in frontier:
            for s in sources.get(child, []):
                ancestors.append({**_entry(s.run, s), "child": child, "depth": depth})
                if s.run is not None and s.run not in seen:
                    seen.add(s.run)
                    nxt.append(s.run)
        if not (frontier := nxt):
            break
    descendants: list[dict[str, object]] = []
    frontier, seen = [run], {run}
    for depth in range(1, 64):
        nxt = []
        for parent in frontier:
            for child, found in sorted(sources.items()):
                for s in found:
                    if s.run == parent:
                        descendants.append({**_entry(child, s), "parent": parent, "depth": depth})
                        if child not in seen:
                            seen.add(child)
                            nxt.append(child)
        if not (frontier := nxt):
            break
    evals = [
        _entry(evaluator, s)
        for evaluator, found in sorted(evaluations.items())
        for s in found
        if s.run == run and evaluator != run
    ]
    return {"ancestors": ancestors, "descendants": descendants, "evaluations": evals}


def _entry(run: str | None, source: Source) -> dict[str, object]:
    return {
        "run": run,
        "checkpoint": source.checkpoint,
        "step": source.step,
        "match": round(source.match, 4),
    }


def run_family(
    summary_base_dir: str | os.PathLike[str],
    run: str,
    *,
    max_depth: int = 1,
    index: str | None = None,
) -> dict[str, object]:
    """The family of ``run`` (a ``summary_dir`` as ``filter_summary_lineage`` names it,
    ``"./r1"``, or a run folder's name or path under the base), across the base's runs:
    ``{"run", "ancestors", "descendants", "evaluations"}`` (``family_of``).

    Raises:
        LineageParamValueError: ``run`` is not a run of the base.
    """
    from trainledger.errors import LineageParamValueError
    from trainledger.query.lineage_api import base_name, open_index
    from trainledger.storage import is_object_url

    found = open_index(summary_base_dir, max_depth, index)
    records = {str(r["summary_dir"]): r for r in found.records(refresh=True)}
    dirs = sorted(records)
    wanted = _summary_dir(run, os.fspath(summary_base_dir), found.base)
    if wanted not in dirs:
        close = ", ".join(dirs[:5]) + (" ..." if len(dirs) > 5 else "")
        raise LineageParamValueError(
            f"run expected one of the base's runs ({close}), received: {run!r}"
        )
    named = base_name(summary_base_dir, found.base) if is_object_url(summary_base_dir) else None
    families = Families.read(found.base, named or found.base, dirs)
    return families.of(wanted, records)


@dataclass(frozen=True)
class Families:
    """Every run's sources and the sources of every run's evaluations, read once from a
    base's weights: what ``of`` answers any run's family from (the web UI keeps one per data
    version rather than reading every run's lineage again for each run page)."""

    sources: Mapping[str, list[Source]]
    evaluations: Mapping[str, list[Source]]

    @classmethod
    def read(cls, base: str, root: str, dirs: Sequence[str]) -> Families:
        """The families of the runs ``dirs`` (``summary_dir``s) of the local directory
        ``base``, whose runs' files writers named under ``root`` (the base's ``s3://`` URL
        for a copy, else ``base``)."""
        weights = BaseWeights.read(base, dirs)
        owner = {f"{root}/{d[2:]}" if d != "." else root: d for d in dirs}
        candidates = weights.candidates(owner)
        evaluations = {
            run_dir: [
                s for digests in w.evaluated for s in find_sources(digests, candidates, run_dir)
            ]
            for run_dir, w in weights.runs.items()
            if w.evaluated
        }
        return cls(weights.sources(candidates), evaluations)

    def of(self, run: str, records: Mapping[str, Mapping[str, object]]) -> dict[str, object]:
        """``run``'s family (``family_of``), each entry with its run's main metric from
        ``records`` (``summary_dir`` -> a record with ``metric``)."""
        family = family_of(run, self.sources, self.evaluations)
        for entries in family.values():
            for entry in entries:
                entry["metric"] = _main_metric(records.get(str(entry["run"])))
        return {"run": run, "metric": _main_metric(records.get(run)), **family}


def _main_metric(record: Mapping[str, object] | None) -> dict[str, object]:
    """A run's main metric (its first, by name: ``accuracy`` before ``loss``), {} for none."""
    metric = record.get("metric") if record is not None else None
    if not isinstance(metric, dict) or not metric:
        return {}
    name = sorted(metric)[0]
    return {name: metric[name]}


def _summary_dir(run: str, given_base: str, local_base: str) -> str:
    """``run`` as a ``summary_dir`` (``"./name"``) of the base."""
    text = run.rstrip("/")
    if text.startswith("./") or text == ".":
        return text
    for prefix in (given_base.rstrip("/"), local_base.rstrip("/")):
        if text.startswith(prefix + "/"):
            return "./" + text[len(prefix) + 1 :]
    return "./" + text
