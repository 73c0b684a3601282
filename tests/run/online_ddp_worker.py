"""A torchrun worker for ``tests/run/test_online_ddp.py``: ``RecModel.online_train`` of a DDP
network on CPU (gloo), over endless streams, with a stop that starts on one rank.

``python -m torch.distributed.run --standalone --nproc_per_node=N online_ddp_worker.py MODE OUT``

MODE: ``deadline`` (rank 0 has ``max_seconds``, the other ranks none), ``request`` (rank 1's
callback asks to stop at step 7; ``max_steps`` is given, so the loop checks its limits after
every step), ``signal`` (each rank reads a ``QueueStream`` fed by a thread, until SIGTERM;
rank 0 touches ``OUT/started`` at step 3). Each rank writes ``OUT/rank<r>.json``: the step
and stop reason its ``on_train_end`` saw, and its weights' sum (DDP keeps them equal while the
ranks step together).
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

from trainledger import Callback, QueueStream, RecModel

SAFETY_STEPS = 20_000  # a run that never agrees stops here, far beyond the agreement point


def stream(rank: int) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
    """An endless stream, different on each rank."""
    gen = torch.Generator().manual_seed(rank)
    while True:
        x = torch.randn(8, 6, generator=gen)
        yield x, (x.sum(1) > 0).long()


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
        self.result = {"step": cb.cur_step_num, "reason": cb.stop_reason}


def main(mode: str, out: Path) -> None:
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.manual_seed(1)
    net = torch.nn.Sequential(torch.nn.Linear(6, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))
    ddp = DistributedDataParallel(net)
    model = RecModel(ddp, torch.nn.CrossEntropyLoss(), torch.optim.SGD(ddp.parameters(), lr=0.1))
    seen = Seen(mode, rank, out)
    seconds = 0.5 if mode == "deadline" and rank == 0 else None
    source = queue_stream(rank) if mode == "signal" else stream(rank)
    model.online_train(source, callbacks=[seen], max_steps=SAFETY_STEPS, max_seconds=seconds)
    total = float(sum(p.detach().sum() for p in net.parameters()))
    (out / f"rank{rank}.json").write_text(json.dumps({**seen.result, "weights": total}))
    dist.barrier()
    dist.destroy_process_group()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)  # as ddp_worker.py: skip a teardown that rarely aborts after the work is done


if __name__ == "__main__":
    main(sys.argv[1], Path(sys.argv[2]))
