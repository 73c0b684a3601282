"""A torchrun worker for ``tests/run/test_ddp.py``: ``Model.fit`` of a DDP network on CPU (gloo).

``python -m torch.distributed.run --standalone --nproc_per_node=N ddp_worker.py MODE OUT``

MODE: ``fit`` (train, evaluate, checkpoint, lineage), ``fsdp``/``fsdp_sharded``/``fsdp_resume``
(the same with an FSDP2 ``fully_shard`` network), ``stop`` (rank 1 asks to stop at step 3),
``fail`` (rank 1 raises at step 3), ``signal`` (long run, waiting for SIGTERM),
``sharded`` (fit with ``integrated_save=False``), ``resume`` (from the checkpoint given as a
third argument). A third argument ``nccl`` runs on one GPU per process instead of gloo.
Each rank writes ``OUT/rank<r>.json`` (what it saw) and ``OUT/weights<r>.safetensors``.
"""

from __future__ import annotations

import gc
import json
import os
import sys
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist
from safetensors.torch import save_file
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset

from trainledger import (
    Callback,
    CheckpointConfig,
    EvalLineage,
    LossMonitor,
    Model,
    ModelCheckpoint,
    SummaryCollector,
    TimeMonitor,
    TrainLineage,
)
from trainledger.metrics import F1, ROCAUC, Accuracy, Loss

SAMPLES = 403  # not a multiple of 2 or 3: the sampler pads
BATCH = 16


def dataset() -> TensorDataset:
    """The same data on every rank (and in the test's single process)."""
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(SAMPLES, 6, generator=gen)
    y = (x @ torch.randn(6, 3, generator=gen)).argmax(1)
    return TensorDataset(x, y)


def network() -> torch.nn.Module:
    torch.manual_seed(1)
    return torch.nn.Sequential(torch.nn.Linear(6, 16), torch.nn.ReLU(), torch.nn.Linear(16, 3))


def eval_metrics() -> dict[str, Any]:
    return {"acc": Accuracy(), "loss": Loss(), "f1": F1(), "auc": ROCAUC()}


class Seen(Callback):
    """Records what this rank saw; on rank 1 asks to stop or fails at step 3 (by mode)."""

    def __init__(self, mode: str, out: Path) -> None:
        self.mode, self.out = mode, out
        self.fields: dict[str, Any] = {}

    def on_train_step_end(self, run_context: Any) -> None:
        cb = run_context.original_args()
        if cb.cur_step_num == 3 and cb.rank == 0:
            (self.out / "started").touch()
        if cb.cur_step_num == 3 and cb.rank == 1 and self.mode == "stop":
            run_context.request_stop()
        if cb.cur_step_num == 3 and cb.rank == 1 and self.mode == "fail":
            raise RuntimeError("rank 1 fails on purpose")

    def on_train_end(self, run_context: Any) -> None:
        cb = run_context.original_args()
        self.fields = {
            k: cb.get(k) for k in ("parallel_mode", "device_number", "rank", "cur_step_num")
        }
        self.fields["stop_reason"] = cb.get("stop_reason")
        self.fields["latest_ckpt_file"] = cb.get("latest_ckpt_file")


def main(mode: str, out: Path) -> None:
    nccl = sys.argv[3:] == ["nccl"]
    dist.init_process_group("nccl" if nccl else "gloo")
    rank = dist.get_rank()
    data = dataset()
    net = network()
    fsdp = mode.startswith("fsdp")
    if nccl:  # one GPU per process
        local = int(os.environ["LOCAL_RANK"])
        torch.cuda.set_device(local)
        ddp = DistributedDataParallel(net.cuda(local), device_ids=[local])
    elif fsdp:  # FSDP2: parameters become DTensor shards
        from torch.distributed.fsdp import fully_shard

        ddp = fully_shard(net)
    else:
        ddp = DistributedDataParallel(net)
    optimizer = torch.optim.SGD(ddp.parameters(), lr=0.05, momentum=0.9)
    train = DataLoader(data, batch_size=BATCH, sampler=DistributedSampler(data, seed=0))
    valid = DataLoader(data, batch_size=32, sampler=DistributedSampler(data, shuffle=False))
    model = Model(ddp, torch.nn.CrossEntropyLoss(), optimizer, metrics={"accuracy"})
    seen = Seen(mode, out)
    integrated = mode not in ("sharded", "fsdp_sharded")
    config = CheckpointConfig(
        save_checkpoint_steps=10,
        keep_checkpoint_max=2,
        integrated_save=integrated,
        async_save=integrated,  # rank 0's background writer (sharded saves are synchronous)
    )
    resume = mode.endswith("resume")
    callbacks = [
        ModelCheckpoint("net", directory=out / "ckpt", config=config),
        TrainLineage(str(out / "run")),
        SummaryCollector(str(out / "summary"), collect_freq=5),
        LossMonitor(5),
        TimeMonitor(),
        seen,
    ]
    epochs = 400 if mode == "signal" else 2
    if resume:
        from trainledger import load_distributed_checkpoint

        load_distributed_checkpoint(sys.argv[3], ddp, optimizer)
    model.fit(epochs + resume * 2, train, valid, callbacks=callbacks, initial_epoch=resume * 2)
    evaluator = Model(ddp, torch.nn.CrossEntropyLoss(reduction="none"), metrics=eval_metrics())
    results = evaluator.eval(valid, callbacks=[EvalLineage(str(out / "run"))])
    if fsdp:
        from trainledger.checkpoint import full_state

        gathered, _ = full_state(net, None)  # rank 0 holds it, the others nothing
    else:
        gathered = net.state_dict()
    state = {k: v.detach().cpu().clone().contiguous() for k, v in gathered.items()}
    if state:
        save_file(state, str(out / f"weights{rank}.safetensors"))
    (out / f"rank{rank}.json").write_text(json.dumps({"seen": seen.fields, "eval": results}))
    gc.collect()  # DDP models no longer used (and their reducers) go while the group lives
    dist.barrier()  # no rank tears the group down while another still uses it
    dist.destroy_process_group()
    # Under load, about 1 job in 20 here aborted after this point, in C++ destructors while
    # the interpreter shut down ("terminate called without an active exception", no Python
    # frame left): everything was written by then. Skip that teardown.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


if __name__ == "__main__":
    main(sys.argv[1], Path(sys.argv[2]))
