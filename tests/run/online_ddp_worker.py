"""A torchrun worker for ``tests/run/test_online_ddp.py``: ``RecModel.online_train`` of a DDP
network on CPU (gloo), over endless streams, with a stop that starts on one rank.

``python -m torch.distributed.run --standalone --nproc_per_node=N online_ddp_worker.py MODE OUT``

MODE: ``deadline`` (rank 0 has ``max_seconds``, the other ranks none), ``request`` (rank 1's
callback asks to stop at step 7; ``max_steps`` is given, so the loop checks its limits after
every step), ``signal`` (each rank reads a ``QueueStream`` fed by a thread, until SIGTERM;
rank 0 touches ``OUT/started`` at step 3). With ``uneven_streams=True``: ``uneven`` (one-shot
streams of 7 batches on rank 0, 12 on rank 1), ``uneven_passes`` (lists of 3 and 5 batches,
passes until ``max_steps=10``), ``uneven_tail`` (a ``FileTailSource`` over 2 batches of
records on rank 0, 4 on rank 1, with offsets). Each rank writes ``OUT/rank<r>.json``: the step,
epoch and stop reason its ``on_train_end`` saw, its weights' sum (DDP keeps them equal while
the ranks step together) and, for ``uneven_tail``, the source's committed offsets.
"""

from __future__ import annotations

import json
import os
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

from trainledger import Callback, FileTailSource, QueueStream, RecModel

SAFETY_STEPS = 20_000  # a run that never agrees stops here, far beyond the agreement point


def stream(rank: int) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
    """An endless stream, different on each rank."""
    gen = torch.Generator().manual_seed(rank)
    while True:
        x = torch.randn(8, 6, generator=gen)
        yield x, (x.sum(1) > 0).long()


def batches(rank: int, count: int) -> list[tuple[torch.Tensor, torch.Tensor]]:
    return [batch for batch, _ in zip(stream(rank), range(count), strict=False)]


def collate(records: list[dict[str, Any]]) -> tuple[torch.Tensor, torch.Tensor]:
    return torch.tensor([r["x"] for r in records]), torch.tensor([r["y"] for r in records])


def tail_source(rank: int, out: Path, count: int) -> FileTailSource:
    """``count`` batches of 8 records in ``OUT/data<r>/part.jsonl``, then the end marker."""
    data = out / f"data{rank}"
    data.mkdir()
    lines = [
        json.dumps({"x": x.tolist(), "y": int(y)})
        for batch_x, batch_y in batches(rank, count)
        for x, y in zip(batch_x, batch_y, strict=True)
    ]
    (data / "part.jsonl").write_text("".join(line + "\n" for line in lines))
    (data / "_END").touch()
    offsets = out / f"offsets{rank}.json"
    return FileTailSource(data, batch_size=8, collate_fn=collate, offsets_path=offsets)


def queue_stream(rank: int) -> QueueStream:
    """An endless ``QueueStream`` (closable by a signal), fed by a daemon thread."""
    source = QueueStream(64, batch_size=8)
    gen = torch.Generator().manual_seed(rank)

    def feed() -> None:
        while True:
            x = torch.randn(6, generator=gen)
            source.put((x, int(x.sum() > 0)))

    threading.Thread(target=feed, daemon=True).start()
    return source


class Seen(Callback):
    def __init__(self, mode: str, rank: int, out: Path) -> None:
        self.mode, self.rank, self.out = mode, rank, out
        self.result: dict[str, Any] = {}

    def on_train_step_end(self, run_context: Any) -> None:
        if self.rank == 0 and run_context.original_args().cur_step_num == 3:
            (self.out / "started").touch()
        if self.mode == "request" and self.rank == 1:
            if run_context.original_args().cur_step_num == 7:
                run_context.request_stop()

    def on_train_end(self, run_context: Any) -> None:
        cb = run_context.original_args()
        self.result = {"step": cb.cur_step_num, "epoch": cb.cur_epoch_num, "reason": cb.stop_reason}


def main(mode: str, out: Path) -> None:
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.manual_seed(1)
    net = torch.nn.Sequential(torch.nn.Linear(6, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))
    ddp = DistributedDataParallel(net)
    model = RecModel(ddp, torch.nn.CrossEntropyLoss(), torch.optim.SGD(ddp.parameters(), lr=0.1))
    seen = Seen(mode, rank, out)
    seconds = 0.5 if mode == "deadline" and rank == 0 else None
    source: Any = {
        "signal": lambda: queue_stream(rank),
        "uneven": lambda: iter(batches(rank, 7 + 5 * rank)),
        "uneven_passes": lambda: batches(rank, 3 + 2 * rank),
        "uneven_tail": lambda: tail_source(rank, out, 2 + 2 * rank),
    }.get(mode, lambda: stream(rank))()
    model.online_train(
        source,
        callbacks=[seen],
        max_steps=10 if mode == "uneven_passes" else SAFETY_STEPS,
        max_seconds=seconds,
        uneven_streams=mode.startswith("uneven"),
    )
    total = float(sum(p.detach().sum() for p in net.parameters()))
    offsets = source.offsets if mode == "uneven_tail" else None
    result = {**seen.result, "weights": total, "offsets": offsets}
    (out / f"rank{rank}.json").write_text(json.dumps(result))
    dist.barrier()
    dist.destroy_process_group()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)  # as ddp_worker.py: skip a teardown that rarely aborts after the work is done


if __name__ == "__main__":
    main(sys.argv[1], Path(sys.argv[2]))
