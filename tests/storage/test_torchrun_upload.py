"""Under torchrun, every rank's ``fit()`` returns only after the run is in the bucket (issue
"A team store you can trust", item 2): rank 0 writes and uploads the lineage, summaries and
checkpoint; training ends with a barrier after that upload, so rank 1, listing the bucket the
moment its own ``fit()`` returns, already sees rank 0's files. Rank 0's uploads are slowed
(0.5 s each) so that a rank returning before the upload would see an empty bucket."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow

WORKER = """
import json, sys
import boto3, torch
import torch.distributed as dist
from torch import nn
from trainledger.callbacks import ModelCheckpoint, SummaryCollector, TrainLineage
from trainledger.run import Model

url, out = sys.argv[1], sys.argv[2]
client = boto3.client("s3")  # ready before fit: the listing follows its return at once
dist.init_process_group("gloo")
rank = dist.get_rank()
if rank == 0:  # a slow store: the other rank must still wait for the upload
    import time
    from trainledger.storage.objects import ObjectStore
    put = ObjectStore.put_file
    def slow_put(self, local, loc):
        time.sleep(0.5)
        put(self, local, loc)
    ObjectStore.put_file = slow_put
torch.manual_seed(0)
net = nn.parallel.DistributedDataParallel(nn.Linear(4, 2))
model = Model(net, nn.MSELoss(), torch.optim.SGD(net.parameters(), lr=0.1))
data = [(torch.randn(8, 4), torch.randn(8, 2)) for _ in range(4)]
model.fit(2, data, callbacks=[
    SummaryCollector(url, collect_specified_data={"collect_landscape": None}),
    TrainLineage(url), ModelCheckpoint("m", url)])
listed = client.list_objects_v2(Bucket=url.split("/")[2]).get("Contents", [])
with open(f"{out}/rank{rank}.json", "w") as fh:
    json.dump({o["Key"]: o["Size"] for o in listed}, fh)
dist.destroy_process_group()
"""


def test_every_rank_returns_after_rank_0_uploaded(s3_bucket: str, tmp_path: Path) -> None:
    script = tmp_path / "worker.py"
    script.write_text(textwrap.dedent(WORKER))
    url = f"s3://{s3_bucket}/runs/ddp"
    done = subprocess.run(
        [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2",
         str(script), url, str(tmp_path)],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(REPO / "src"), "OMP_NUM_THREADS": "1"},
        capture_output=True,
        text=True,
        timeout=240,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    assert "could not upload" not in done.stderr
    import boto3

    listed = boto3.client("s3").list_objects_v2(Bucket=s3_bucket).get("Contents", [])
    final = {o["Key"]: o["Size"] for o in listed}  # the bucket once the job is over
    assert any(k.endswith("_lineage") for k in final) and any(k.endswith(".ckpt") for k in final)
    assert any("tfevents" in k for k in final), final
    for rank in (0, 1):  # what each rank saw when its fit() returned: all of it, complete
        seen = json.loads((tmp_path / f"rank{rank}.json").read_text())
        assert seen == final, (rank, seen, final)
