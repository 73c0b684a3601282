"""Checkpoint I/O: trainledger vs torch.save / safetensors / torch.load, in one process run.

For each state-dict size (default 256 MB and 1 GB of float32/bfloat16 tensors):
- sync save: ``save_checkpoint`` vs ``torch.save`` vs ``safetensors.torch.save_file``, every
  one fsynced (ours fsyncs file and directory as part of the atomic write);
- load: ``load_checkpoint`` vs ``torch.load(weights_only=True)``; and the cost of verifying
  integrity (the default since issue 16: header and tensor crc32c) against
  ``load_checkpoint(..., crc_check=False)`` (what the original version did by default),
  paired per round: median ratio with its range;
- async: how long ``ModelCheckpoint``'s thread and process savers block the training thread
  (the snapshot copy) per save, once warm.

Prints median seconds of ``--repeat`` runs and the ratios (ours / theirs). Targets: sync save
<= 1.1x torch.save, async blocking <= 10% of our sync save, load <= 1.0x torch.load.

    .venv/bin/python bench/checkpoint_io.py [--sizes 256,1024] [--repeat 5] [--dir DIR]
"""

from __future__ import annotations

import argparse
import gc
import os
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import torch
from safetensors.torch import save_file

from trainledger.checkpoint import load_checkpoint, save_checkpoint
from trainledger.checkpoint.async_save import ProcessSaver, ThreadSaver


def make_state(mb: int) -> dict[str, torch.Tensor]:
    """A model-like state dict: big float32 matrices, some bf16, many small vectors."""
    torch.manual_seed(0)
    state: dict[str, torch.Tensor] = {}
    budget = mb * 1024 * 1024
    i = 0
    while budget > 0:
        rows = min(2048, max(1, budget // (4 * 2048)))
        dtype = torch.bfloat16 if i % 4 == 3 else torch.float32
        state[f"layer{i}.weight"] = torch.randn(rows, 2048).to(dtype)
        state[f"layer{i}.bias"] = torch.randn(2048)
        budget -= state[f"layer{i}.weight"].nbytes + 2048 * 4
        i += 1
    return state


def fsync_path(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def torch_save(state: dict[str, torch.Tensor], path: Path) -> None:
    with open(path, "wb") as fh:
        torch.save(state, fh)
        fh.flush()
        os.fsync(fh.fileno())


def st_save(state: dict[str, torch.Tensor], path: Path) -> None:
    save_file(state, str(path))
    fsync_path(path)


def timed_rounds(fns: dict[str, Callable[[], object]], repeat: int) -> dict[str, list[float]]:
    """Seconds per function per round; the functions alternate within each round, so a load
    spike on the shared machine hits all of them alike."""
    times: dict[str, list[float]] = {k: [] for k in fns}
    for _ in range(repeat):
        for name, fn in fns.items():
            gc.collect()
            t0 = time.perf_counter()
            out = fn()
            times[name].append(time.perf_counter() - t0)
            del out
    return times


def timed(fns: dict[str, Callable[[], object]], repeat: int) -> dict[str, float]:
    """Median seconds per function (``timed_rounds``)."""
    return {k: statistics.median(v) for k, v in timed_rounds(fns, repeat).items()}


def async_block(
    saver: ThreadSaver | ProcessSaver, state: dict[str, torch.Tensor], path: Path, repeat: int
) -> float:
    """Median time save() holds the caller, after a first (cold) save."""
    named = list(state.items())
    saver.save(path, named, {})
    saver.wait()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        saver.save(path, named, {})
        times.append(time.perf_counter() - t0)
        saver.wait()
    saver.close()
    return statistics.median(times)


def run(mb: int, directory: Path, repeat: int, load_only: bool = False) -> None:
    state = make_state(mb)
    size = sum(t.nbytes for t in state.values()) / 2**20
    ours, theirs, st = directory / "ours.ckpt", directory / "torch.pt", directory / "st.safetensors"
    if load_only:
        save_checkpoint(state, ours)
        torch_save(state, theirs)
    saves = (
        {"ours": 0.0, "torch": 0.0, "st": 0.0}
        if load_only
        else timed(
            {
                "ours": lambda: save_checkpoint(state, ours),
                "torch": lambda: torch_save(state, theirs),
                "st": lambda: st_save(state, st),
            },
            repeat,
        )
    )
    t_ours, t_torch, t_st = saves["ours"], saves["torch"], saves["st"]
    rounds = timed_rounds(
        {
            "ours": lambda: load_checkpoint(ours),
            "unverified": lambda: load_checkpoint(ours, crc_check=False),
            "torch": lambda: torch.load(theirs, weights_only=True),
        },
        repeat,
    )
    loads = {k: statistics.median(v) for k, v in rounds.items()}
    l_ours, l_torch, l_plain = loads["ours"], loads["torch"], loads["unverified"]
    paired = sorted(a / b for a, b in zip(rounds["ours"], rounds["unverified"], strict=True))
    print(f"\n## state dict {size:.0f} MB ({len(state)} tensors), median of {repeat}")
    if load_only:
        print(f"load        ours {l_ours:7.3f}s  torch.load {l_torch:7.3f}s")
        print(
            f"verify      crc_check=False {l_plain:7.3f}s  verified/unverified paired median "
            f"{statistics.median(paired):5.3f} (range {paired[0]:5.3f}-{paired[-1]:5.3f})"
        )
        return
    b_thread = async_block(ThreadSaver(), state, directory / "async_t.ckpt", repeat)
    b_proc = async_block(ProcessSaver(), state, directory / "async_p.ckpt", repeat)
    print(
        f"sync save   ours {t_ours:7.3f}s  torch.save {t_torch:7.3f}s  "
        f"safetensors {t_st:7.3f}s  ours/torch {t_ours / t_torch:5.2f}  "
        f"ours/safetensors {t_ours / t_st:5.2f}"
    )
    print(
        f"load        ours {l_ours:7.3f}s  torch.load {l_torch:7.3f}s  "
        f"ours/torch {l_ours / l_torch:5.2f}"
    )
    print(
        f"verify      crc_check=False {l_plain:7.3f}s  verified/unverified paired median "
        f"{statistics.median(paired):5.3f} (range {paired[0]:5.3f}-{paired[-1]:5.3f})"
    )
    print(
        f"async block thread {b_thread:7.3f}s ({100 * b_thread / t_ours:4.1f}% of sync save)  "
        f"process {b_proc:7.3f}s ({100 * b_proc / t_ours:4.1f}%)"
    )
    for p in directory.iterdir():
        p.unlink()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="256,1024", help="state dict sizes in MB")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--dir", default=None, help="where to write (default: a temp dir)")
    parser.add_argument("--load-only", action="store_true", help="only the load figures")
    args = parser.parse_args()
    torch.set_num_threads(max(1, torch.get_num_threads()))
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        for mb in (int(s) for s in args.sizes.split(",")):
            run(mb, Path(tmp), args.repeat, args.load_only)


if __name__ == "__main__":
    main()
