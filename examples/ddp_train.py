"""Train with DDP under torchrun, with lineage, summaries and checkpoints (docs/distributed.md).

One machine, two CPU processes:

    .venv/bin/torchrun --standalone --nproc_per_node=2 examples/ddp_train.py runs/ddp

On GPUs (one process per GPU, nccl), add ``--gpu``; on several machines, replace
``--standalone`` with the rendezvous arguments (see the docs page). Afterwards:

    .venv/bin/trainledger lineage runs
"""

from __future__ import annotations

import argparse
import gc
import os

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset

from trainledger import (
    CheckpointConfig,
    LossMonitor,
    Model,
    ModelCheckpoint,
    SummaryCollector,
    TrainLineage,
)


def data(samples: int = 2000) -> tuple[TensorDataset, TensorDataset]:
    """A learnable 3-class task, the same on every rank (the sampler shards it)."""
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(samples, 8, generator=gen)
    y = (x @ torch.randn(8, 3, generator=gen)).argmax(1)
    cut = samples * 4 // 5
    return TensorDataset(x[:cut], y[:cut]), TensorDataset(x[cut:], y[cut:])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run_dir")
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--gpu", action="store_true", help="nccl, one GPU per process")
    parser.add_argument("--sharded", action="store_true", help="integrated_save=False")
    args = parser.parse_args()

    dist.init_process_group("nccl" if args.gpu else "gloo")
    torch.manual_seed(0)  # the same initial weights on every rank (DDP also broadcasts them)
    net = torch.nn.Sequential(torch.nn.Linear(8, 32), torch.nn.ReLU(), torch.nn.Linear(32, 3))
    if args.gpu:
        local = int(os.environ["LOCAL_RANK"])
        torch.cuda.set_device(local)
        network = DistributedDataParallel(net.cuda(local), device_ids=[local])
    else:
        network = DistributedDataParallel(net)
    optimizer = torch.optim.Adam(network.parameters(), lr=0.01)
    train, valid = data()
    # DistributedSampler: each rank its part; Model calls set_epoch every epoch and merges
    # the evaluation metrics over the ranks, leaving the sampler's padding out
    train_loader = DataLoader(train, batch_size=32, sampler=DistributedSampler(train, seed=0))
    valid_loader = DataLoader(valid, batch_size=64, sampler=DistributedSampler(valid))
    model = Model(network, torch.nn.CrossEntropyLoss(), optimizer, metrics={"accuracy", "loss"})
    config = CheckpointConfig(save_checkpoint_steps=50, integrated_save=not args.sharded)
    callbacks = [
        ModelCheckpoint("ddp", directory=os.path.join(args.run_dir, "checkpoints"), config=config),
        SummaryCollector(args.run_dir, collect_freq=10),  # rank 0 writes
        TrainLineage(args.run_dir, user_defined_info={"example": "ddp_train"}),
        LossMonitor(per_print_times=20),  # printed once, by rank 0
    ]
    model.fit(args.epochs, train_loader, valid_loader, callbacks=callbacks)
    gc.collect()  # DDP models no longer used (and their reducers) go while the group lives
    dist.barrier()  # no rank tears the group down while another still uses it
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
