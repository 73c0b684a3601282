"""Reading TensorBoard scalars: ``trainledger.summary.read_scalars`` vs TensorBoard's own
``EventAccumulator`` (every point kept: ``size_guidance={SCALARS: 0}``), on the same files.

Files: ``--n`` steps of ``--tags`` scalar tags, written (1) by trainledger's ``SummaryRecord``
and (2) by ``torch.utils.tensorboard.SummaryWriter`` (TensorBoard's own format as most users
have it). Each round reads each file with both readers, alternating which goes first, so the
machine's noise hits both alike; the figure is the per-round ratio (peer time / our time),
reported as the median and the range over ``--rounds``. Both answers are checked equal.
Target (issue 14): a median of at least 20x over 5 runs of this script, none under 15x.

    .venv/bin/python bench/scalar_read.py [--n 100000] [--tags 4] [--rounds 9]
"""

from __future__ import annotations

import argparse
import functools
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np


def write_files(root: Path, n: int, tags: int) -> dict[str, Path]:
    from torch.utils.tensorboard import SummaryWriter

    from trainledger.summary import SummaryRecord

    names = [f"train/metric{i}" for i in range(tags)]
    rng = np.random.default_rng(0)
    values = rng.random((n, tags)).astype(np.float32)
    ours, torch_dir = root / "trainledger", root / "torch"
    with SummaryRecord(ours) as record:
        for step in range(n):
            for k, name in enumerate(names):
                record.add_scalar(name, float(values[step, k]), step)
    writer = SummaryWriter(str(torch_dir))
    for step in range(n):
        for k, name in enumerate(names):
            writer.add_scalar(name, float(values[step, k]), step)
    writer.close()
    return {"written by trainledger": ours, "written by torch.utils.tensorboard": torch_dir}


def read_ours(run: Path) -> dict[str, np.ndarray]:
    from trainledger.summary import read_scalars

    return {tag: series[2] for tag, series in read_scalars(run).items()}


def read_peer(run: Path) -> dict[str, np.ndarray]:
    from tensorboard.backend.event_processing import event_accumulator as ea

    acc = ea.EventAccumulator(str(run), size_guidance={ea.SCALARS: 0})
    acc.Reload()
    return {tag: np.array([e.value for e in acc.Scalars(tag)]) for tag in acc.Tags()["scalars"]}


def _timed(fn: Callable[[], object]) -> tuple[float, object]:
    start = time.perf_counter()
    value = fn()
    return time.perf_counter() - start, value


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--tags", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=9)
    args = parser.parse_args()
    import tensorboard.backend.event_processing.event_accumulator  # noqa: F401 - not timed

    import trainledger.summary.reader  # noqa: F401

    root = Path(tempfile.mkdtemp(prefix="tl-bench-scalar-read-"))
    try:
        files = write_files(root, args.n, args.tags)
        points = args.n * args.tags
        print(f"{points:,} scalars ({args.tags} tags x {args.n:,} steps), {args.rounds} rounds")
        for label, run in files.items():
            ratios, ours_t, peer_t = [], [], []
            for i in range(args.rounds):
                order = [("ours", read_ours), ("peer", read_peer)]
                got = {}
                for name, fn in order if i % 2 == 0 else order[::-1]:
                    got[name] = _timed(functools.partial(fn, run))
                (t_ours, a), (t_peer, b) = got["ours"], got["peer"]
                assert isinstance(a, dict) and isinstance(b, dict)
                assert a.keys() == b.keys(), "the two readers found different tags"
                assert all(np.array_equal(a[k], b[k]) for k in a), "the two readers disagree"
                ratios.append(t_peer / t_ours)
                ours_t.append(t_ours)
                peer_t.append(t_peer)
            print(
                f"  {label:36s} ours {statistics.median(ours_t):.3f} s "
                f"({points / statistics.median(ours_t):,.0f}/s), EventAccumulator "
                f"{statistics.median(peer_t):.3f} s: x{statistics.median(ratios):.1f} "
                f"(range x{min(ratios):.1f}-x{max(ratios):.1f})"
            )
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
