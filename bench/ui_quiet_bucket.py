"""A running UI over a bucket where nothing changes (issue 50): requests per refresh period.

A base of ``--runs`` runs written through trainledger's own writer (``UploadMirror``, which
records its changes) in a local moto server; then the UI's refresh loop
(``cli.locations.keep_fresh``, as ``trainledger ui s3://...`` runs it, every
``TRAINLEDGER_OBJECT_MAX_AGE`` seconds) for ``--minutes``. Requests are counted in moto's log:
the copy's first sync apart, the loop should ask one LIST of records a period. No peer: the
figure is a count against the issue's bound (at most one request a refresh period).

    .venv/bin/python bench/ui_quiet_bucket.py [--runs 100] [--minutes 10] [--period 5]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # (for tests.s3_server)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--period", type=float, default=5.0)
    args = parser.parse_args()
    from tests.s3_server import start_moto, stop_moto

    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        server, env = start_moto(work)
        os.environ.update(env, TRAINLEDGER_CACHE_DIR=str(work / "cache"))
        try:
            run(args, work, work / "moto.log")
        finally:
            stop_moto(server)


def run(args: argparse.Namespace, work: Path, log: Path) -> None:
    import boto3

    from trainledger.cli.locations import keep_fresh
    from trainledger.storage.mirror import UploadMirror
    from trainledger.storage.objects import ObjectLocation

    boto3.client("s3").create_bucket(Bucket="quiet")
    for i in range(args.runs):
        local = work / "staged" / f"r{i}"
        local.mkdir(parents=True)
        (local / "events.summary.1.h.1.0_lineage").write_bytes(b"x" * 100)
        UploadMirror(local, ObjectLocation("quiet", f"team/r{i}"), interval=0).sync()
    start = log.stat().st_size
    stop = keep_fresh("s3://quiet/team", args.period)
    began = time.monotonic()
    time.sleep(args.minutes * 60)
    stop.set()
    elapsed = time.monotonic() - began
    time.sleep(0.5)
    with open(log, "rb") as fh:
        fh.seek(start)
        lines = [line for line in fh if b"HTTP/1.1" in line]
    records = sum(
        b"prefix=.trainledger%2Fchanges%2Fr%2F" in line or b"prefix=.trainledger/changes/r/" in line
        for line in lines
    )
    periods = int(elapsed / args.period)
    print(
        f"{args.runs} runs, the UI's refresh every {args.period} s for {elapsed:.0f} s "
        f"({periods} periods)"
    )
    print(
        f"requests: {len(lines)} in all; {records} LISTs of records; "
        f"{len(lines) - records} for the copy's first sync"
    )
    print(f"requests per period after the first sync: {records / max(1, periods):.2f}")


if __name__ == "__main__":
    main()
