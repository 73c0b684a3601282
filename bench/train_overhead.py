"""Per-step overhead of ``Model.train`` against a hand-written PyTorch loop.

Same MLP, same pre-built batches (so data loading does not hide the loop's cost), one process:

* hand loop:   ``zero_grad; loss_fn(net(x), y).backward(); step`` in a ``for`` loop
* Model.train without callbacks
* Model.train with LossMonitor + ProgressBar (drawn to an in-memory terminal)
* with ``--terminal``: Model.train on a pseudo-terminal, so it adds its default ProgressBar,
  with LossMonitor(per_print_times=100): what a user at a terminal gets (target: within 3%)
* with ``--dataloader``: every variant, the hand loop too, iterates a ``DataLoader`` over the
  same tensors (``[x, y]`` lists, collated per step), as most real loops do

Rounds are interleaved (hand, model, model+callbacks, hand, ...) so a machine shared with
other work loads every variant alike; rates are steps per second of process CPU time, and the
median of the rounds is reported, with two ratios: the median over rounds of ours/hand (paired
within a round), and the best round of ours over the best round of the hand loop.
Target: Model.train without callbacks within 3% of the hand loop.

    .venv/bin/python bench/train_overhead.py [--steps 250] [--rounds 40] [--threads 1]
        [--terminal [--attribute]] [--dataloader]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import statistics
import subprocess
import time
from collections.abc import Callable
from typing import Any

import torch
from rich.console import Console
from torch import nn

from trainledger.callbacks.monitors import LossMonitor
from trainledger.callbacks.progress import ProgressBar
from trainledger.run import Callback, RunContext
from trainledger.run.model import Model

Batches = list[tuple[torch.Tensor, torch.Tensor]] | torch.utils.data.DataLoader[Any]

# CPU time of this process, not wall time: on a machine shared with other work, wall time
# mostly measures the scheduler; with one torch thread, CPU time is the loop's own cost
# (it includes the progress bar's refresh thread, which is part of the overhead).
_clock = time.process_time


def make(hidden: int) -> tuple[nn.Module, torch.optim.Optimizer]:
    torch.manual_seed(0)
    net = nn.Sequential(nn.Linear(64, hidden), nn.ReLU(), nn.Linear(hidden, 10))
    return net, torch.optim.SGD(net.parameters(), lr=0.01)


def hand_loop(batches: Batches, hidden: int) -> float:
    net, opt = make(hidden)
    loss_fn = nn.CrossEntropyLoss()
    net.train()
    start = _clock()
    for x, y in batches:
        opt.zero_grad()
        loss = loss_fn(net(x), y)
        loss.backward()
        opt.step()
    return len(batches) / (_clock() - start)


def model_train(batches: Batches, hidden: int, with_callbacks: bool) -> float:
    net, opt = make(hidden)
    model = Model(net, nn.CrossEntropyLoss(), opt)
    callbacks = []
    if with_callbacks:
        console = Console(file=io.StringIO(), force_terminal=True, width=100)
        callbacks = [LossMonitor(per_print_times=100), ProgressBar(console=console)]
    with contextlib.redirect_stdout(io.StringIO()):
        start = _clock()
        model.train(1, batches, callbacks=callbacks)
        elapsed = _clock() - start
    return len(batches) / elapsed


class PseudoTerminal:
    """stdout on a pseudo-terminal, read by another process (``cat`` into /dev/null), as a
    terminal emulator reads it: so ``Model`` adds its default ``ProgressBar`` exactly as for a
    user at a terminal, and the reading is not counted as the training process's CPU time (a
    draining thread in this process was, about 0.1 ms a run)."""

    def __init__(self) -> None:
        master, slave = os.openpty()
        self._reader = subprocess.Popen(["cat"], stdin=master, stdout=subprocess.DEVNULL)
        os.close(master)
        self.stdout = os.fdopen(slave, "w", buffering=1)

    def close(self) -> None:
        self.stdout.close()
        self._reader.wait(timeout=10)


def model_train_on_terminal(batches: Batches, hidden: int, terminal: PseudoTerminal) -> float:
    """The default terminal experience: Model's own ProgressBar + LossMonitor(100)."""
    net, opt = make(hidden)
    model = Model(net, nn.CrossEntropyLoss(), opt)
    with contextlib.redirect_stdout(terminal.stdout):
        start = _clock()
        model.train(1, batches, callbacks=[LossMonitor(per_print_times=100)])
        elapsed = _clock() - start
    return len(batches) / elapsed


class StepEnd(Callback):
    """A callback whose ``on_train_step_end`` does nothing: the cost of having step hooks."""

    def on_train_step_end(self, run_context: RunContext) -> None:
        return None


