"""Wide runs: trainledger's index against MLflow's sqlite store, on runs of 1,500 metrics and
150 user-defined params each (issue 34 item 3; ``bench/query.py --wide N`` runs this).

Generates N run directories of MindInsight's lineage format (user info with 150 float params,
a train lineage, an evaluation with 1,500 metrics), then measures, for trainledger:

- ``index``: building the index from scratch, in a child process (ms a run, and the child's
  peak RSS: the indexing process must stay under 1 GiB at 10,000 such runs), then 50 runs
  added to it one by one (ms a run: no bulk build, what a base gets as runs finish);
- ``query``: warm ``metric/m0042 > 0.5``, ``user_defined/p007 < 0.5``, sorted by
  ``metric/m0777`` descending, page of 10, asked again (its count is kept between queries,
  ``query/count_cache.py``), and a new condition of that shape each round (``m0042`` over
  another bound: counted afresh);
- ``page100``: warm, the first 100 runs with all their fields.

With ``--mlflow-cache DIR`` the same N runs (same values) are logged into an MLflow sqlite
store under DIR once (about 12 minutes for 1,000 runs here) and reused by later calls; MLflow's
``search_runs("metrics.m0042 > 0.5", order_by=["metrics.m0777 DESC"], max_results=10)`` is
then timed in rounds alternating with ours, and the ratio MLflow / ours printed (ours: the
new condition's time).

    .venv/bin/python bench/wide_runs.py --runs 1000 --rounds 5 --mlflow-cache ~/.cache/tl-wide
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from trainledger.lineage.records import (
    EvalValues,
    TrainValues,
    eval_event,
    train_event,
    user_defined_event,
)
from trainledger.query.index import LineageIndex

sys.path.insert(0, str(Path(__file__).resolve().parent))
from query import exited_pid, wait_for_watcher  # noqa: E402 (the sibling bench module)

try:
    from trainledger.storage import frame, lineage_file_name
except ImportError:  # the code before the storage/ refactor (A/B runs against it)
    from trainledger.lineage.naming import lineage_file_name  # type: ignore[no-redef]
    from trainledger.summary.framing import frame  # type: ignore[no-redef]

METRICS, PARAMS = 1500, 150
QUERY: dict[str, Any] = {
    "metric/m0042": {"gt": 0.5},
    "user_defined/p007": {"lt": 0.5},
    "sorted_name": "metric/m0777",
    "sorted_type": "descending",
    "limit": 10,
    "offset": 0,
}
PAGE100: dict[str, Any] = {"limit": 100, "offset": 0}


def values(i: int, seed: int = 0) -> tuple[dict[str, float], dict[str, float]]:
    """Run ``i``'s metrics and params (the same for ours and MLflow's copy)."""
    rng = random.Random(seed * 1_000_003 + i)
    metrics = {f"m{j:04d}": rng.random() for j in range(METRICS)}
    params = {f"p{j:03d}": rng.random() for j in range(PARAMS)}
    return metrics, params


def generate(base: Path, n: int) -> None:
    """Write ``n`` wide run directories (one lineage file each, distinct mtimes)."""
    base.mkdir(parents=True, exist_ok=True)
    pid, t0 = exited_pid(), 1_700_000_000
    for i in range(n):
        metrics, params = values(i)
        run = base / f"run{i:06d}"
        run.mkdir()
        ts = t0 + i
        events = [
            user_defined_event(params, wall_time=ts),
            train_event(
                TrainValues(optimizer="Adam", learning_rate=0.01, epoch=3, batch_size=32),
                wall_time=ts,
            ),
            eval_event(EvalValues(metrics=metrics), wall_time=ts),
        ]
        path = run / lineage_file_name(ts, 0, None, pid, 0)
        path.write_bytes(b"".join(frame(e.SerializeToString()) for e in events))
        os.utime(path, (ts, ts))


_CHILD = """
import json, resource, sys, time
from trainledger.query.index import LineageIndex
t = time.perf_counter()
with LineageIndex(sys.argv[1]) as index:
    stats = index.refresh()
