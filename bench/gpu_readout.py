"""Where ``LossReadout.push`` spends its time in a launch-bound training loop on CUDA.

Why: on an H200 the push cost about 68 µs a step inside the full stack (``bench/gpu.py
--attribute``, BENCHMARKS.md run E) while its parts took about 10 µs in a tight loop. This
runs the MLP of ``bench/gpu.py`` three ways in alternating rounds: the hand loop; the hand
loop plus ``push`` each step (timed inline); the hand loop plus the push's parts done by hand
and timed one by one (the copy to the pinned slot, the event record, and the wait for the
event of the step ``LAG`` back, with how often that event had not yet completed).

    python bench/gpu_readout.py [--steps 300] [--rounds 9]   # on a CUDA machine
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import torch
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parent))
from gpu import batches, build  # noqa: E402 (the sibling bench module)

from trainledger.run.loss_readout import LAG, LossReadout  # noqa: E402


def loop(
    mode: str, data: list[tuple[torch.Tensor, torch.Tensor]]
) -> tuple[float, dict[str, float]]:
    """Seconds for one run of ``mode``, and its per-step part times (µs) or counts."""
    net, opt = build("mlp", "cuda")
    loss_fn = nn.CrossEntropyLoss()
    readout = LossReadout(torch.device("cuda"))
    slots, events = readout._slots, readout._events or []
    stream = torch.cuda.current_stream()
    ns = {"push": 0, "copy": 0, "record": 0, "wait": 0, "not done": 0}
    torch.cuda.synchronize()
    start = time.perf_counter()
    for i, (x, y) in enumerate(data):
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(net(x), y)
        loss.backward()
        opt.step()
        if mode == "push":
            t0 = time.perf_counter_ns()
            readout.push(i + 1, loss)
            ns["push"] += time.perf_counter_ns() - t0
        elif mode == "parts":
            slot = i % len(slots)
            t0 = time.perf_counter_ns()
            slots[slot].copy_(loss.detach(), non_blocking=True)
            t1 = time.perf_counter_ns()
            events[slot].record(stream)
            t2 = time.perf_counter_ns()
            if i >= LAG:
                old = events[(i - LAG) % len(slots)]
                ns["not done"] += 0 if old.query() else 1
                old.synchronize()
            ns["copy"] += t1 - t0
            ns["record"] += t2 - t1
            ns["wait"] += time.perf_counter_ns() - t2
    torch.cuda.synchronize()
    steps = len(data)
    return time.perf_counter() - start, {
        k: (v if k == "not done" else v / steps / 1e3) for k, v in ns.items()
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=9)
    args = parser.parse_args()
    data = batches("mlp", "cuda", args.steps)
    modes = ("hand", "push", "parts")
    for mode in modes:  # warm-up: kernels, allocator, pinned memory
        loop(mode, data[:20])
    seconds: dict[str, list[float]] = {m: [] for m in modes}
    parts: dict[str, list[float]] = {}
    for _ in range(args.rounds):
        for mode in modes:
            wall, found = loop(mode, data)
            seconds[mode].append(wall)
            for key, value in found.items():
                if value and mode != "hand":
                    parts.setdefault(key, []).append(value)
    print(f"MLP on {torch.cuda.get_device_name()}: {args.steps} steps, {args.rounds} rounds")
    hand = seconds["hand"]
    for mode in modes:
        pairs = zip(seconds[mode], hand, strict=True)
        extra = statistics.median((t - h) / args.steps * 1e6 for t, h in pairs)
        ms = statistics.median(seconds[mode]) * 1e3
        print(f"  {mode:6} {ms:8.1f} ms a run, {extra:7.1f} µs a step over the hand loop")
    for key, values in parts.items():
        unit = "steps a run" if key == "not done" else "µs a step"
        print(f"  {key:9} {statistics.median(values):8.2f} {unit}")


if __name__ == "__main__":
    main()
