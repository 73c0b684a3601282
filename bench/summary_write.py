"""Writing and reading 100k scalars: trainledger vs torch.utils.tensorboard vs tensorboardX.

Write: ``N`` calls of ``add_scalar(tag, value, step)``, then close; every writer's files are
fsynced before the clock stops (ours does it in ``close()``; for the others the bench fsyncs
the files they wrote), so all three pay for durability. Read: the same ``N``-scalar file read
by ``trainledger.summary.read_scalars`` and by TensorBoard's ``EventAccumulator`` (keeping
every scalar: ``size_guidance={SCALARS: 0}``). One process run; each measurement is the best
of ``--rounds`` to damp machine noise. Targets: write >= 5x torch, read >= 5x EventAccumulator.

    .venv/bin/python bench/summary_write.py [--n 100000] [--rounds 3]
"""

from __future__ import annotations

import argparse
import functools
import math
import os
import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path


def _fsync_tree(log_dir: Path) -> None:
    for path in log_dir.rglob("*tfevents*"):
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def _values(n: int) -> list[float]:
    return [math.sin(i / 100.0) for i in range(n)]


def write_ours(log_dir: Path, values: list[float]) -> None:
    from trainledger.summary import SummaryRecord

    with SummaryRecord(log_dir) as rec:
        add = rec.add_scalar
        for step, value in enumerate(values):
            add("loss", value, step)


def write_torch(log_dir: Path, values: list[float]) -> None:
    from torch.utils.tensorboard import SummaryWriter

    writer = SummaryWriter(str(log_dir))
    for step, value in enumerate(values):
        writer.add_scalar("loss", value, step)
    writer.close()
    _fsync_tree(log_dir)


def write_tbx(log_dir: Path, values: list[float]) -> None:
    from tensorboardX import SummaryWriter

    writer = SummaryWriter(str(log_dir))
    for step, value in enumerate(values):
        writer.add_scalar("loss", value, step)
    writer.close()
    _fsync_tree(log_dir)


def read_ours(log_dir: Path) -> int:
    from trainledger.summary import read_scalars

    return len(read_scalars(log_dir)["loss"][0])


def read_tensorboard(log_dir: Path) -> int:
    from tensorboard.backend.event_processing import event_accumulator as ea

    acc = ea.EventAccumulator(str(log_dir), size_guidance={ea.SCALARS: 0})
    acc.Reload()
    return len(acc.Scalars("loss"))


def _best(
    fn: Callable[[], object], rounds: int, setup: Callable[[], None] | None = None
) -> tuple[float, float]:
    """Best wall time and best process CPU time (all threads) over ``rounds``.

    CPU time is reported too because the machine may be shared: it is what the work costs,
    whatever else runs; wall time is what a user waits for.
    """
    best_wall = best_cpu = float("inf")
    for _ in range(rounds):
        if setup is not None:
            setup()
        wall, cpu = time.perf_counter(), time.process_time()
        fn()
        best_cpu = min(best_cpu, time.process_time() - cpu)
        best_wall = min(best_wall, time.perf_counter() - wall)
    return best_wall, best_cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    values = _values(args.n)
    # Import everything first: import time is not writing time.
    import tensorboard.backend.event_processing.event_accumulator  # noqa: F401
    import tensorboardX  # noqa: F401
    import torch.utils.tensorboard  # noqa: F401

    import trainledger.summary.reader  # noqa: F401
    import trainledger.summary.record  # noqa: F401

    root = Path(tempfile.mkdtemp(prefix="tl-bench-summary-"))
    try:
        writers = {
            "trainledger": write_ours,
            "torch.utils.tensorboard": write_torch,
            "tensorboardX": write_tbx,
        }
        times: dict[str, tuple[float, float]] = {}
        for name, fn in writers.items():
            target = root / name

            def reset(target: Path = target) -> None:
                shutil.rmtree(target, ignore_errors=True)

            times[name] = _best(functools.partial(fn, target, values), args.rounds, reset)
        n = args.n
        print(f"write {n} scalars (closed + fsynced), best of {args.rounds}:")
        print(f"  {'':26s} {'wall s':>8} {'events/s':>12} {'CPU s':>8}")
        for name, (wall, cpu) in times.items():
            print(f"  {name:26s} {wall:8.3f} {n / wall:12,.0f} {cpu:8.3f}")
        ours = times["trainledger"]
        for peer in ("torch.utils.tensorboard", "tensorboardX"):
            wall, cpu = times[peer]
            faster, less = wall / ours[0], cpu / ours[1]
            print(f"  vs {peer:23s} {faster:5.1f}x faster (wall), {less:5.1f}x less CPU")

        src = root / "trainledger"
        assert read_ours(src) == n and read_tensorboard(src) == n
        r_ours = _best(lambda: read_ours(src), args.rounds)
        r_tb = _best(lambda: read_tensorboard(src), args.rounds)
        print(f"read the {n}-scalar file, best of {args.rounds}:")
        for name, (wall, cpu) in (("trainledger read_scalars", r_ours), ("EventAccumulator", r_tb)):
            print(f"  {name:26s} {wall:8.3f} {n / wall:12,.0f} {cpu:8.3f}")
        faster, less = r_tb[0] / r_ours[0], r_tb[1] / r_ours[1]
        print(f"  vs EventAccumulator        {faster:5.1f}x faster (wall), {less:5.1f}x less CPU")
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
