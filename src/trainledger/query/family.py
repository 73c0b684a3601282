"""A run's family: its ancestors, descendants and the evaluations of its checkpoints, across a
base's runs (docs/lineage.md, "Across runs"). Which checkpoint a run started from is
``family_match``'s decision; this module walks the links it finds, both ways, and answers
``run_family``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from trainledger.query.family_match import (
    BaseWeights,
    Candidate,
    Source,
    find_sources,
    owner_map,
)

__all__ = ["Candidate", "Families", "Source", "find_sources", "family_of", "run_family"]


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
        candidates = weights.candidates(owner_map(root, dirs))
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
