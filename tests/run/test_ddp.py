"""Real torchrun jobs (2 and 3 CPU processes, gloo) of ``Model.fit`` on a DDP network.

The worker is ``tests/run/ddp_worker.py``. What one process over the whole data gives is the
reference: metrics over a padded ``DistributedSampler`` must equal it (counts exactly, means to
1e-6), lineage is written once with the world size, checkpoints load anywhere.
"""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import torch
from safetensors.torch import load_file
from torch.utils.data import DataLoader

from tests.run.ddp_worker import BATCH, SAMPLES, dataset, eval_metrics, network
from trainledger import Model, get_summary_lineage, load_checkpoint
from trainledger.checkpoint import is_sharded_checkpoint

ROOT = Path(__file__).resolve().parents[2]
WORKER = ROOT / "tests" / "run" / "ddp_worker.py"
pytestmark = pytest.mark.slow


def _command(procs: int, mode: str, out: Path, *extra: str) -> list[str]:
    return [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--standalone",
        f"--nproc_per_node={procs}",
        str(WORKER),
        mode,
        str(out),
        *extra,
    ]


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}


def torchrun(procs: int, mode: str, out: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    out.mkdir(parents=True, exist_ok=True)
    return subprocess.run(
        _command(procs, mode, out, *extra),
        cwd=ROOT,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=240,
    )


def steps_per_epoch(procs: int) -> int:
    return math.ceil(math.ceil(SAMPLES / procs) / BATCH)


def ranks(out: Path, procs: int) -> list[dict[str, Any]]:
    return [json.loads((out / f"rank{r}.json").read_text()) for r in range(procs)]


def one_process_eval(weights: dict[str, torch.Tensor]) -> dict[str, Any]:
    net = network()
    net.load_state_dict(weights)
    model = Model(net, torch.nn.CrossEntropyLoss(reduction="none"), metrics=eval_metrics())
    return model.eval(DataLoader(dataset(), batch_size=32))


@pytest.mark.parametrize("procs", [2, 3])
def test_fit_under_torchrun(tmp_path: Path, procs: int) -> None:
    done = torchrun(procs, "fit", tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    seen = ranks(tmp_path, procs)
    for r, rank in enumerate(seen):
        fields = rank["seen"]
        assert fields["parallel_mode"] == "data_parallel"
        assert (fields["device_number"], fields["rank"]) == (procs, r)
        assert fields["cur_step_num"] == 2 * steps_per_epoch(procs)

    # every rank ends with the same weights, and the sharded evaluation equals one process
    weights = [load_file(str(tmp_path / f"weights{r}.safetensors")) for r in range(procs)]
    for other in weights[1:]:
        assert all(torch.equal(weights[0][k], other[k]) for k in weights[0])
    reference = one_process_eval(weights[0])
    for rank in seen:
        got = rank["eval"]
        assert round(got["acc"] * SAMPLES) == round(reference["acc"] * SAMPLES)  # counts
        assert got["acc"] == reference["acc"]
        for name in ("loss", "f1", "auc"):
            assert got[name] == pytest.approx(reference[name], rel=1e-6), name

    # lineage: one file, from rank 0, with the world size
    lineage_files = [p for p in (tmp_path / "run").iterdir() if p.name.endswith("_lineage")]
    assert len(lineage_files) == 1
    lineage = get_summary_lineage(str(tmp_path / "run"))
    assert lineage["hyper_parameters"]["device_num"] == procs
    assert lineage["hyper_parameters"]["parallel_mode"] == "data_parallel"
    assert lineage["run"]["status"] == "finished"
    assert lineage["metric"]["acc"] == reference["acc"]

    # summaries: rank 0 alone, the DDP network unwrapped in its weight snapshots
    events = [p.name for p in (tmp_path / "summary").iterdir() if ".tfevents." in p.name]
    assert events and len({name.rsplit(".", 2)[1] for name in events}) == 1  # one pid
    snapshots = list((tmp_path / "summary" / "ckpt_dir").glob("*.ckpt"))
    assert snapshots and all(p.name.startswith("Sequential_") for p in snapshots)

    # the full-state checkpoint (rank 0 wrote it) loads into a plain network: the final weights
    final = tmp_path / "ckpt" / f"net-2_{steps_per_epoch(procs)}.ckpt"
    params = load_checkpoint(final)
    assert all(torch.equal(params[k], weights[0][k]) for k in weights[0])
    spe = steps_per_epoch(procs)
    last = (2 * spe - 1) // 10 * 10  # the last save by steps before the final one
    epoch = (last - 1) // spe + 1
    previous = f"net-{epoch}_{last - (epoch - 1) * spe}.ckpt"
    kept = sorted(p.name for p in (tmp_path / "ckpt").iterdir())  # async save, retention 2
    assert kept == sorted([final.name, previous])

    # monitors print once per job, not once per rank
    assert done.stdout.count("epoch: 1 step: 5, loss is") == 1
    assert done.stdout.count("Eval result: epoch 2") == 1


def test_a_stop_on_one_rank_stops_every_rank_at_the_same_step(tmp_path: Path) -> None:
    done = torchrun(2, "stop", tmp_path)  # rank 1 asks at step 3; ranks agree at the epoch end
    assert done.returncode == 0, done.stderr[-3000:]
    steps = [r["seen"]["cur_step_num"] for r in ranks(tmp_path, 2)]
    assert steps == [13, 13]
    assert {r["seen"]["stop_reason"] for r in ranks(tmp_path, 2)} == {"requested"}


def test_a_failing_rank_ends_the_job_and_lineage_records_it(tmp_path: Path) -> None:
    started = time.monotonic()
    done = torchrun(2, "fail", tmp_path)
    assert done.returncode != 0
    assert time.monotonic() - started < 120  # no collective left waiting
    assert "rank 1 fails on purpose" in done.stderr
    run = get_summary_lineage(str(tmp_path / "run"))["run"]
    assert run["status"] == "failed"
    assert run["total_steps"] < 26


def sigterm_once_started(command: list[str], out: Path, after: float) -> None:
    """Start the torchrun job ``command``, wait for its ``out/started`` file, then ``after``
    seconds, send torchrun SIGTERM and wait for the job to end."""
    proc = subprocess.Popen(
        command, cwd=ROOT, env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        deadline = time.monotonic() + 120
        while not (out / "started").exists():
            assert proc.poll() is None and time.monotonic() < deadline, "never started"
            time.sleep(0.1)
        time.sleep(after)
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()


def test_sigterm_to_torchrun_finishes_the_step_saves_and_stops_every_rank(tmp_path: Path) -> None:
    tmp_path.mkdir(exist_ok=True)
    sigterm_once_started(_command(2, "signal", tmp_path), tmp_path, after=1.0)
    lineage = get_summary_lineage(str(tmp_path / "run"))
    run = lineage["run"]
    assert run["status"] == "stopped"
    assert run["error"] == "signal"
    assert 0 < run["total_steps"] < 400 * 13
    saved = json.loads(lineage["model"]["path"])["ckpt"]
    assert Path(saved).name.endswith(f"_{13}.ckpt")  # saved at the agreed stop, an epoch end
    assert load_checkpoint(saved)


def test_a_sharded_save_resumes_on_another_world_size_like_a_full_state(tmp_path: Path) -> None:
    sharded, full = tmp_path / "sharded", tmp_path / "full"
    for out, mode in ((sharded, "sharded"), (full, "fit")):
        done = torchrun(2, mode, out)
        assert done.returncode == 0, done.stderr[-3000:]
    shard_dir = sharded / "ckpt" / "net-2_13.ckpt"
    assert is_sharded_checkpoint(shard_dir)
    files = sorted(p.name for p in shard_dir.iterdir())
    assert files == ["manifest.json", "shard_00000.safetensors", "shard_00001.safetensors"]
    for shard in shard_dir.glob("*.safetensors"):  # plain safetensors, readable by the library
        assert load_file(str(shard))
    # the retention of the sharded run kept two directories, as for files
    assert sorted(p.name for p in (sharded / "ckpt").iterdir()) == ["net-2_13.ckpt", "net-2_7.ckpt"]

    results = []
    for out, source in ((tmp_path / "from_sharded", shard_dir), (tmp_path / "from_full", None)):
        origin = source or full / "ckpt" / "net-2_13.ckpt"
        done = torchrun(3, "resume", out, str(origin))
        assert done.returncode == 0, done.stderr[-3000:]
        results.append(ranks(out, 3)[0]["eval"])
    # both forms hold the same weights and optimizer state: resumed runs end identically
    assert results[0] == results[1]


def test_fsdp_full_and_sharded_checkpoints_resume_on_another_world_size(tmp_path: Path) -> None:
    """FSDP2 (``fully_shard``) on 2 processes: the gathered full state (rank 0 writes) and the
    sharded save resume FSDP on 3 processes, and the sharded one resumes a DDP job too."""
    full, sharded = tmp_path / "full", tmp_path / "sharded"
    for out, mode in ((full, "fsdp"), (sharded, "fsdp_sharded")):
        done = torchrun(2, mode, out)
        assert done.returncode == 0, done.stderr[-3000:]
    assert (full / "ckpt" / "net-2_13.ckpt").is_file()
    assert is_sharded_checkpoint(sharded / "ckpt" / "net-2_13.ckpt")
    reference = one_process_eval(load_file(str(full / "weights0.safetensors")))
    assert ranks(full, 2)[0]["eval"]["acc"] == reference["acc"]
    results = []
    for name, mode, origin in (
        ("a", "fsdp_resume", full),
        ("b", "fsdp_resume", sharded),
        ("c", "resume", sharded),
    ):
        done = torchrun(3, mode, tmp_path / name, str(origin / "ckpt" / "net-2_13.ckpt"))
        assert done.returncode == 0, done.stderr[-3000:]
        results.append(ranks(tmp_path / name, 3)[0]["eval"])
    for other in results[1:]:
        assert other == pytest.approx(results[0], rel=1e-6)


@pytest.mark.skipif(
    not torch.cuda.is_available() or torch.cuda.device_count() < 2,
    reason="the nccl path needs 2 CUDA devices; this machine has none",
)
def test_fit_under_torchrun_with_nccl(tmp_path: Path) -> None:  # pragma: no cover - GPU only
    done = torchrun(2, "fit", tmp_path, "nccl")
    assert done.returncode == 0, done.stderr[-3000:]
    reference = one_process_eval(load_file(str(tmp_path / "weights0.safetensors")))
    assert ranks(tmp_path, 2)[0]["eval"]["acc"] == pytest.approx(reference["acc"])
