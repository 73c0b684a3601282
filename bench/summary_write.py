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


def _best(fn: Callable[[], object], rounds: int, setup: Callable[[], None] | None = None) -> float:
    best = float("inf")
    for _ in range(rounds):
        if setup is not None:
            setup()
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


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
        times: dict[str, float] = {}
        for name, fn in writers.items():
            target = root / name

            def reset(target: Path = target) -> None:
                shutil.rmtree(target, ignore_errors=True)

            times[name] = _best(lambda fn=fn, target=target: fn(target, values), args.rounds, reset)
        print(f"write {args.n} scalars (closed + fsynced), best of {args.rounds}:")
        for name, t in times.items():
            print(f"  {name:26s} {t:8.3f} s  {args.n / t:12,.0f} events/s")
        ours = times["trainledger"]
        torch_ratio = times["torch.utils.tensorboard"] / ours
        print(f"  ratio vs torch.utils.tensorboard: {torch_ratio:.1f}x faster")
        print(f"  ratio vs tensorboardX:            {times['tensorboardX'] / ours:.1f}x faster")

        src = root / "trainledger"
        assert read_ours(src) == args.n and read_tensorboard(src) == args.n
        t_ours = _best(lambda: read_ours(src), args.rounds)
        t_tb = _best(lambda: read_tensorboard(src), args.rounds)
        print(f"read the {args.n}-scalar file, best of {args.rounds}:")
        print(
            f"  {'trainledger read_scalars':26s} {t_ours:8.3f} s  {args.n / t_ours:12,.0f} events/s"
        )
        print(f"  {'EventAccumulator':26s} {t_tb:8.3f} s  {args.n / t_tb:12,.0f} events/s")
        print(f"  ratio vs EventAccumulator: {t_tb / t_ours:.1f}x faster")
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
