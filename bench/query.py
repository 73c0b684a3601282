"""Lineage query speed: trainledger's index vs. MindInsight 2.3.1's filter_summary_lineage.

Generates N run directories of real lineage files (MindInsight's LineageEvent records: user
info, train lineage, dataset graph, evaluation), then times three queries:

- ``filter``: optimizer = Adam, learning_rate > 0.05, best accuracy first, page of 10;
- ``range``: metric/Accuracy in [0.5, 0.6];
- ``all``: everything (no condition).

Cold = first query with no index (it builds the index: every file parsed once). Warm = the
index exists; each query still does the cheap scan (listing + stat of every lineage file).
Fresh process = a new Python process that imports the engine, opens the index and answers the
filter query (what every ``trainledger lineage BASE`` call is), from its start to its exit.
Each answer is checked against the plain-Python semantics over the same records.

If ``--mindinsight PY`` (a MindInsight 2.3.1 venv's python, see
/work/shared/tools/mindinsight-venv.sh) is given, MindInsight answers the same queries on the
1k-run set in a subprocess that times itself (import cost excluded). MindInsight lists at
most 999 run directories, so over 1k runs it sees 999.

    .venv/bin/python bench/query.py --sizes 1000 10000 100000 \\
        --mindinsight .venv-mindinsight/bin/python

``--wide N`` adds runs of 1,500 metrics and 150 params each (``bench/wide_runs.py``: index
time a run, peak memory, warm query, page of 100, and MLflow's ``search_runs`` on the same
runs with ``--mlflow-cache DIR``).

``--series N`` adds the series statistics (``bench/series_stats.py``: the indexer reading
``--series-points`` points from event and ``_MS`` files against TensorBoard's reader, then a
base of N runs: a live run's append and the warm statistics queries).

``--postgres URL`` adds the shared-index case: ``--pg-sizes`` runs (default 1,000,000) are
generated in memory with the same distributions and loaded straight into the index's tables
with COPY (no run files: queries use ``refresh=False``, what the web UI pays between its
re-scans), then the issue-19 queries are timed warm (``--reps`` each after one warm-up) and
their answers checked against the plain-Python semantics over the same records.

    .venv/bin/python bench/query.py --sizes 1000 --postgres postgresql://USER@HOST/DB
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import random
import shutil
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
    dataset_graph_event,
    eval_event,
    train_event,
    user_defined_event,
)
from trainledger.query.conditions import validate_condition
from trainledger.query.flat_record import graph_hash
from trainledger.query.index import LineageIndex
from trainledger.query.semantics import custom_type_name, evaluate

try:
    from trainledger.storage import frame, lineage_file_name
except ImportError:  # the code before the storage/ refactor (A/B runs against it)
    from trainledger.lineage.naming import lineage_file_name  # type: ignore[no-redef]
    from trainledger.summary.framing import frame  # type: ignore[no-redef]

QUERIES: dict[str, dict[str, Any] | None] = {
    "filter": {
        "optimizer": {"eq": "Adam"},
        "learning_rate": {"gt": 0.05},
        "sorted_name": "metric/Accuracy",
        "sorted_type": "descending",
        "limit": 10,
        "offset": 0,
    },
    # the two queries of issue 19's targets
    "issue19": {
        "learning_rate": {"gt": 0.05},
        "optimizer": {"in": ["Adam", "SGD"]},
        "sorted_name": "metric/Accuracy",
        "sorted_type": "descending",
        "limit": 10,
        "offset": 0,
    },
    "issue19_user": {
        "learning_rate": {"gt": 0.05},
        "user_defined/team": {"in": ["a", "b"]},
        "sorted_name": "metric/Accuracy",
        "sorted_type": "descending",
        "limit": 10,
        "offset": 0,
    },
    "range": {"metric/Accuracy": {"ge": 0.5, "le": 0.6}},
    "all": None,
}

_MI_SCRIPT = r"""
import json, logging, sys, time, statistics
logging.disable(logging.CRITICAL)
from mindinsight.lineagemgr.model import filter_summary_lineage
base, queries, reps = sys.argv[1], json.loads(sys.argv[2]), int(sys.argv[3])
out = {}
for name, cond in queries.items():
    times = []
    for _ in range(reps):
        t = time.perf_counter()
        res = filter_summary_lineage(summary_base_dir=base, search_condition=cond)
        times.append(time.perf_counter() - t)
    out[name] = {"seconds": statistics.median(times), "best": min(times), "count": res["count"]}
