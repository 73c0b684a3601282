"""The GPU path against a hand-written loop, on one CUDA device (``tools/gpu-check.sh``).

Two workloads, as in the issue "GPU-first": a launch-bound MLP (256-512-512-10, batch 64,
SGD momentum) and a compute-bound CNN (five conv-BN-ReLU blocks of 128-512 channels, batch
256 at 32x32). For each, in alternating paired rounds (hand, bare, LossMonitor, full, hand,
...; wall time with the device synchronised at the end of each run): the hand loop,
``Model.train`` bare, with ``LossMonitor(100)``, and the full default stack
(``LossMonitor`` + ``SummaryCollector(collect_freq=10)`` without landscape +
``TrainLineage`` + ``ModelCheckpoint(async_save=True)`` saving at the end). Printed: median
ratio hand/ours with its interquartile range, and our cost in µs a step; then the host syncs a
step of each variant (``torch.cuda.set_sync_debug_mode("warn")``), checkpoint timings for a
2 GiB state of 16 CUDA tensors (ours, ``torch.save``, ``safetensors``; the time an async save
blocks; loads onto the device) and a 40 x 40 train + result landscape of the CNN.

    python bench/gpu.py --quick          # about 3 minutes on an H100/H200
    python bench/gpu.py --device cpu --quick --steps-scale 0.05   # a smoke run without a GPU
    python bench/gpu.py --skip mlp,cnn,syncs,ckpt,landscape --breakdown 5 --profile p.txt
        # each callback alone against the bare loop, and a cProfile of the full stack
"""

from __future__ import annotations

import argparse
import logging
import os
import statistics
import tempfile
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from torch import nn

from trainledger import (
    CheckpointConfig,
    LossMonitor,
    Model,
    ModelCheckpoint,
    SummaryCollector,
    SummaryLandscape,
    TrainLineage,
    load_checkpoint,
    save_checkpoint,
)
from trainledger.checkpoint import wait_async_save

Batches = list[tuple[torch.Tensor, torch.Tensor]]


def mlp() -> nn.Module:
    return nn.Sequential(
        nn.Linear(256, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 10)
    )


def cnn() -> nn.Module:
    layers: list[nn.Module] = []
    channels = [3, 128, 256, 256, 512, 512]
    for cin, cout in zip(channels, channels[1:], strict=False):
        layers += [nn.Conv2d(cin, cout, 3, padding=1), nn.BatchNorm2d(cout), nn.ReLU()]
    layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(512, 10)]
    return nn.Sequential(*layers)


def batches(kind: str, device: str, n: int) -> Batches:
    g = torch.Generator().manual_seed(0)
    if kind == "mlp":
        xs = [torch.randn(64, 256, generator=g) for _ in range(n)]
    else:
        xs = [torch.randn(256, 3, 32, 32, generator=g) for _ in range(n)]
    return [(x.to(device), torch.randint(0, 10, (x.shape[0],)).to(device)) for x in xs]


def sync(device: str) -> None:
    if device.startswith("cuda"):
        torch.cuda.synchronize()


def build(kind: str, device: str) -> tuple[nn.Module, torch.optim.Optimizer]:
    torch.manual_seed(0)
    net = (mlp() if kind == "mlp" else cnn()).to(device)
    return net, torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.9)


def hand(kind: str, device: str, data: Batches, tmp: str) -> float:
    net, opt = build(kind, device)
    loss_fn = nn.CrossEntropyLoss()
    sync(device)
    start = time.perf_counter()
    for x, y in data:
        opt.zero_grad(set_to_none=True)
        loss_fn(net(x), y).backward()
        opt.step()
    sync(device)
    return time.perf_counter() - start


def ours(callbacks: Callable[[str], list[Any]]) -> Callable[[str, str, Batches, str], float]:
    def run(kind: str, device: str, data: Batches, tmp: str) -> float:
        net, opt = build(kind, device)
        model = Model(net, nn.CrossEntropyLoss(), opt)
        model.show_progress = False
        made = callbacks(tempfile.mkdtemp(dir=tmp))
        sync(device)
        start = time.perf_counter()
        model.train(1, data, callbacks=made)
        sync(device)
        return time.perf_counter() - start

    return run


