"""Queries over a local base right after a process's first answer (issue 50 item 6).

A base of ``--runs`` lineage runs (``bench/query.py``'s generator) is indexed once. Then, in
alternating rounds, a new process makes its first query and then queries again every 50 ms
for 3 s; the figures are the queries from 0.5 s after its first answer on:

- ours: the default (the base watcher starts at the first query and, once trusted, the index
  proves itself fresh on the watcher's thread);
- the peer: ``TRAINLEDGER_WATCH=0`` (every query checks the saved scan state: what a process
  paid before its watcher was trusted, about 4 s at 10,000 runs).

    .venv/bin/python bench/after_first_answer.py [--runs 10000] [--rounds 3]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from query import generate  # noqa: E402 (the sibling bench module)

CHILD = r"""
import json, sys, time
from trainledger.query import filter_summary_lineage
base = sys.argv[1]
cond = {"learning_rate": {"gt": 0.05}, "sorted_name": "metric/accuracy", "limit": 10}
t0 = time.perf_counter(); filter_summary_lineage(base, cond); first = time.perf_counter()
later = []
while time.perf_counter() - first < 3.0:
    time.sleep(0.05)
    t = time.perf_counter(); filter_summary_lineage(base, cond)
    later.append((t - first, time.perf_counter() - t))
print(json.dumps({"first": first - t0, "later": later}))
"""


def child(base: Path, watch: bool) -> dict[str, Any]:
    env = {**os.environ, "TRAINLEDGER_WATCH": "1" if watch else "0"}
    env["PYTHONPATH"] = str(Path(__file__).resolve().parents[1] / "src")
    done = subprocess.run(
        [sys.executable, "-W", "ignore", "-c", CHILD, str(base)],
        env=env,
        capture_output=True,
        text=True,
        check=True,
        timeout=600,
    )
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp) / "base"
        generate(base, args.runs)
        child(base, False)  # the index, built once
        found: dict[str, list[float]] = {"ours": [], "peer": []}
        firsts: dict[str, list[float]] = {"ours": [], "peer": []}
        for k in range(args.rounds):
            order = [("ours", True), ("peer", False)]
            for name, watch in order if k % 2 == 0 else order[::-1]:
                got = child(base, watch)
                firsts[name].append(float(got["first"]))
                found[name] += [s for at, s in got["later"] if at >= 0.5]
        print(f"{args.runs} runs; queries from 0.5 s to 3 s after a process's first answer")
        for name, values in found.items():
            ms = sorted(v * 1000 for v in values)
            p95 = ms[int(0.95 * (len(ms) - 1))]
            print(
                f"{name}: median {statistics.median(ms):.2f} ms, p95 {p95:.2f} ms, max "
                f"{ms[-1]:.2f} ms over {len(ms)} queries; first answer "
                f"{statistics.median(firsts[name]):.3f} s"
            )
        ratio = statistics.median(found["peer"]) / statistics.median(found["ours"])
        print(f"ratio peer / ours (median): {ratio:.1f}")


if __name__ == "__main__":
    main()
