"""A first query over an ``s3://`` base (issue 34 item 1): what it downloads, and how long it
takes, when the index's copy leaves event files their series sidecars describe in the store.

A base of ``--runs`` runs, each a lineage file (``bench/query.py``'s generator) and
``--points`` points of ``loss`` written by trainledger's ``SummaryRecord`` (so with its
series sidecar), is uploaded to a local S3 server (moto's, as the tests start it: its own
process, on 127.0.0.1).
Then, in alternating rounds, each with empty cache directories:

- ours: ``filter_summary_lineage(url, {"min(loss)": {"lt": 0.5}})``, through the index's
  own copy (``query/object_copy.py``: event files covered by sidecars stay in the store);
- the peer (how it was done before, and how the UI still reads a base): the download cache
  (``storage.readable_dir``: every file but checkpoints), then the same query over it.

It prints bytes written to disk by each (files' allocated blocks), seconds per round as
medians with their range, and the ratio peer / ours. The figures are of a store with no
network latency, sharing this machine's cores; a real store adds a round trip per object
to both (downloads run 16 at a time), and one per event file to the peer only.

    .venv/bin/python bench/object_query.py [--runs 200] [--points 5000] [--rounds 5]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(1, str(Path(__file__).resolve().parents[1]))  # (for tests.s3_server)
from query import generate  # noqa: E402 (the sibling bench module)

CONDITION = {"min(loss)": {"lt": 0.5}}


def make_base(base: Path, runs: int, points: int) -> None:
    """``runs`` lineage runs with ``points`` points of ``loss`` each, with their sidecars."""
    import numpy as np

    from trainledger.summary import SummaryRecord

    generate(base, runs)
    rng = np.random.default_rng(0)
    for run in sorted(base.iterdir()):
        values = rng.random(points)
        with SummaryRecord(run) as record:
            for step in range(points):
                record.add_scalar("loss", float(values[step]), step)


def upload(base: Path, bucket: str, prefix: str) -> int:
    """Every file of ``base`` under ``s3://bucket/prefix``; returns the bytes sent."""
    import boto3

    client = boto3.client("s3")
    sent = 0
    for path in sorted(p for p in base.rglob("*") if p.is_file()):
        client.upload_file(str(path), bucket, f"{prefix}/{path.relative_to(base).as_posix()}")
        sent += path.stat().st_size
    return sent


def on_disk(folder: str) -> int:
    """Bytes of disk the files under ``folder`` take (a stand-in takes none)."""
    return sum(p.stat().st_blocks * 512 for p in Path(folder).rglob("*") if p.is_file())


def ours(url: str) -> dict[str, Any]:
    from trainledger.query import filter_summary_lineage

    return filter_summary_lineage(url, CONDITION)


def peer(url: str) -> dict[str, Any]:
    from trainledger.query import filter_summary_lineage
    from trainledger.storage import readable_dir

    return filter_summary_lineage(readable_dir(url), CONDITION)


def round_of(fn: Callable[[str], dict[str, Any]], url: str, work: Path) -> tuple[float, int, int]:
    """(seconds, bytes on disk, runs matched) of ``fn`` with fresh, empty caches."""
    from trainledger.query import lineage_api

    cache = Path(tempfile.mkdtemp(dir=work))
    os.environ["TRAINLEDGER_CACHE_DIR"] = str(cache)
    lineage_api._indexes.clear()  # (a new process would have none)
    start = time.perf_counter()
    answer = fn(url)
    seconds = time.perf_counter() - start
    return seconds, on_disk(str(cache)), answer["count"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--points", type=int, default=5000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    from tests.s3_server import start_moto, stop_moto  # (the tests' server, as they start it)

    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        server, env = start_moto(work)
        os.environ.update(env, TRAINLEDGER_WATCH="0")
        try:
            import boto3

            boto3.client("s3").create_bucket(Bucket="bench")
            make_base(work / "base", args.runs, args.points)
            sent = upload(work / "base", "bench", "team/runs")
            mib = sent / 2**20
            print(f"{args.runs} runs of {args.points:,} points, {mib:.1f} MiB in the store")
            report(run_rounds("s3://bench/team/runs", work, args.rounds))
        finally:
            stop_moto(server)


def run_rounds(url: str, work: Path, rounds: int) -> dict[str, list[tuple[float, int, int]]]:
    out: dict[str, list[tuple[float, int, int]]] = {"ours": [], "peer": []}
    for k in range(rounds):
        order = [("ours", ours), ("peer", peer)] if k % 2 == 0 else [("peer", peer), ("ours", ours)]
        for name, fn in order:
            out[name].append(round_of(fn, url, work))
    return out


def report(found: dict[str, list[tuple[float, int, int]]]) -> None:
    counts = {r[2] for rs in found.values() for r in rs}
    assert len(counts) == 1, counts  # (both answer the same)
    for name, rs in found.items():
        times = [r[0] for r in rs]
        mib = statistics.median(r[1] for r in rs) / 2**20
        print(
            f"{name}: first query {statistics.median(times):.2f} s "
            f"[{min(times):.2f}-{max(times):.2f}], {mib:.1f} MiB on disk, {rs[0][2]} runs match"
        )
    ratios = [p[0] / o[0] for o, p in zip(found["ours"], found["peer"], strict=True)]
    print(
        f"ratio peer / ours (time): median {statistics.median(ratios):.2f} "
        f"[{min(ratios):.2f}-{max(ratios):.2f}]"
    )


if __name__ == "__main__":
    main()