def full_stack(run_dir: str) -> list[Any]:
    return [
        LossMonitor(100),
        SummaryCollector(
            run_dir, collect_freq=10, collect_specified_data={"collect_landscape": None}
        ),
        TrainLineage(run_dir),
        ModelCheckpoint(
            "m", run_dir, CheckpointConfig(save_checkpoint_steps=10**9, async_save=True)
        ),
    ]


VARIANTS: dict[str, Callable[[str, str, Batches, str], float]] = {
    "hand loop": hand,
    "Model.train bare": ours(lambda d: []),
    "+ LossMonitor(100)": ours(lambda d: [LossMonitor(100)]),
    "full default stack": ours(full_stack),
}


def _collector(**spec: Any) -> Callable[[str], list[Any]]:
    return lambda d: [
        SummaryCollector(
            d, collect_freq=10, collect_specified_data={"collect_landscape": None, **spec}
        )
    ]


BREAKDOWN: dict[str, Callable[[str], list[Any]]] = {
    "Model.train bare": lambda d: [],
    "LossMonitor(100)": lambda d: [LossMonitor(100)],
    "SummaryCollector": _collector(),
    "  without histograms": _collector(histogram_regular="^$"),
    "  without graph": _collector(collect_graph=False),
    "TrainLineage": lambda d: [TrainLineage(d)],
    "ModelCheckpoint(async)": lambda d: [
        ModelCheckpoint("m", d, CheckpointConfig(save_checkpoint_steps=10**9, async_save=True))
    ],
    "full default stack": full_stack,
}


def breakdown(kind: str, device: str, steps: int, rounds: int, tmp: str) -> None:
    """Each callback alone against the bare loop, paired: our extra time a run, which
    splits into a fixed cost (begin and end) and a per-step one (compare the workloads)."""
    fns = {name: ours(make) for name, make in BREAKDOWN.items()}
    times = paired_rounds(fns, kind, device, steps, rounds, tmp)
    base = times["Model.train bare"]
    print(f"\nbreakdown, {kind.upper()} on {device}: {steps} steps, {rounds} paired rounds")
    print(f"  {'callbacks':24} {'extra ms a run (IQR)':>28} {'µs/step':>9}")
    for name, values in times.items():
        low, mid, high = quartiles([(t - b) * 1e3 for t, b in zip(values, base, strict=True)])
        print(f"  {name:24} {mid:10.1f} ({low:7.1f}..{high:7.1f}) {mid * 1e3 / steps:9.1f}")


def profile(device: str, steps: int, tmp: str, out: str) -> None:
    """cProfile of the full stack on the MLP (three runs), written to ``out``."""
    import cProfile
    import io
    import pstats

    data = batches("mlp", device, steps)
    run = ours(full_stack)
    run("mlp", device, data, tmp)
    prof = cProfile.Profile()
    prof.enable()
    for _ in range(3):
        run("mlp", device, data, tmp)
    prof.disable()
    text = io.StringIO()
    stats = pstats.Stats(prof, stream=text)
    stats.sort_stats("cumulative").print_stats(60)
    stats.sort_stats("tottime").print_stats(40)
    Path(out).write_text(text.getvalue())
    print(f"\nprofile of the full stack (MLP, 3 runs of {steps} steps): {out}")