print(json.dumps({"seconds": time.perf_counter() - t, "runs": stats.parsed,
                  "rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                  "child_rss_mib": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024}))
"""


def index_from_scratch(base: Path) -> dict[str, float]:
    """Build the index in a child process: its time and peak RSS."""
    index_dir = base / ".trainledger"
    if index_dir.exists():
        for path in sorted(index_dir.rglob("*"), reverse=True):
            path.unlink() if path.is_file() else path.rmdir()
        index_dir.rmdir()
    out = subprocess.run(
        [sys.executable, "-c", _CHILD, str(base)], capture_output=True, text=True, check=True
    )
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))


def index_added(base: Path, added: int = 50) -> float:
    """Seconds a run to store ``added`` runs into the built index one by one (fewer than a
    bulk build takes, ``query/bulk_build.py``: what a base gets as runs finish): the last
    ``added`` run folders are moved out, the index refreshed, and the refresh that finds
    them back timed."""
    aside = Path(tempfile.mkdtemp(prefix="wide-aside-"))
    moved = sorted(p for p in base.iterdir() if p.name.startswith("run"))[-added:]
    with LineageIndex(base) as index:
        index.refresh()
        for path in moved:
            path.rename(aside / path.name)
        index.refresh()
        for path in moved:
            (aside / path.name).rename(path)
        start = time.perf_counter()
        stats = index.refresh()
        seconds = time.perf_counter() - start
    aside.rmdir()
    assert stats.parsed == len(moved), stats
    return seconds / len(moved)


def mlflow_store(cache: Path, n: int) -> str:
    """The MLflow tracking URI of a sqlite store holding the ``n`` runs (built once)."""
    import mlflow
    from mlflow.entities import Metric, Param

    cache.mkdir(parents=True, exist_ok=True)
    uri = f"sqlite:///{cache / f'mlflow-wide-{n}.db'}"
    done = cache / f"mlflow-wide-{n}.done"
    if done.exists():
        return uri
    client = mlflow.MlflowClient(uri)
    exp = client.create_experiment(f"wide-{time.time_ns()}")
    started = time.perf_counter()
    for i in range(n):
        metrics, params = values(i)
        run = client.create_run(exp, run_name=f"run{i:06d}")
        rid, now = run.info.run_id, int(time.time() * 1000)
        ms = [Metric(k, v, now, 0) for k, v in metrics.items()]
        ps = [Param(k, str(v)) for k, v in params.items()]
        for start in range(0, len(ms), 1000):  # MLflow's batch limit: 1,000 metrics
            client.log_batch(rid, metrics=ms[start : start + 1000])
        for start in range(0, len(ps), 100):  # and 100 params
            client.log_batch(rid, params=ps[start : start + 100])
        client.set_terminated(rid)
        if i % 100 == 99:
            print(f"  mlflow: {i + 1}/{n} runs, {time.perf_counter() - started:.0f} s", flush=True)
    done.write_text(uri)
    return uri


def _timed(fn: Any) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def _summary(times: list[float]) -> str:
    ms = sorted(t * 1000 for t in times)
    return f"{statistics.median(ms):.1f} ms [{ms[0]:.1f}-{ms[-1]:.1f}]"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--dir", help="work directory (default: a temp dir)")
    parser.add_argument("--mlflow-cache", help="directory of the cached MLflow sqlite store")
    parser.add_argument(
        "--reuse-index", action="store_true", help="time the queries over an index already built"
    )
    args = parser.parse_args()
    work = Path(args.dir) if args.dir else Path(tempfile.mkdtemp(prefix="wide-"))
    run(args.runs, args.rounds, work, args.mlflow_cache, args.reuse_index)


def run(
    runs: int, rounds: int, work: Path, mlflow_cache: str | None, reuse_index: bool = False
) -> None:
    """Generate (once) ``runs`` wide runs under ``work`` and print the figures."""
    base = work / f"wide{runs}"
    if not base.exists():
        generate(base, runs)
    if reuse_index and (base / ".trainledger").exists():
        print("index: reused (not timed)")
    else:
        built = index_from_scratch(base)
        per_run = built["seconds"] / max(1, built["runs"]) * 1000
        print(f"index {runs} wide runs from scratch: {built['seconds']:.1f} s, "
              f"{per_run:.2f} ms a run, peak RSS {built['rss_mib']:.0f} MiB")  # fmt: skip
        print(f"(its parse processes' peak RSS, the largest: {built['child_rss_mib']:.0f} MiB)")
        added = min(50, runs // 2)
        each = index_added(base, added) * 1000
        print(f"index {added} wide runs added one by one: {each:.2f} ms a run")
    index = LineageIndex(base)
    index.query(QUERY)
    index.query(PAGE100)
    watched = wait_for_watcher(index)  # a long-lived reader (the UI): no scan of every run
    search: Any = None
    if mlflow_cache:
        import mlflow

        client = mlflow.MlflowClient(mlflow_store(Path(mlflow_cache), runs))
        experiments = [e.experiment_id for e in client.search_experiments()]

        def search() -> None:
            client.search_runs(
                experiments, "metrics.m0042 > 0.5", order_by=["metrics.m0777 DESC"], max_results=10
            )

        search()
    ours: dict[str, list[float]] = {"query": [], "new": [], "page100": []}
    theirs: list[float] = []
    ratios: list[float] = []
    for k in range(rounds):  # alternating, paired rounds
        ours["query"].append(_timed(lambda: index.query(QUERY)))
        new = {**QUERY, "metric/m0042": {"gt": 0.5 + (k + 1) * 1e-9}}
        q = _timed(functools.partial(index.query, new))
        ours["new"].append(q)
        ours["page100"].append(_timed(lambda: index.query(PAGE100)))
        if search is not None:
            theirs.append(_timed(search))
            ratios.append(theirs[-1] / q)
    index.close()
    print(f"(base watcher trusted: {watched})")
    print(f"warm filter+sort+page of 10, asked again: {_summary(ours['query'])}")
    print(f"warm filter+sort+page of 10, a new condition: {_summary(ours['new'])}")
    print(f"warm first 100 runs, all fields: {_summary(ours['page100'])}")
    if theirs:
        print(f"MLflow search_runs (sqlite store): {_summary(theirs)}")
        r = sorted(ratios)
        print(f"ratio MLflow / ours: median {statistics.median(r):.1f}x [{r[0]:.1f}-{r[-1]:.1f}]")
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"(bench process peak RSS {rss:.0f} MiB)")


if __name__ == "__main__":
    main()
