"""Loss landscape generation: trainledger's SummaryLandscape vs MindSpore 2.10's, one run.

The job (the same on both sides): an MLP 32-64-64-2 trained 3 epochs (16 steps each) on 512
generated samples with SummaryCollector collecting the landscape weights at epochs 1-3 (one
interval), then ``gen_landscapes_with_multi_process`` making the train and the result
landscape at 10 x 10 on 256 samples. Only the generation is timed. MindSpore runs in its own
venv as a subprocess (``bench/_landscape_mindspore.py``), trained once, answering one timed
generation per request; rounds alternate ours / theirs. Then our default size, 40 x 40 (train +
result), for the same MLP and samples.

Targets: >= 20x faster than MindSpore at 10 x 10; 40 x 40 in <= 30 s.

    .venv/bin/python bench/landscape.py [--rounds 3] [--ms-python /work/venvs/mindspore/bin/python]
        [--ms-mode graph|pynative]  (graph: MindSpore's faster mode here)
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch

from trainledger.callbacks.landscape import SummaryLandscape
from trainledger.callbacks.summary_collector import SummaryCollector
from trainledger.run.model import Model

SAMPLES, FEATURES, BATCH, EPOCHS = 512, 32, 32, 3
LANDSCAPE = {
    "landscape_size": 10,
    "unit": "epoch",
    "create_landscape": {"train": True, "result": True},
    "num_samples": 256,
    "intervals": [[1, 2, 3]],
}


def data() -> list[tuple[torch.Tensor, torch.Tensor]]:
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(SAMPLES, FEATURES, generator=gen)
    y = (x[:, 0] + x[:, 1] > 0).long()
    return [(x[i : i + BATCH], y[i : i + BATCH]) for i in range(0, SAMPLES, BATCH)]


def make_model() -> tuple[Model, torch.nn.Module]:
    torch.manual_seed(0)
    net = torch.nn.Sequential(
        torch.nn.Linear(FEATURES, 64),
        torch.nn.ReLU(),
        torch.nn.Linear(64, 64),
        torch.nn.ReLU(),
        torch.nn.Linear(64, 2),
    )
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    return Model(net, torch.nn.CrossEntropyLoss(), opt, metrics={"loss"}), net


def ours(run_dir: Path, model: Model, net: torch.nn.Module, size: int) -> float:
    start = time.perf_counter()
    SummaryLandscape(run_dir, seed=0, show_progress=False).gen_landscapes_with_multi_process(
        lambda: (model, net, data(), {"loss"}),
        collect_landscape={"landscape_size": size},
        output=run_dir / "out",
    )
    return time.perf_counter() - start


def spread(values: list[float]) -> str:
    return (
        f"median {statistics.median(values):.3f} s (min {min(values):.3f}, max {max(values):.3f})"
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--ms-python", default="/work/venvs/mindspore/bin/python")
    parser.add_argument("--ms-mode", choices=("pynative", "graph"), default="graph")
    args = parser.parse_args()
    base = Path(tempfile.mkdtemp(prefix="bench-landscape-"))
    model, net = make_model()
    model.train(
        EPOCHS,
        data(),
        callbacks=[
            SummaryCollector(base / "tl", collect_specified_data={"collect_landscape": LANDSCAPE})
        ],
    )
    worker = subprocess.Popen(
        [
            args.ms_python,
            str(Path(__file__).with_name("_landscape_mindspore.py")),
            str(base / "ms"),
            args.ms_mode,
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    assert worker.stdin is not None and worker.stdout is not None
    if worker.stdout.readline().strip() != "ready":
        sys.exit("the MindSpore worker did not start")
    ours(
        base / "tl", model, net, 10
    )  # warm-up (imports, first vmap); MindSpore's is its first round
    mine, theirs = [], []
    for index in range(args.rounds):
        mine.append(ours(base / "tl", model, net, 10))
        worker.stdin.write("run 10\n")
        worker.stdin.flush()
        theirs.append(float(worker.stdout.readline()))
        print(f"round {index + 1}: ours {mine[-1]:.3f} s, MindSpore {theirs[-1]:.3f} s", flush=True)
    worker.stdin.close()
    worker.wait()
    ratios = [t / m for m, t in zip(mine, theirs, strict=True)]
    print(
        f"10x10 train+result, 256 samples: ours {spread(mine)}; "
        f"MindSpore ({args.ms_mode}) {spread(theirs)}"
    )
    print(
        f"speed-up: median of paired ratios {statistics.median(ratios):.0f}x "
        f"(min {min(ratios):.0f}x)"
    )
    big = [ours(base / "tl", model, net, 40) for _ in range(args.rounds)]
    print(f"40x40 train+result, 256 samples: ours {spread(big)}")


if __name__ == "__main__":
    main()
