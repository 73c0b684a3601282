"""Queries over an ``s3://`` base that cost what changed (issue 50): latency and requests,
counted at the server, per case, with the counts projected to 100,000 runs.

A base of ``--runs`` runs of five objects each (a lineage file from ``bench/query.py``'s
generator, an event file and its series sidecar written by trainledger's ``SummaryRecord``,
and two checkpoints) is **put straight into a local moto server** with boto3 and 64 threads.
With ``--writers records`` (the default) each object is followed by the change record
trainledger's writers write (``ChangeRecorder``, one per thread, as 64 writer processes),
and one compaction (``compaction.compact``) ends it, as a writer's final pass does: a new
reader answers from that snapshot, and its safety listing runs after the answer (timed
apart). With ``--writers none`` nothing is recorded, as from ``aws s3 cp``: the first sync
lists the prefix before it answers. One run is then changed through trainledger's own writer
(``UploadMirror``, which records its changes).
Cases, each timed in the one process run, requests counted in moto's log:

- first query of a new reader (``filter_summary_lineage``, SQLite index copy), against two
  peers in alternating rounds: boto3 fetching, with 64 threads, the objects a lineage query
  needs and ours downloads (each run's lineage file and series sidecar; the event files stay
  in the store as stand-ins, the checkpoints are never read), given their keys; and a boto3
  script that starts, as our reader does, from the base's URL: it lists the prefix, then
  fetches those objects;
- a query when nothing changed (the copy's refresh forced: ``READ_MAX_AGE`` = 0), against the
  same query over a local copy of the base, once the setup's records are older than the
  trailing window (30 s; within it a refresh lists them again, one LIST per 1,000), and the
  one LIST it costs made alone by boto3 in turn with it (the bound: twice the local query
  plus that request);
- a query after one run gained a point (its event file and sidecar re-sent).

With ``--postgres URL`` (an empty database) the same base is then queried with the index on
PostgreSQL: this process's first query (it syncs and stamps the shared index), a query where
nothing changed, and another process's query within the staleness bound (it answers from the
shared index: no request to the bucket, no copy of its own).

    .venv/bin/python bench/object_refresh.py [--runs 1000] [--rounds 3] [--postgres URL]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(1, str(Path(__file__).resolve().parents[1]))  # (for tests.s3_server)
from query import generate  # noqa: E402 (the sibling bench module)

CONDITION = {"learning_rate": {"gt": 0.05}, "sorted_name": "metric/accuracy", "limit": 10}


def make_base(base: Path, runs: int) -> None:
    from trainledger.summary import SummaryRecord

    generate(base, runs)
    for i, run in enumerate(sorted(base.iterdir())):
        with SummaryRecord(run) as record:
            for step in range(1, 6):
                record.add_scalar("loss", 1.0 / (step + i % 7), step)
        (run / "m-1_5.ckpt").write_bytes(b"w" * 1000)
        (run / "m-1_10.ckpt").write_bytes(b"w" * 1000)


def put_all(base: Path, bucket: str, prefix: str, record: bool) -> list[str]:
    """Every file under ``base`` put with boto3, 64 threads; with ``record`` each followed by
    its change record (a ``ChangeRecorder`` per thread), then one compaction."""
    import threading

    import boto3

    from trainledger.storage import ObjectInfo, ObjectLocation, ObjectStore, compaction
    from trainledger.storage.change_log import ChangeRecorder

    client, store, mine = boto3.client("s3"), ObjectStore(), threading.local()
    files = sorted(p for p in base.rglob("*") if p.is_file())
    keys = [f"{prefix}/{p.relative_to(base).as_posix()}" for p in files]

    def put(path: Path, key: str) -> None:
        answer = client.put_object(Bucket=bucket, Key=key, Body=path.read_bytes())
        if record:
            if not hasattr(mine, "recorder"):
                mine.recorder = ChangeRecorder(store, bucket)
            info = ObjectInfo(path.stat().st_size, answer["ETag"].strip('"'))
            mine.recorder.record(ObjectLocation(bucket, key), info)

    with ThreadPoolExecutor(64) as pool:
        list(pool.map(put, files, keys))
    if record:
        compaction.compact(store, bucket, "bench.0")
    return keys


def fetch_all(bucket: str, keys: list[str], into: Path) -> float:
    """The peer: boto3 GETs of ``keys`` with 64 threads; seconds."""
    import boto3

    start = time.perf_counter()
    _get_all(boto3.client("s3"), bucket, keys, into)
    return time.perf_counter() - start


def _get_all(client: Any, bucket: str, keys: list[str], into: Path) -> None:
    """GET ``keys`` into files under ``into``, 64 at a time."""

    def get(key: str) -> None:
        body = client.get_object(Bucket=bucket, Key=key)["Body"].read()
        (into / key.replace("/", "_")).write_bytes(body)

    with ThreadPoolExecutor(64) as pool:
        list(pool.map(get, keys))


def list_and_fetch(bucket: str, prefix: str, into: Path) -> float:
    """The peer as a boto3 script starting, as our reader does, from the base's URL: list the
    prefix (boto3's paginator, 1,000 keys a page), then GET the lineage objects and sidecars
    with 64 threads; seconds."""
    import boto3

    client = boto3.client("s3")
    start = time.perf_counter()
    keys = [
        item["Key"]
        for page in client.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix)
        for item in page.get("Contents", [])
    ]
    _get_all(client, bucket, [k for k in keys if _is_lineage_object(k)], into)
    return time.perf_counter() - start


def _one_records_list(bucket: str) -> float:
    """Seconds boto3 takes for the LIST a quiet refresh makes: the change records from the
    trailing window before now (none there once the setup is older than it)."""
    import boto3

    from trainledger.storage.change_log import RECORDS_PREFIX, window_ms

    client = boto3.client("s3")
    after = f"{RECORDS_PREFIX}{int(time.time() * 1000) - window_ms():013d}~"
    start = time.perf_counter()
    client.list_objects_v2(Bucket=bucket, Prefix=RECORDS_PREFIX, StartAfter=after, MaxKeys=1000)
    return time.perf_counter() - start


def _is_lineage_object(key: str) -> bool:
    """A run's lineage file or series sidecar: what the first query downloads."""
    name = key.rsplit("/", 1)[1]
    return "lineage" in name or name.endswith(".json")


def requests_in(log: Path, start: int) -> int:
    time.sleep(0.2)
    with open(log, "rb") as fh:
        fh.seek(start)
        return sum(1 for line in fh if b'HTTP/1.1"' in line)


def timed(fn: Any, log: Path) -> tuple[float, int]:
    start = log.stat().st_size
    began = time.perf_counter()
    fn()
    return time.perf_counter() - began, requests_in(log, start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--postgres", default=None, metavar="URL")
    parser.add_argument("--writers", choices=("records", "none"), default="records")
    args = parser.parse_args()
    from tests.s3_server import start_moto, stop_moto

    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        server, env = start_moto(work)
        log = work / "moto.log"
        os.environ.update(env, TRAINLEDGER_WATCH="0")
        try:
            run_cases(args, work, log)
        finally:
            stop_moto(server)


def run_cases(args: argparse.Namespace, work: Path, log: Path) -> None:
    import boto3

    from trainledger.query import filter_summary_lineage, lineage_api
    from trainledger.storage import locations
    from trainledger.storage.change_log import window_ms
    from trainledger.storage.deferred_listing import wait_listings
    from trainledger.storage.mirror import UploadMirror
    from trainledger.storage.objects import ObjectLocation

    boto3.client("s3").create_bucket(Bucket="bench")
    make_base(work / "base", args.runs)
    keys = put_all(work / "base", "bench", "team", args.writers == "records")
    written = time.monotonic()
    lineage_keys = [k for k in keys if _is_lineage_object(k)]
    url = "s3://bench/team"
    print(
        f"{args.runs} runs, {len(keys)} objects put straight into moto (boto3, 64 threads), "
        f"change records: {args.writers}"
    )
    firsts, peers, listing_peers, afters = [], [], [], []
    for k in range(args.rounds):
        os.environ["TRAINLEDGER_CACHE_DIR"] = str(work / f"cache{k}")
        lineage_api._indexes.clear()
        start = log.stat().st_size
        began = time.perf_counter()
        filter_summary_lineage(url, CONDITION)
        answered = time.perf_counter()
        assert wait_listings(600), "the listing after the answer did not end in 600 s"
        afters.append(time.perf_counter() - answered)
        ours = (answered - began, requests_in(log, start))
        (work / f"peer{k}").mkdir()
        peer = fetch_all("bench", lineage_keys, work / f"peer{k}")
        (work / f"listing-peer{k}").mkdir()
        listing_peers.append(list_and_fetch("bench", "team/", work / f"listing-peer{k}"))
        firsts.append(ours)
        peers.append(peer)
    locations.READ_MAX_AGE = 0.0
    time.sleep(max(0.0, window_ms() / 1000 - (time.monotonic() - written)))  # (module doc)
    quiet, one_list = [], []
    for _ in range(9):  # (alternating with the one LIST it costs, made by boto3)
        quiet.append(timed(lambda: filter_summary_lineage(url, CONDITION), log))
        one_list.append(_one_records_list("bench"))
    local_base = str(work / "base")
    filter_summary_lineage(local_base, CONDITION)
    local = [timed(lambda: filter_summary_lineage(local_base, CONDITION), log)[0] for _ in range(9)]
    staged = work / "staged"
    staged.mkdir()
    run = keys[0].split("/")[1]  # (a run of the bucket; the local base now holds an index too)
    mirror = UploadMirror(staged, ObjectLocation("bench", f"team/{run}"), interval=0)
    changed = []
    from trainledger.summary import SummaryRecord

    for i in range(5):
        with SummaryRecord(staged) as record:  # a new point: a new event file and sidecar
            record.add_scalar("loss", 0.1, 100 + i)
        mirror.sync()
        changed.append(timed(lambda: filter_summary_lineage(url, CONDITION), log))
    report(args.runs, firsts, (peers, listing_peers), quiet, (local, one_list), changed)
    if args.writers == "records":
        print(f"| the safety listing after the first answer | {_med(afters)} | | |")
    if args.postgres:
        postgres_cases(args.postgres, url, work, log)


CHILD = """
import json, sys, time
from trainledger.query import filter_summary_lineage
cond = json.loads(sys.argv[2])
t = time.perf_counter(); filter_summary_lineage(sys.argv[1], cond)
print(time.perf_counter() - t)
"""


def postgres_cases(pg: str, url: str, work: Path, log: Path) -> None:
    """The shared index's rows of the table (see the module doc)."""
    import json
    import subprocess

    from trainledger.query import filter_summary_lineage, lineage_api
    from trainledger.storage import locations
    from trainledger.storage.deferred_listing import wait_listings

    os.environ["TRAINLEDGER_INDEX_URL"] = pg
    os.environ["TRAINLEDGER_CACHE_DIR"] = str(work / "cache-pg")
    lineage_api._indexes.clear()
    first = timed(lambda: filter_summary_lineage(url, CONDITION), log)
    wait_listings(600)  # (the listing after its answer: not in the next cases' figures)
    quiet = [timed(lambda: filter_summary_lineage(url, CONDITION), log) for _ in range(5)]
    env = {**os.environ, "TRAINLEDGER_CACHE_DIR": str(work / "cache-other")}
    env["TRAINLEDGER_OBJECT_MAX_AGE"] = "60"
    env["PYTHONPATH"] = str(Path(__file__).resolve().parents[1] / "src")
    others = []
    for _ in range(3):
        filter_summary_lineage(url, CONDITION)  # (this process refreshes and stamps)
        start = log.stat().st_size
        done = subprocess.run(
            [sys.executable, "-W", "ignore", "-c", CHILD, url, json.dumps(CONDITION)],
            env=env,
            capture_output=True,
            text=True,
            check=True,
            timeout=600,
        )
        others.append((float(done.stdout.split()[-1]), requests_in(log, start)))
    locations.READ_MAX_AGE = 0.0
    print("| PostgreSQL index: case | time (median [range]) | requests at the server |")
    print("| --- | --- | --- |")
    print(f"| first query of this process (sync, index, stamp) | {_med([first[0]])} | {first[1]} |")
    q = [r for _, r in quiet]
    print(f"| query, nothing changed | {_med([t for t, _ in quiet])} | {max(q)} |")
    o = [r for _, r in others]
    print(
        f"| another process, within the bound (query time in it) | {_med([t for t, _ in others])} "
        f"| {max(o)} |"
    )


def _med(values: list[float]) -> str:
    return f"{statistics.median(values):.3f} s [{min(values):.3f}-{max(values):.3f}]"


def report(
    runs: int, firsts: Any, peers: tuple[Any, Any], quiet: Any, local: Any, changed: Any
) -> None:
    scale = 100_000 / runs
    first_req = statistics.median(r for _, r in firsts)
    print("| case | time (median [range]) | requests at the server | projected to 100,000 runs |")
    print("| --- | --- | --- | --- |")
    print(
        f"| first query of a new reader (its requests: with the listing after its answer) "
        f"| {_med([t for t, _ in firsts])} | {first_req:.0f} "
        f"| {first_req * scale:,.0f} |"
    )
    gets, listing = peers
    print(f"| peer: boto3 GETs of the lineage objects, 64 threads | {_med(gets)} | - | - |")
    print(f"| peer: boto3 lists the prefix, then those GETs | {_med(listing)} | - | - |")
    for what, times in (("GETs", gets), ("list + GETs", listing)):
        ratios = [o[0] / p for o, p in zip(firsts, times, strict=True)]
        print(
            f"| ratio first query / peer ({what}) | {statistics.median(ratios):.2f} "
            f"[{min(ratios):.2f}-{max(ratios):.2f}] | | |"
        )
    q = [r for _, r in quiet]
    print(f"| query, nothing changed | {_med([t for t, _ in quiet])} | {max(q)} | {max(q)} |")
    local, one_list = local
    print(f"| same query, local base | {_med(local)} | 0 | 0 |")
    print(f"| that one LIST alone (boto3, in turn with the query) | {_med(one_list)} | 1 | 1 |")
    c = [r for _, r in changed]
    print(
        f"| query after one run's event file and sidecar changed | {_med([t for t, _ in changed])} "
        f"| {statistics.median(c):.0f} | {statistics.median(c):.0f} |"
    )


if __name__ == "__main__":
    main()