# (module, owner, attribute): the inner parts timed by ``attribute`` besides every hook
_PARTS = [
    ("trainledger.run.loss_readout", "LossReadout", "push"),
    ("trainledger.run.loss_readout", "LossReadout", "read_all"),
    ("torch.cuda", "Event", "synchronize"),  # a readout's or a record's wait for the device
    ("trainledger.callbacks.tensor_buckets", "DeviceBuckets", "count"),
    ("trainledger.callbacks.collected_values", "StagedValues", "on_host"),
    ("trainledger.run.host_copy", "HostCopy", "__init__"),
    ("trainledger.callbacks.summary_collector", None, "first_batch_graph"),
    ("trainledger.summary.record", "SummaryRecord", "record"),
    ("trainledger.summary.record", "SummaryRecord", "flush"),
    ("trainledger.summary.record", "SummaryRecord", "close"),
    ("trainledger.checkpoint.async_save", "ThreadSaver", "save"),
    ("trainledger.checkpoint.async_save", "ThreadSaver", "close"),
]


def attribute(kind: str, device: str, steps: int, runs: int, tmp: str) -> None:
    """Where the full stack's time goes in the training thread: every callback hook and the
    inner parts above, wall time in this thread (device waits included), per run and per
    call, over ``runs`` runs after a warm-up run. Exact sums, not paired differences."""
    import importlib

    from trainledger.run.callback import HOOKS
    from trainledger.run.callback_manager import hook_function

    spent: dict[str, list[int]] = {}

    def timed_fn(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            start = time.perf_counter_ns()
            try:
                return fn(*args, **kwargs)
            finally:
                row = spent.setdefault(name, [0, 0])
                row[0] += 1
                row[1] += time.perf_counter_ns() - start

        return wrapper

    restore: list[tuple[Any, str, Any]] = []
    for module_name, owner_name, attr in _PARTS:
        module = importlib.import_module(module_name)
        owner = getattr(module, owner_name) if owner_name else module
        original = getattr(owner, attr)
        restore.append((owner, attr, original))
        setattr(owner, attr, timed_fn(f"  {owner_name or module_name}.{attr}", original))
    data = batches(kind, device, steps)
    total: list[float] = []
    try:
        for i in range(runs + 1):
            net, opt = build(kind, device)
            model = Model(net, nn.CrossEntropyLoss(), opt)
            model.show_progress = False
            made = full_stack(tempfile.mkdtemp(dir=tmp))
            for cb in made:
                for hook in HOOKS:
                    fn = hook_function(cb, hook)
                    if fn is not None:
                        setattr(cb, hook, timed_fn(f"{type(cb).__name__}.{hook}", fn))
            if i == 0:
                model.train(1, data[: max(steps // 5, 2)], callbacks=made)
                spent.clear()
                continue
            sync(device)
            start = time.perf_counter()
            model.train(1, data, callbacks=made)
            sync(device)
            total.append(time.perf_counter() - start)
    finally:
        for owner, attr, original in restore:
            setattr(owner, attr, original)
    print(f"\nattribution, full stack, {kind.upper()} on {device}: {steps} steps, {runs} runs, "
          f"{statistics.median(total) * 1e3:.1f} ms a run (median)")  # fmt: skip
    print(f"  {'hook or part':44} {'calls/run':>9} {'ms/run':>8} {'µs/call':>9}")
    for name, (calls, ns) in sorted(spent.items(), key=lambda i: -i[1][1]):
        print(f"  {name:44} {calls / runs:9.1f} {ns / runs / 1e6:8.2f} {ns / calls / 1e3:9.1f}")


def quartiles(values: list[float]) -> tuple[float, float, float]:
    q = statistics.quantiles(values, n=4, method="inclusive") if len(values) > 1 else values * 3
    return q[0], statistics.median(values), q[2]


def paired_rounds(
    fns: dict[str, Callable[[str, str, Batches, str], float]],
    kind: str,
    device: str,
    steps: int,
    rounds: int,
    tmp: str,
) -> dict[str, list[float]]:
    """Seconds of each variant in ``rounds`` alternating rounds, after one short warm-up run
    of each (kernels, allocator, imports)."""
    data = batches(kind, device, steps)
    for fn in fns.values():
        fn(kind, device, data[: max(steps // 5, 2)], tmp)
    times: dict[str, list[float]] = {name: [] for name in fns}
    for _ in range(rounds):
        for name, fn in fns.items():
            times[name].append(fn(kind, device, data, tmp))
    return times


def overhead(kind: str, device: str, steps: int, rounds: int, tmp: str) -> None:
    times = paired_rounds(VARIANTS, kind, device, steps, rounds, tmp)
    base = times["hand loop"]
    print(f"\n{kind.upper()} on {device}: {steps} steps a run, {rounds} paired rounds")
    print(f"  {'variant':22} {'median ms':>10} {'hand/ours (IQR)':>24} {'cost µs/step':>13}")
    for name, values in times.items():
        ratios = [h / t for h, t in zip(base, values, strict=True)]
        low, mid, high = quartiles(ratios)
        cost = statistics.median((t - h) / steps * 1e6 for h, t in zip(base, values, strict=True))
        print(
            f"  {name:22} {statistics.median(values) * 1e3:10.1f} "
            f"{mid:8.3f} ({low:.3f}..{high:.3f}) {cost:13.1f}"
        )


def syncs_per_step(kind: str, device: str, steps: int, tmp: str) -> None:
    if not device.startswith("cuda"):
        return
    data = batches(kind, device, steps)
    print(f"\nhost syncs a step ({kind}, {steps} steps, set_sync_debug_mode('warn')):")
    for name, fn in VARIANTS.items():
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            torch.cuda.set_sync_debug_mode("warn")
            try:
                fn(kind, device, data, tmp)
            finally:
                torch.cuda.set_sync_debug_mode("default")
        found = [w for w in caught if "synchroniz" in str(w.message)]
        places: dict[str, int] = {}
        for w in found:
            where = f"{Path(w.filename).name}:{w.lineno}"
            places[where] = places.get(where, 0) + 1
        top = ", ".join(f"{k} x{v}" for k, v in sorted(places.items(), key=lambda i: -i[1])[:4])
        print(f"  {name:22} {len(found) / steps:6.2f}   {top}")


def timed(fn: Callable[[], Any], repeats: int) -> float:
    values = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        values.append(time.perf_counter() - start)
    return statistics.median(values)


def checkpoints(device: str, gib: float, repeats: int, tmp: str) -> None:
    import safetensors.torch as st

    count = 16
    per = int(gib * 2**30 / 4 / count)
    state = {f"w{i}": torch.randn(per, device=device) for i in range(count)}
    path = os.path.join(tmp, "state.ckpt")
    sync(device)
    print(f"\ncheckpoints: {count} tensors, {gib:g} GiB on {device}, median of {repeats}")
    rows: list[tuple[str, float]] = []
    rows.append(("save_checkpoint (sync)", timed(lambda: save_checkpoint(state, path), repeats)))
    pt = os.path.join(tmp, "state.pt")
    rows.append(("torch.save", timed(lambda: torch.save(state, pt), repeats)))
    sf = os.path.join(tmp, "state.safetensors")
    rows.append(("safetensors save_file", timed(lambda: st.save_file(state, sf), repeats)))
    blocked = []
    for _ in range(repeats + 1):  # the first one allocates the pinned buffers
        start = time.perf_counter()
        save_checkpoint(state, path, async_save=True)
        blocked.append(time.perf_counter() - start)
        wait_async_save()
    rows.append(("async save: blocks for", statistics.median(blocked[1:])))
    rows.append(("async save: first call blocks for", blocked[0]))
    loads = {  # the first call of a process allocates its pinned memory: shown apart
        "load_checkpoint(device=)": lambda: load_checkpoint(path, device=device),
        "load_checkpoint + .to()": lambda: {
            k: v.to(device) for k, v in load_checkpoint(path).items()
        },
        "safetensors load_file(device=)": lambda: st.load_file(sf, device=device),
        "torch.load(map_location=)": lambda: torch.load(pt, map_location=device),
    }
    for name, fn in loads.items():
        first = timed(fn, 1)
        rows += [(f"{name}, first", first), (name, timed(fn, repeats))]
    for name, seconds in rows:
        print(f"  {name:32} {seconds:8.3f} s")
    print(f"  async blocking / sync save: {rows[3][1] / rows[0][1]:.1%}")
    found = dict(rows)
    for label in ("", ", first"):
        ours, theirs = (
            found[f"{n}{label}"]
            for n in ("load_checkpoint(device=)", "safetensors load_file(device=)")
        )
        print(f"  load_checkpoint(device=) / safetensors load_file{label}: {ours / theirs:.2f}x")


def landscape(device: str, size: int, samples: int, tmp: str) -> None:
    run = tempfile.mkdtemp(dir=tmp)
    net, opt = build("cnn", device)
    model = Model(net, nn.CrossEntropyLoss(), opt)
    model.show_progress = False
    data = batches("cnn", device, 12)
    spec = {
        "landscape_size": size,
        "unit": "step",
        "create_landscape": {"train": True, "result": True},
        "num_samples": samples,
        "intervals": [[3, 6, 9, 12]],
    }
    collector = SummaryCollector(run, collect_specified_data={"collect_landscape": spec})
    model.train(1, data, callbacks=[collector])
    start = time.perf_counter()
    SummaryLandscape(run, show_progress=False).gen_landscapes_with_multi_process(
        lambda: (model, net, data, {"loss"})
    )
    sync(device)
    print(f"\nlandscape: {size} x {size} train + result of the CNN on {samples} samples: "
          f"{time.perf_counter() - start:.1f} s")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--quick", action="store_true", help="the issue's 3-minute check")
    parser.add_argument("--rounds", type=int, default=11)
    parser.add_argument("--steps-scale", type=float, default=1.0)
    parser.add_argument("--gib", type=float, default=2.0)
    parser.add_argument("--landscape-size", type=int, default=40)
    parser.add_argument("--landscape-samples", type=int, default=512)
    parser.add_argument("--skip", default="", help="comma list of: mlp,cnn,syncs,ckpt,landscape")
    parser.add_argument(
        "--breakdown", type=int, default=0, help="rounds of each callback alone (0: none)"
    )
    parser.add_argument("--profile", default="", help="write a cProfile of the full stack here")
    parser.add_argument(
        "--attribute", type=int, default=0, help="runs of the full stack timed hook by hook"
    )
    args = parser.parse_args()
    skip = set(filter(None, args.skip.split(",")))
    logging.getLogger("trainledger").setLevel(logging.ERROR)  # the MLP's "no image" note
    warnings.filterwarnings("ignore", message="SummaryCollector collects input data")
    if args.device.startswith("cuda"):
        print(f"device: {torch.cuda.get_device_name()}, torch {torch.__version__}")
    torch.backends.cudnn.benchmark = True
    with tempfile.TemporaryDirectory() as tmp:
        scale = args.steps_scale
        if "mlp" not in skip:
            overhead("mlp", args.device, max(int(300 * scale), 5), args.rounds, tmp)
        if "cnn" not in skip:
            overhead("cnn", args.device, max(int(40 * scale), 5), args.rounds, tmp)
        if "syncs" not in skip:
            syncs_per_step("mlp", args.device, 50, tmp)
        if "ckpt" not in skip:
            checkpoints(args.device, args.gib, 3 if not args.quick else 2, tmp)
        if args.profile:
            profile(args.device, max(int(300 * scale), 5), tmp, args.profile)
        if args.breakdown:
            breakdown("mlp", args.device, max(int(300 * scale), 5), args.breakdown, tmp)
            breakdown("cnn", args.device, max(int(40 * scale), 5), args.breakdown, tmp)
        if args.attribute:
            attribute("mlp", args.device, max(int(300 * scale), 5), args.attribute, tmp)
            attribute("cnn", args.device, max(int(40 * scale), 5), args.attribute, tmp)
        if "landscape" not in skip:
            landscape(args.device, args.landscape_size, args.landscape_samples, tmp)


if __name__ == "__main__":
    main()