print(json.dumps(out))
"""


def exited_pid() -> int:
    """The pid of a process that has exited: lineage files named after it are those of
    finished runs, which the scan treats as final (as trainledger's writer names them)."""
    child = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        capture_output=True,
        text=True,
        check=True,
    )
    return int(child.stdout)


def generate(base: Path, n: int, seed: int = 0) -> None:
    """Write ``n`` run directories with one lineage file each (distinct mtimes)."""
    rng = random.Random(seed)
    base.mkdir(parents=True, exist_ok=True)
    dead_pid = exited_pid()
    t0 = 1_700_000_000
    graphs: list[dict[str, Any]] = [
        {
            "op_type": "Batch",
            "batch_size": b,
            "children": [
                {"op_type": "GeneratorDataset", "num_parallel_workers": w, "children": []}
            ],
        }
        for b in (16, 32, 64, 128)
        for w in (1, 2, 4, 8)
    ]
    for i in range(n):
        run = base / f"run{i:06d}"
        run.mkdir()
        ts = t0 + i
        events = [
            user_defined_event({"team": rng.choice("abcd"), "trial": i}, wall_time=ts),
            train_event(
                TrainValues(
                    optimizer=rng.choice(["Adam", "SGD", "Momentum"]),
                    learning_rate=rng.choice([0.001, 0.01, 0.02, 0.05, 0.1, 0.2]),
                    loss_function="CrossEntropyLoss",
                    epoch=rng.randint(1, 20),
                    batch_size=rng.choice([16, 32, 64, 128]),
                    device_num=1,
                    network="MLP",
                    loss=rng.random(),
                    train_dataset_size=60000,
                    model_size=rng.randint(1, 10**7),
                ),
                wall_time=ts,
            ),
            dataset_graph_event(rng.choice(graphs), wall_time=ts),
            eval_event(
                EvalValues(
                    metrics={"Accuracy": rng.random(), "Loss": rng.random()},
                    valid_dataset_size=10000,
                ),
                wall_time=ts,
            ),
        ]
        path = run / lineage_file_name(ts, 0, None, dead_pid, 0)
        path.write_bytes(b"".join(frame(e.SerializeToString()) for e in events))
        os.utime(path, (ts, ts))


def _timed(fn: Any) -> tuple[float, Any]:
    t = time.perf_counter()
    value = fn()
    return time.perf_counter() - t, value


def _checked_times(
    index: LineageIndex,
    name: str,
    reps: int,
    records: list[dict[str, Any]],
    refresh: bool = True,
) -> tuple[list[float], dict[str, Any]]:
    """``reps`` timings of query ``name`` and its last answer, checked against the plain-Python
    semantics over ``records``."""
    cond = QUERIES[name]
    times = []
    for _ in range(reps):
        seconds, result = _timed(lambda: index.query(cond, refresh=refresh))
        times.append(seconds)
    expected = evaluate(records, validate_condition(cond))
    assert result == expected, f"{name}: SQL answer differs from the Python semantics"
    return times, result


def _new_filter(k: int) -> dict[str, Any]:
    """The ``filter`` query over another bound: a condition no query asked before."""
    return {**QUERIES["filter"], "learning_rate": {"gt": 0.05 + (k + 1) * 1e-9}}  # type: ignore[dict-item]


def wait_for_watcher(index: LineageIndex, limit: float = 60.0) -> bool:
    """Query until the base watcher (query.watch) is trusted, as in a long-lived reader."""
    watch = getattr(getattr(index, "_scanner", None), "_watch", None)
    if watch is None or not watch.enabled:  # code without watchers (A/B runs) or turned off
        return False
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        index.query(QUERIES["filter"])
        if watch.watcher is not None and watch.watcher.trusted and watch.since is not None:
            return True
        time.sleep(0.05)
    return False


