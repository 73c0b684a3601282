"""Per-step cost of ``Model.train`` under DDP (2 CPU processes, gloo) against a hand DDP loop.

    .venv/bin/python bench/ddp_overhead.py [--procs 2] [--steps 200] [--rounds 30]

Run as above, it starts itself under ``torchrun`` (``torch.distributed.run --standalone``).
Every rank builds the same DDP MLP and the same pre-built batches (no data loading in the
timing); each round times the hand loop and ``Model.train`` over those batches, in an order
that alternates between rounds, each preceded by a barrier. Both clocks are reported: wall time
(the steps wait on gradient all-reduces) and process CPU time (the host's own work, less
disturbed by a shared machine's scheduler). Rank 0 prints the median per-step time of each,
the median of the paired per-round ratios with its spread, and a 95% interval of the mean
per-step difference (normal approximation over the paired rounds). Target: within 3%.
"""

from __future__ import annotations

import argparse
import gc
import math
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel

from trainledger.run.model import Model

Batches = list[tuple[torch.Tensor, torch.Tensor]]


def make(hidden: int) -> tuple[nn.Module, torch.optim.Optimizer]:
    torch.manual_seed(0)
    net = DistributedDataParallel(
        nn.Sequential(nn.Linear(64, hidden), nn.ReLU(), nn.Linear(hidden, 10))
    )
    return net, torch.optim.SGD(net.parameters(), lr=0.01)


Timing = tuple[float, float]  # (wall, process CPU) seconds per step


def _timed(run: Callable[[], None], steps: int) -> Timing:
    dist.barrier()
    wall, cpu = time.perf_counter(), time.process_time()
    run()
    return (time.perf_counter() - wall) / steps, (time.process_time() - cpu) / steps


def hand(batches: Batches, hidden: int) -> Timing:
    net, opt = make(hidden)
    loss_fn = nn.CrossEntropyLoss()

    def loop() -> None:
        for x, y in batches:
            opt.zero_grad()
            loss_fn(net(x), y).backward()
            opt.step()

    return _timed(loop, len(batches))


def ours(batches: Batches, hidden: int) -> Timing:
    net, opt = make(hidden)
    model = Model(net, nn.CrossEntropyLoss(), opt)
    model.show_progress = False
    return _timed(lambda: model.train(1, batches), len(batches))


def worker(args: argparse.Namespace) -> None:
    torch.set_num_threads(1)
    dist.init_process_group("gloo")
    gen = torch.Generator().manual_seed(dist.get_rank())
    batches = [
        (torch.randn(64, 64, generator=gen), torch.randint(0, 10, (64,), generator=gen))
        for _ in range(args.steps)
    ]
    hand(batches, args.hidden), ours(batches, args.hidden)  # warm-up
    rows = []
    for i in range(args.rounds):
        if i % 2:
            o = ours(batches, args.hidden)
            h = hand(batches, args.hidden)
        else:
            h = hand(batches, args.hidden)
            o = ours(batches, args.hidden)
        rows.append((h, o))
    if dist.get_rank() == 0:
        report(rows, args)
    gc.collect()  # the rounds' DDP models (and their reducers) go while the group is alive
    dist.barrier()  # no rank tears the group down while another still uses it
    dist.destroy_process_group()


def report(rows: list[tuple[Timing, Timing]], args: argparse.Namespace) -> None:
    print(f"DDP {args.procs} processes (gloo, CPU), MLP 64-{args.hidden}-10, batch 64")
    print(f"{args.rounds} paired rounds x {args.steps} steps; rank 0's figures")
    for i, clock in enumerate(("wall", "CPU")):
        hands = [h[i] for h, _ in rows]
        oursl = [o[i] for _, o in rows]
        ratios = sorted(o / h for h, o in zip(hands, oursl, strict=True))
        diffs = [o - h for h, o in zip(hands, oursl, strict=True)]
        mean = statistics.fmean(diffs)
        half = 1.96 * statistics.stdev(diffs) / math.sqrt(len(diffs))  # ~t for 30 rounds
        hand_med = statistics.median(hands)
        q = len(ratios) // 4
        print(
            f"{clock:>4}: hand {hand_med * 1e6:7.1f} us/step, Model.train "
            f"{statistics.median(oursl) * 1e6:7.1f} us/step; ours/hand median "
            f"{statistics.median(ratios):.4f} (IQR {ratios[q]:.4f}-{ratios[-q - 1]:.4f}); "
            f"difference {mean * 1e6:+.1f} us/step, 95% interval "
            f"[{(mean - half) / hand_med:+.2%}, {(mean + half) / hand_med:+.2%}] of a step"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--procs", type=int, default=2)
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--hidden", type=int, default=256)
    args = parser.parse_args()
    if "LOCAL_RANK" in os.environ:
        worker(args)
        return
    root = Path(__file__).resolve().parents[1]
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(root / "src")}
    command = [sys.executable, "-m", "torch.distributed.run", "--standalone"]
    command += [f"--nproc_per_node={args.procs}", __file__, *sys.argv[1:]]
    sys.exit(subprocess.run(command, env=env, check=False).returncode)


if __name__ == "__main__":
    main()
