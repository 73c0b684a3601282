"""The proof of issue 16's item 12: a trainer killed again and again while a producer appends
numbered records ends with every record trained exactly once into its final checkpoint.

The network counts, in a buffer saved with its weights, how often it saw each record id. Each
incarnation resumes from ``FileTailSource.committed_checkpoint`` (the checkpoint the committed
offsets belong to) and tails the producer's files; the test SIGKILLs it at random moments,
several times, then lets a last incarnation run to the producer's end marker. A lost record
leaves a 0 in the final counts, a repeated one a 2.
"""

from __future__ import annotations

import json
import random
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import torch

from trainledger.checkpoint import load_checkpoint
from trainledger.data import FileTailSource

REPO = Path(__file__).resolve().parents[2]
N = 3000

_TRAINER = """
import os, sys
from pathlib import Path
import torch
from torch import nn
from trainledger.callbacks import ModelCheckpoint
from trainledger.checkpoint import CheckpointConfig, load_checkpoint, load_param_into_net
from trainledger.data import FileTailSource
from trainledger.run import RecModel

data, run, n, life = Path(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3]), sys.argv[4]


class Counting(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(1, 1)
        self.register_buffer("counts", torch.zeros(n, dtype=torch.int64))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        with torch.no_grad():
            ids = x.view(-1).long()
            self.counts.index_add_(0, ids, torch.ones_like(ids))
        return self.lin(x)


def collate(records):
    x = torch.tensor([[float(r["id"])] for r in records])
    return x, torch.zeros_like(x)


net = Counting()
# a short commit interval: were commits not held to checkpoints, they would run ahead often
source = FileTailSource(data, batch_size=7, collate_fn=collate, commit_interval=0.02,
                        offsets_path=run / "offsets.json", poll_interval=0.005)
if source.committed_checkpoint is not None:
    load_param_into_net(net, load_checkpoint(source.committed_checkpoint), strict_load=True)
model = RecModel(net, nn.MSELoss(), torch.optim.SGD(net.parameters(), lr=1e-9))
config = CheckpointConfig(save_checkpoint_steps=3, keep_checkpoint_max=3)
print("ready", flush=True)
model.online_train(source, callbacks=[ModelCheckpoint(f"life{life}", run, config)],
                   dataset_sink_mode=False)
print("done", flush=True)
"""


def _produce(data: Path, stop: threading.Event, allowed: list[int]) -> None:
    """Numbered records, a new file every 500, 30 at a time about ten times a second, up to
    ``allowed[0]`` (the test raises it at each life: each life gets new records while it runs,
    however slowly a loaded machine starts the trainers), then the end marker."""
    produced = 0
    while produced < N:
        if stop.is_set():
            return
        if produced >= allowed[0]:
            time.sleep(0.02)
            continue
        part = data / f"part-{produced // 500:04d}.jsonl"
        with open(part, "a") as fh:
            fh.writelines(json.dumps({"id": i}) + "\n" for i in range(produced, produced + 30))
        produced += 30
        time.sleep(0.1)
    (data / "_END").touch()


def _start(data: Path, run: Path, life: int) -> subprocess.Popen[str]:
    proc = subprocess.Popen(
        [sys.executable, "-c", _TRAINER, str(data), str(run), str(N), str(life)],
        cwd=REPO,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
    return proc


@pytest.mark.slow
def test_sigkilled_trainers_train_every_record_exactly_once(tmp_path: Path) -> None:
    data, run = tmp_path / "stream", tmp_path / "run"
    data.mkdir()
    run.mkdir()
    stop = threading.Event()
    allowed = [0]  # how many records the producer may have written by now
    producer = threading.Thread(target=_produce, args=(data, stop, allowed), daemon=True)
    rng = random.Random(1234)
    kills, progress = 0, []
    offsets = run / "offsets.json"
    try:
        producer.start()
        for life in range(10):  # SIGKILL at a random moment of each life
            allowed[0] = (life + 1) * N // 10
            proc = _start(data, run, life)
            time.sleep(rng.uniform(0.8, 2.0))
            if proc.poll() is None:
                proc.send_signal(signal.SIGKILL)
                kills += 1
            proc.wait(30)
            done = json.loads(offsets.read_text())["offsets"] if offsets.exists() else {}
            progress.append(sum(done.values()))
        producer.join(60)
        assert not producer.is_alive()
        last = _start(data, run, 99)  # runs to the end marker
        assert last.wait(120) == 0
    finally:
        stop.set()
    assert kills >= 6
    assert len(set(progress)) >= 5, progress  # the lives did train, and were killed mid-way
    committed = FileTailSource(data, offsets_path=run / "offsets.json").committed_checkpoint
    assert committed is not None
    counts = load_checkpoint(committed)["counts"]
    assert isinstance(counts, torch.Tensor)
    missing = (counts == 0).nonzero().flatten().tolist()
    twice = (counts > 1).nonzero().flatten().tolist()
    assert (missing, twice) == ([], []), f"lost {missing[:20]}, repeated {twice[:20]}"