def bench_ours(base: Path, reps: int) -> dict[str, Any]:
    shutil.rmtree(base / ".trainledger", ignore_errors=True)
    out: dict[str, Any] = {}
    index = LineageIndex(base)
    cold, first = _timed(lambda: index.query(QUERIES["filter"]))
    out["cold"] = cold
    records = index.records()
    index.query(QUERIES["filter"])  # warm-up (the first scan after the build settles listings)
    out["watched"] = wait_for_watcher(index)
    for name in QUERIES:
        times, result = _checked_times(index, name, reps, records)
        out[name] = {
            "seconds": statistics.median(times),
            "best": min(times),
            "count": result["count"],
        }
    assert first == evaluate(records, validate_condition(QUERIES["filter"]))
    # the same query without the scan (what a server pays between its periodic rescans)
    times = [_timed(lambda: index.query(QUERIES["filter"], refresh=False))[0] for _ in range(reps)]
    out["sql_only_filter"] = statistics.median(times)
    # the filter as a new condition each time: a repeated query's count is kept
    # (query/count_cache.py), a new one is counted
    times = [_timed(functools.partial(index.query, _new_filter(k)))[0] for k in range(reps)]
    out["new_filter"] = statistics.median(times)
    times = [_timed(index.refresh)[0] for _ in range(reps)]
    out["scan_only"] = statistics.median(times)
    # a fresh process-like start: new index object over the existing index file
    fresh, _ = _timed(lambda: LineageIndex(base).query(QUERIES["filter"]))
    out["reopen_filter"] = fresh
    index.close()
    out["fresh_process"] = fresh_process(base, reps)
    return out


_FRESH_SCRIPT = r"""
import json, sys
from trainledger.query.index import LineageIndex
print(LineageIndex(sys.argv[1]).query(json.loads(sys.argv[2]))["count"])
"""


def fresh_process(base: Path, reps: int) -> dict[str, float]:
    """What every ``trainledger lineage BASE`` pays: a new Python process that imports the
    query engine, opens the index and answers the filter query, timed from its start to its
    exit. The child may write bytecode (``PYTHONDONTWRITEBYTECODE`` unset), as an installed
    package has it: one untimed run first compiles it."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    args = [sys.executable, "-c", _FRESH_SCRIPT, str(base), json.dumps(QUERIES["filter"])]
    subprocess.run(args, env=env, check=True, capture_output=True)
    times = [
        _timed(lambda: subprocess.run(args, env=env, check=True, capture_output=True))[0]
        for _ in range(reps)
    ]
    return {"median": statistics.median(times), "min": min(times), "max": max(times)}


_GRAPHS: list[dict[str, Any]] = [
    {
        "op_type": "Batch",
        "batch_size": b,
        "children": [{"op_type": "GeneratorDataset", "num_parallel_workers": w, "children": []}],
    }
    for b in (16, 32, 64, 128)
    for w in (1, 2, 4, 8)
]


def synthetic_records(n: int, seed: int = 0) -> list[dict[str, Any]]:
    """``n`` flat records (as the index stores them) with ``generate``'s distributions."""
    rng = random.Random(seed)
    marks: dict[str, str] = {}
    out = []
    for i in range(n):
        graph = rng.choice(_GRAPHS)
        mark = marks.setdefault(graph_hash(graph), str(len(marks) + 1))
        out.append(
            {
                "summary_dir": f"./run{i:07d}",
                "loss_function": "CrossEntropyLoss",
                "train_dataset_path": None,
                "train_dataset_count": 60000,
                "test_dataset_path": None,
                "test_dataset_count": 10000,
                "network": "MLP",
                "optimizer": rng.choice(["Adam", "SGD", "Momentum"]),
                "learning_rate": rng.choice([0.001, 0.01, 0.02, 0.05, 0.1, 0.2]),
                "epoch": rng.randint(1, 20),
                "batch_size": rng.choice([16, 32, 64, 128]),
                "device_num": 1,
                "loss": rng.random(),
                "model_size": rng.randint(1, 10**7),
                "metric": {"Accuracy": rng.random(), "Loss": rng.random()},
                "user_defined": {"team": rng.choice("abcd"), "trial": i},
                "dataset_graph": graph,
                "update_time": float(1_700_000_000 + i),
                "dataset_mark": mark,
            }
        )
    return out