def model_train_with(
    batches: Batches, hidden: int, make_callbacks: Callable[[], list[Callback]], stdout: Any
) -> float:
    """``Model.train`` with the given callbacks, stdout redirected to ``stdout``."""
    net, opt = make(hidden)
    model = Model(net, nn.CrossEntropyLoss(), opt)
    with contextlib.redirect_stdout(stdout):
        start = _clock()
        model.train(1, batches, callbacks=make_callbacks())
        elapsed = _clock() - start
    return len(batches) / elapsed


def attribution_variants(
    batches: Batches, hidden: int, terminal: PseudoTerminal
) -> dict[str, Callable[[], float]]:
    """Where the default terminal experience's cost goes: step hooks at all, LossMonitor
    alone (off a terminal: no bar), the bar alone (on the pseudo-terminal)."""
    off = io.StringIO()
    return {
        "no-op step_end callback": lambda: model_train_with(
            batches, hidden, lambda: [StepEnd()], off
        ),
        "LossMonitor(100), no bar": lambda: model_train_with(
            batches, hidden, lambda: [LossMonitor(per_print_times=100)], off
        ),
        "default bar on a pty, no LossMonitor": lambda: model_train_with(
            batches, hidden, list, terminal.stdout
        ),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=250, help="steps per round")
    parser.add_argument("--rounds", type=int, default=40)
    parser.add_argument("--hidden", type=int, default=128)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--threads", type=int, default=1, help="torch intra-op threads")
    parser.add_argument(
        "--terminal",
        action="store_true",
        help="also train on a pseudo-terminal: Model's default ProgressBar + LossMonitor(100)",
    )
    parser.add_argument(
        "--attribute",
        action="store_true",
        help="with --terminal: also a no-op step callback, LossMonitor alone, the bar alone",
    )
    parser.add_argument(
        "--dataloader",
        action="store_true",
        help="batches from a DataLoader (lists, collated per step) instead of a list of tuples",
    )
    args = parser.parse_args()
    torch.set_num_threads(args.threads)  # one thread: steadier figures on a shared machine

    gen = torch.Generator().manual_seed(0)
    batches: Batches = [
        (
            torch.randn(args.batch, 64, generator=gen),
            torch.randint(0, 10, (args.batch,), generator=gen),
        )
        for _ in range(args.steps)
    ]
    if args.dataloader:
        tensors = [torch.cat(parts) for parts in zip(*batches, strict=True)]
        dataset = torch.utils.data.TensorDataset(*tensors)
        batches = torch.utils.data.DataLoader(dataset, batch_size=args.batch)
    variants: dict[str, Callable[[], float]] = {
        "hand loop": lambda: hand_loop(batches, args.hidden),
        "Model.train, no callbacks": lambda: model_train(batches, args.hidden, False),
        "Model.train, LossMonitor+ProgressBar": lambda: model_train(batches, args.hidden, True),
    }
    terminal = PseudoTerminal() if args.terminal else None
    if terminal is not None:
        variants["default on a pty (bar + LossMonitor)"] = lambda: model_train_on_terminal(
            batches, args.hidden, terminal
        )
        if args.attribute:
            variants.update(attribution_variants(batches, args.hidden, terminal))
    for fn in variants.values():  # warm-up: allocator, autograd graph caches
        fn()
    rates: dict[str, list[float]] = {name: [] for name in variants}
    for i in range(args.rounds):
        names = list(variants)
        if i % 2:
            names.reverse()  # no variant always runs right after another
        for name in names:
            rates[name].append(variants[name]())
    if terminal is not None:
        terminal.close()
    hand = rates["hand loop"]
    print(
        f"MLP 64-{args.hidden}-10, batch {args.batch}, {args.steps} steps x {args.rounds} rounds, "
        f"torch {torch.__version__}, {torch.get_num_threads()} threads"
        + (", batches from a DataLoader" if args.dataloader else "")
    )
    print(
        f"{'variant':38} {'steps/cpu-s':>11} {'best':>7} {'worst':>7} {'ours/hand':>9} "
        f"{'best/best':>9} {'us/step vs hand':>15} {'IQR of us/step':>15}"
    )
    for name, values in rates.items():
        # ratio and extra time per round, against the hand loop of the same round: the load
        # of a shared machine drifts between rounds, much less within one
        ratio = statistics.median(v / h for v, h in zip(values, hand, strict=True))
        extras = [(1 / v - 1 / h) * 1e6 for v, h in zip(values, hand, strict=True)]
        extra = statistics.median(extras)
        low, _, high = statistics.quantiles(extras, n=4) if len(extras) > 1 else (extra,) * 3
        # best rounds: the least disturbed run of each variant (timeit's rationale: slower
        # rounds measure the machine's other work, not the code)
        best = max(values) / max(hand)
        print(
            f"{name:38} {statistics.median(values):11,.0f} {max(values):7,.0f} "
            f"{min(values):7,.0f} {ratio:9.3f} {best:9.3f} {extra:+15.1f} "
            f"{f'{low:+.1f}..{high:+.1f}':>15}"
        )


if __name__ == "__main__":
    main()
