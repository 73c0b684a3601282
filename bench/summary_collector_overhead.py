"""Per-step cost of ``SummaryCollector(collect_freq=1)`` (loss + learning-rate scalars).

The small MLP and batches of ``bench/train_overhead.py`` (64-128-10, batch 64), trained with
``Model.train`` without callbacks and with a SummaryCollector collecting at every step only
``collect_metric`` (the loss and learning-rate scalars; no histograms, graph or lineage), in
one process, rounds interleaved so machine noise hits both alike. Each collector round writes
a fresh directory and includes closing (fsync) the event file. Prints the slowdown in wall
time and in process CPU time (all threads: the writer thread counts), from the best rounds
(noise from other work only adds time) and from the medians; target under 5%. torch runs on
one intra-op thread by default (``--threads``) so its spinning workers do not turn load into
noise. Run with stdout not a terminal (``| cat``), or Model adds a progress bar to both.

    .venv/bin/python bench/summary_collector_overhead.py [--steps 2000] [--rounds 5] | cat
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import torch
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parent))
from train_overhead import make  # noqa: E402  the same MLP as the training-loop benchmark

from trainledger.callbacks.summary_collector import SummaryCollector  # noqa: E402
from trainledger.run.model import Model  # noqa: E402
from trainledger.summary import read_scalars  # noqa: E402

Batches = list[tuple[torch.Tensor, torch.Tensor]]


def run(batches: Batches, hidden: int, log_dir: Path | None) -> tuple[float, float]:
    """(wall seconds, process CPU seconds of all threads) per step of one training run."""
    net, opt = make(hidden)
    model = Model(net, nn.CrossEntropyLoss(), opt)
    callbacks = []
    if log_dir is not None:
        callbacks = [
            SummaryCollector(
                log_dir,
                collect_freq=1,
                keep_default_action=False,
                collect_specified_data={"collect_metric": True},
            )
        ]
    wall, cpu = time.perf_counter(), time.process_time()
    model.train(1, batches, callbacks=callbacks)
    n = len(batches)
    return (time.perf_counter() - wall) / n, (time.process_time() - cpu) / n


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--hidden", type=int, default=128)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--threads", type=int, default=1, help="torch intra-op threads")
    args = parser.parse_args()
    gen = torch.Generator().manual_seed(0)
    batches = [
        (
            torch.randn(args.batch, 64, generator=gen),
            torch.randint(0, 10, (args.batch,), generator=gen),
        )
        for _ in range(args.steps)
    ]
    torch.set_num_threads(args.threads)
    root = Path(tempfile.mkdtemp(prefix="tl-bench-collector-"))
    try:
        run(batches, args.hidden, None)  # warm-up
        run(batches, args.hidden, root / "warm")
        base: list[tuple[float, float]] = []
        ours: list[tuple[float, float]] = []
        for i in range(args.rounds):
            base.append(run(batches, args.hidden, None))
            log_dir = root / f"r{i}"
            ours.append(run(batches, args.hidden, log_dir))
            steps = read_scalars(log_dir)["loss/auto"][0]
            assert len(steps) == args.steps, len(steps)  # every step was collected
        print(
            f"MLP 64-{args.hidden}-10, batch {args.batch}, {args.steps} steps x {args.rounds} "
            f"rounds, torch {torch.__version__}, {torch.get_num_threads()} thread(s)"
        )
        print(f"  {'':38s} {'wall us/step':>20} {'CPU us/step':>20}")
        print(f"  {'':38s} {'best':>9} {'median':>10} {'best':>9} {'median':>10}")
        stats = {}
        for name, values in (
            ("Model.train, no callbacks", base),
            ("+ SummaryCollector(collect_freq=1)", ours),
        ):
            walls = [v[0] * 1e6 for v in values]
            cpus = [v[1] * 1e6 for v in values]
            stats[name] = (min(walls), statistics.median(walls), min(cpus), statistics.median(cpus))
            print(
                f"  {name:38s} {min(walls):9.1f} {statistics.median(walls):10.1f} "
                f"{min(cpus):9.1f} {statistics.median(cpus):10.1f}"
            )
        b, o = stats.values()
        print(
            f"  slowdown, best rounds:   {(o[0] / b[0] - 1) * 100:5.1f}% wall, "
            f"{(o[2] / b[2] - 1) * 100:5.1f}% CPU ({o[2] - b[2]:.1f} us CPU per step)"
        )
        print(
            f"  slowdown, median rounds: {(o[1] / b[1] - 1) * 100:5.1f}% wall, "
            f"{(o[3] / b[3] - 1) * 100:5.1f}% CPU ({o[3] - b[3]:.1f} us CPU per step)"
        )
        paired = statistics.median(
            (o_i[1] - b_i[1]) * 1e6 for b_i, o_i in zip(base, ours, strict=True)
        )
        print(
            f"  slowdown, median of paired rounds: {paired / b[3] * 100:5.1f}% CPU "
            f"({paired:.1f} us CPU per step)"
        )
        print("  (CPU includes the writer thread and each run's file open and fsync)")
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