def load_postgres(index: LineageIndex, records: list[dict[str, Any]]) -> float:
    """COPY ``records`` into the (emptied) index's tables, the rows ``index_tables`` writes."""
    from trainledger.query.index_tables import custom_json, custom_types, split_value
    from trainledger.query.postgres import bind_value
    from trainledger.query.schema import VALUE_FIELDS

    conn = index.db.connection().raw  # type: ignore[attr-defined]
    start = time.perf_counter()
    conn.execute("TRUNCATE runs, records, custom, marks, unreadable, type_sets")
    run_cols = "id, summary_dir, update_time, type_set, custom_values, " + ", ".join(
        f"{f}_num, {f}_big, {f}_txt" for f in VALUE_FIELDS
    )
    marks: dict[str, int] = {}
    type_sets: dict[str, int] = {}
    with conn.transaction(), conn.cursor() as cur:
        with cur.copy(f"COPY runs ({run_cols}) FROM STDIN") as copy:
            for i, r in enumerate(records, 1):
                groups = ("metric", "user_defined")
                pairs = [(f"{g}/{k}", v) for g in groups for k, v in r[g].items()]
                marks.setdefault(graph_hash(r["dataset_graph"]), int(r["dataset_mark"]))
                types = type_sets.setdefault(custom_types(pairs), len(type_sets) + 1)
                values = [part for f in VALUE_FIELDS for part in split_value(r.get(f))]
                copy.write_row(
                    [i, r["summary_dir"], r["update_time"], types, custom_json(pairs)]
                    + [bind_value(v) for v in values]
                )
        with cur.copy("COPY type_sets (id, types) FROM STDIN") as copy:
            for type_set, number in type_sets.items():
                copy.write_row([number, type_set])
        with cur.copy("COPY records (run_id, signature, record) FROM STDIN") as copy:
            for i, r in enumerate(records, 1):
                copy.write_row([i, "copied", json.dumps(r, separators=(",", ":"))])
        with cur.copy("COPY custom (run_id, name, num, big, txt, vtype) FROM STDIN") as copy:
            for i, r in enumerate(records, 1):
                for group in ("metric", "user_defined"):
                    for key, value in r[group].items():
                        num, big, txt = split_value(value)
                        copy.write_row(
                            [i, f"{group}/{key}", bind_value(num), bind_value(big), txt]
                            + [custom_type_name(value)]
                        )
        with cur.copy("COPY marks (graph_hash, mark) FROM STDIN") as copy:
            for ghash, mark in marks.items():
                copy.write_row([ghash, mark])
        cur.execute("SELECT setval(pg_get_serial_sequence('runs', 'id'), %s)", [len(records)])
        cur.execute(
            "SELECT setval(pg_get_serial_sequence('type_sets', 'id'), %s)", [len(type_sets)]
        )
        cur.execute("UPDATE meta SET value = value + 1 WHERE key = 'generation'")
    conn.execute("VACUUM ANALYZE")  # statistics, and the visibility map for index-only scans
    return time.perf_counter() - start


def bench_postgres(url: str, n: int, reps: int, work: Path) -> dict[str, Any]:
    """Load ``n`` runs into a PostgreSQL index with COPY, then time the queries warm."""
    t = time.perf_counter()
    records = synthetic_records(n)
    out: dict[str, Any] = {"generate": time.perf_counter() - t}
    base = work / f"pg-base{n}"  # no run files: the index is loaded directly
    base.mkdir(parents=True, exist_ok=True)
    index = LineageIndex(base, index=url, name=f"bench-query-{n}")
    out["load"] = load_postgres(index, records)
    expected_records = [{**r, "added_info": {}} for r in records]
    for name in ("issue19", "issue19_user", "filter"):
        index.query(QUERIES[name], refresh=False)  # warm-up
        times, result = _checked_times(index, name, reps, expected_records, refresh=False)
        out[name] = {
            "median": statistics.median(times),
            "min": min(times),
            "max": max(times),
            "count": result["count"],
        }
    index.close()
    return out


