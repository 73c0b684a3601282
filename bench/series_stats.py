"""Series statistics in the index (issue 34 item 1): how fast the indexer reads summary files,
what a live run's append costs a query, and a warm query that filters on a statistic.

- ``read``: one run of ``--points`` scalar points in one tag, as a TensorBoard event file
  (written by trainledger's ``SummaryRecord``) and as a MindSpore ``_MS`` file (records of
  MindSpore's ``Event`` schema, framed as MindSpore frames them), each read from scratch by
  the indexer (``read_series_state``). The peer for the event file is TensorBoard's own
  ``EventAccumulator`` (every point kept), timed in alternating, paired rounds; the figure
  is points a second and the per-round ratio (peer time / our time), the files read without
  a sidecar (as TensorBoard's, MindSpore's and older ours are); apart, the first index of a
  run with the series sidecar its writer left (``summary/series_sidecar.py``), its series
  just short of an overview's threshold (a longer one is read once for its overview).
  (MindInsight's ``_MS`` reader needs its own venv: ``bench/mindspore_read.py``.)
- ``append``: a base of ``--runs`` runs (a lineage file and a 20-point event file each, each
  run's loss and accuracy curves scaled by a value of its own, as in a sweep),
  indexed; then one live run gets ``--append`` new points and ``LineageIndex.refresh()`` is
  timed (the index reads only the appended records), ``--rounds`` times.
- ``query``: warm ``max(accuracy) > 0.8``, sorted by ``min(loss)``, page of 10, over that
  base.

Targets (issue 34): reading >= 2 million points a second from event files and >= 1 million
from ``_MS`` files (measured on 10 million: ``--points 10000000``); an append of 1,000 points
to one run of a 10,000-run base re-indexed in <= 50 ms; the warm statistics query < 10 ms.

    .venv/bin/python bench/series_stats.py [--points 2000000] [--runs 10000] [--rounds 7]
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

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from query import generate, wait_for_watcher  # noqa: E402 - bench/query.py's base

from trainledger.query import LineageIndex, series_overviews  # noqa: E402
from trainledger.query.series_index import read_series_state  # noqa: E402
from trainledger.storage import frame, machine_name  # noqa: E402
from trainledger.summary.proto import mindspore_summary_pb2 as ms  # noqa: E402
from trainledger.summary.proto import summary_pb2 as pb  # noqa: E402


def _event(step: int, tag: str, value: float) -> bytes:
    summary = pb.Summary(value=[pb.Summary.Value(tag=tag, simple_value=value)])
    return frame(pb.Event(wall_time=1.7e9 + step, step=step, summary=summary).SerializeToString())


def write_tensorboard(run: Path, points: int) -> None:
    from trainledger.summary import SummaryRecord

    values = np.random.default_rng(0).random(points)
    with SummaryRecord(run) as record:
        for step in range(points):
            record.add_scalar("loss", float(values[step]), step)


def write_mindspore(run: Path, points: int) -> None:
    values = np.random.default_rng(0).random(points)
    run.mkdir(parents=True, exist_ok=True)
    with open(run / "events.out.events.summary.1700000000.0.host_MS", "wb") as fh:
        for step in range(points):
            value = ms.Summary.Value(tag="loss", scalar_value=float(values[step]))
            event = ms.Event(wall_time=1.7e9 + step, step=step, summary=ms.Summary(value=[value]))
            fh.write(frame(event.SerializeToString()))


def _timed(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def _spread(values: list[float], digits: int = 0) -> str:
    f = f",.{digits}f"
    low, mid, high = min(values), statistics.median(values), max(values)
    return f"median {mid:{f}} (range {low:{f}}-{high:{f}})"


def bench_read(work: Path, points: int, rounds: int) -> None:
    from tensorboard.backend.event_processing import event_accumulator as ea

    tb, mindspore = work / "tb", work / "ms"
    write_tensorboard(tb, points)
    write_mindspore(mindspore, points)

    def full(run: Path) -> None:  # (a file without a sidecar: TensorBoard's, older ours)
        assert read_series_state(str(run), sidecars=False).tags["loss"].count == points

    full(tb)
    full(mindspore)
    # a run whose series are shorter than an overview's threshold: its sidecar stands for a
    # read (a longer series is read once for its overview: bench/series_overview.py)
    short = work / "short"
    write_tensorboard(short, series_overviews.MIN_POINTS - 1)
    with_sidecar = read_series_state(str(short))
    assert with_sidecar.tags == read_series_state(str(short), sidecars=False).tags

    def peer() -> None:
        acc = ea.EventAccumulator(str(tb), size_guidance={ea.SCALARS: 0})
        acc.Reload()
        assert len(acc.Scalars("loss")) == points

    ours_tb, ours_ms, ratios, sidecar = [], [], [], []
    for i in range(rounds):
        if i % 2:
            theirs = _timed(peer)
            mine = _timed(lambda: full(tb))
        else:
            mine = _timed(lambda: full(tb))
            theirs = _timed(peer)
        ours_tb.append(points / mine)
        ratios.append(theirs / mine)
        ours_ms.append(points / _timed(lambda: full(mindspore)))
        sidecar.append(_timed(lambda: read_series_state(str(short))) * 1000)
    print(f"read, {points:,} points, {rounds} rounds")
    print(f"  event file, ours: {_spread(ours_tb)} points/s")
    print(f"  event file, EventAccumulator time / ours: median {statistics.median(ratios):.1f}x "
          f"(range {min(ratios):.1f}-{max(ratios):.1f})")  # fmt: skip
    print(f"  _MS file, ours: {_spread(ours_ms)} points/s")
    print(f"  a {series_overviews.MIN_POINTS - 1:,}-point event file with trainledger's "
          f"sidecar (first index, nothing read): {_spread(sidecar, 2)} ms")  # fmt: skip


def bench_append(work: Path, runs: int, append: int, rounds: int) -> None:
    base = work / "base"
    generate(base, runs)
    # the finished runs' event files are named after an exited writer, as the lineage files
    final = next(iter(base.iterdir())).glob("*_lineage").__next__().name.split(".")[-2]
    for i, run in enumerate(sorted(base.iterdir())):
        name = f"events.out.tfevents.1700000000.{machine_name()}.{final}.{i}"
        spread = (i * 7919 % 10007) / 10007  # a sweep: each run's curves its own
        points = [_event(s, "loss", (0.5 + spread) / (s + 1)) for s in range(20)]
        points += [_event(s, "accuracy", (0.85 + 0.15 * spread) * s / 19) for s in range(20)]
        (run / name).write_bytes(b"".join(points))
    live = sorted(base.iterdir())[runs // 2]
    # (started after the finished files: later in writing order, as a live writer is; a file
    # ordered before one already read would be read again from the start, series_index.py)
    live_file = live / f"events.out.tfevents.1700000100.{machine_name()}.{os.getpid()}.0"
    live_file.write_bytes(_event(0, "loss", 1.0))
    start = time.perf_counter()
    with LineageIndex(base) as index:
        index.refresh()
        print(f"append, a base of {runs:,} runs: first index {time.perf_counter() - start:.1f} s")
        time.sleep(2.5)  # a base written a while ago: its listings are trusted (discovery.py)
        index.refresh()
        wait_for_watcher(index)  # a long-lived reader (the UI), as bench/query.py
        step = 1
        times = []
        for _ in range(rounds):
            with open(live_file, "ab") as fh:
                new = [_event(step + k, "loss", 1.0 / (step + k)) for k in range(append)]
                fh.write(b"".join(new))
            step += append
            time.sleep(0.3)  # the kernel's notification arrives (docs/queries.md: <= 250 ms)
            start = time.perf_counter()
            stats = index.refresh()
            times.append((time.perf_counter() - start) * 1000)
            assert stats.series == 1, stats
        answer = index.query({"summary_dir": {"eq": f"./{live.name}"}}, series=["count(loss)"])
        got = answer["object"][0]["series"]["count(loss)"]
        assert got == 20 + step, (got, step)  # (its 20 first points, then those appended)
        print(f"  refresh after {append:,} points appended to one run: {_spread(times, 1)} ms")
        for label, cond in (
            ("max(accuracy) > 0.8, page of 10", {"max(accuracy)": {"gt": 0.8}, "limit": 10}),
            ("the same, sorted by min(loss)", {"max(accuracy)": {"gt": 0.8},
                                               "sorted_name": "min(loss)", "limit": 10}),
            ("the same, sorted by max(accuracy) descending", {
                "max(accuracy)": {"gt": 0.8}, "sorted_name": "max(accuracy)",
                "sorted_type": "descending", "limit": 10}),
            ("no condition, page of 10 (for scale)", {"limit": 10}),
        ):  # fmt: skip
            index.query(cond)
            warm = []
            for _ in range(rounds):
                start = time.perf_counter()
                result = index.query(cond)
                warm.append((time.perf_counter() - start) * 1000)
            assert result["count"] == runs, result["count"]  # (every run passed 0.85)
            print(f"  warm query {label}: {_spread(warm, 1)} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--points", type=int, default=2_000_000)
    parser.add_argument("--runs", type=int, default=10_000)
    parser.add_argument("--append", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument(
        "--parts", nargs="+", choices=["read", "append"], default=["read", "append"]
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        if "read" in args.parts:
            bench_read(Path(tmp), args.points, args.rounds)
        if "append" in args.parts:
            bench_append(Path(tmp), args.runs, args.append, args.rounds)


if __name__ == "__main__":
    main()