def bench_mindinsight(python: str, base: Path, reps: int) -> dict[str, Any]:
    proc = subprocess.run(
        [python, "-c", _MI_SCRIPT, str(base), json.dumps(QUERIES), str(reps)],
        capture_output=True,
        text=True,
        check=True,
    )
    result: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000])
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--mindinsight", help="python of a MindInsight 2.3.1 venv")
    parser.add_argument("--dir", help="work directory (default: a temp dir, removed)")
    parser.add_argument("--postgres", metavar="URL", help="also time a PostgreSQL index")
    parser.add_argument("--pg-sizes", type=int, nargs="+", default=[1_000_000])
    parser.add_argument(
        "--wide", type=int, metavar="N", help="also N runs of 1,500 metrics (bench/wide_runs.py)"
    )
    parser.add_argument("--mlflow-cache", help="with --wide: the cached MLflow store's directory")
    parser.add_argument(
        "--series",
        type=int,
        metavar="N",
        help="also the series statistics over N runs (bench/series_stats.py: the indexer's "
        "reading speed, a live run's append, the warm statistics queries)",
    )
    parser.add_argument("--series-points", type=int, default=2_000_000)
    args = parser.parse_args()
    work = Path(args.dir or tempfile.mkdtemp(prefix="tl-bench-query-"))
    results: dict[int, dict[str, Any]] = {}
    mi: dict[str, Any] | None = None
    try:
        for n in args.sizes:
            base = work / f"runs{n}"
            if not base.exists():
                seconds, _ = _timed(lambda b=base, k=n: generate(b, k))
                print(f"generated {n} runs in {seconds:.1f} s", file=sys.stderr)
                # runs finished a moment ago, not this instant: past the scanner's 2 s window
                # in which a directory listing is not yet trusted
                time.sleep(2.5)
            results[n] = bench_ours(base, args.reps)
            r = results[n]
            print(
                f"N={n:>6}: cold {r['cold'] * 1e3:9.1f} ms | warm filter "
                f"{r['filter']['seconds'] * 1e3:7.1f} ms, range {r['range']['seconds'] * 1e3:7.1f}"
                f" ms, all {r['all']['seconds'] * 1e3:8.1f} ms (count {r['all']['count']}) | "
                f"reopen+filter {r['reopen_filter'] * 1e3:7.1f} ms | scan alone "
                f"{r['scan_only'] * 1e3:7.1f} ms, filter without scan "
                f"{r['sql_only_filter'] * 1e3:6.1f} ms | watched: {r['watched']}"
            )
            print(f"         warm filter, a new condition: {r['new_filter'] * 1e3:7.1f} ms")
            fp = r["fresh_process"]
            print(
                f"         fresh process (start to answer, filter): {fp['median'] * 1e3:7.1f} ms "
                f"[{fp['min'] * 1e3:.0f}-{fp['max'] * 1e3:.0f}]"
            )
            print(
                f"         issue-19 queries, warm: {r['issue19']['seconds'] * 1e3:7.1f} ms, "
                f"with user_defined/: {r['issue19_user']['seconds'] * 1e3:7.1f} ms"
            )
            if args.mindinsight and n == 1000:
                mi = bench_mindinsight(args.mindinsight, base, max(1, args.reps // 2))
                print(
                    "MindInsight 2.3.1, N=1000: "
                    + ", ".join(
                        f"{k} {v['seconds'] * 1e3:.0f} ms (count {v['count']})"
                        for k, v in mi.items()
                    )
                )
        if mi is not None:
            mi_filter = mi["filter"]["seconds"]
            for n, r in results.items():
                print(
                    f"ratios vs MindInsight@1k filter ({mi_filter * 1e3:.0f} ms), N={n}: "
                    f"warm filter x{mi_filter / r['filter']['seconds']:.0f} faster "
                    f"(best-of: x{mi['filter']['best'] / r['filter']['best']:.0f}), "
                    f"cold = {r['cold'] / mi_filter:.2f}x MindInsight's query, "
                    f"warm all x{mi['all']['seconds'] / r['all']['seconds']:.1f} faster"
                )
                for q in ("issue19", "issue19_user"):
                    print(
                        f"  {q}, N={n}: MindInsight@1k {mi[q]['seconds'] * 1e3:.0f} ms, ours "
                        f"{r[q]['seconds'] * 1e3:.1f} ms: x{mi[q]['seconds'] / r[q]['seconds']:.0f}"
                    )
        pg: dict[int, dict[str, Any]] = {}
        for n in args.pg_sizes if args.postgres else []:
            pg[n] = r = bench_postgres(args.postgres, n, args.reps, work)
            print(
                f"PostgreSQL N={n}: generated {r['generate']:.0f} s, COPY + VACUUM ANALYZE "
                f"{r['load']:.0f} s | warm (median [min-max] of {args.reps}): "
                + ", ".join(
                    f"{q} {r[q]['median'] * 1e3:.0f} ms [{r[q]['min'] * 1e3:.0f}-"
                    f"{r[q]['max'] * 1e3:.0f}] (count {r[q]['count']})"
                    for q in ("issue19", "issue19_user", "filter")
                )
            )
        print(
            json.dumps(
                {"trainledger": results, "mindinsight_1k": mi, "postgresql": pg}, default=str
            )
        )
        if args.wide:
            sys.path.insert(0, str(Path(__file__).resolve().parent))
            import wide_runs

            wide_runs.run(args.wide, args.reps, work, args.mlflow_cache)
        if args.series:
            sys.path.insert(0, str(Path(__file__).resolve().parent))
            import series_stats

            series_stats.bench_read(work / "series-read", args.series_points, args.reps)
            series_stats.bench_append(work / "series-append", args.series, 1000, args.reps)
    finally:
        if not args.dir:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
