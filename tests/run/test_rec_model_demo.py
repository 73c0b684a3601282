"""The online CTR example: hashed embeddings, the drifting click stream, the producer process
feeding FileTailSource, and ``trainledger.demos.online_ctr.run`` end to end."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import numpy as np
import pytest
import torch

from trainledger.checkpoint import load_checkpoint
from trainledger.data import FileTailSource
from trainledger.demos.click_stream import ClickStream, collate_clicks, produce
from trainledger.demos.ctr_model import DeepFM, HashedEmbedding
from trainledger.lineage.reader import read_lineage
from trainledger.summary.reader import read_scalars


def test_hashed_embedding_maps_unbounded_ids_into_the_table() -> None:
    emb = HashedEmbedding(num_fields=2, num_buckets=1000, dim=4)
    ids = torch.tensor([[0, 0], [7, 7], [10**15, -5], [2**62, 123456789]])
    rows = emb.bucket(ids)
    assert rows.min() >= 0 and rows.max() < 1000
    assert rows[1, 0] != rows[1, 1]  # same id, different fields: different rows (salted)
    assert torch.equal(rows, HashedEmbedding(2, 1000, 4).bucket(ids))  # deterministic
    assert emb(ids).shape == (4, 2, 4)
    spread = emb.bucket(torch.arange(10_000).reshape(-1, 1).repeat(1, 2))[:, 0]
    assert len(set(spread.tolist())) > 990  # consecutive ids spread over the table


def test_deepfm_trains_on_the_click_stream() -> None:
    stream = ClickStream(seed=1)
    net = DeepFM(num_fields=5, num_dense=2, num_buckets=4096, dim=4)
    opt = torch.optim.Adam(net.parameters(), lr=1e-2)
    loss_fn = torch.nn.BCEWithLogitsLoss()
    losses = []
    for _ in range(30):
        ids, dense, y = collate_clicks(stream.next_chunk(256))
        loss = loss_fn(net(ids, dense), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(float(loss.detach()))
    assert np.mean(losses[-5:]) < np.mean(losses[:5])


def test_click_probability_drifts_and_records_are_reproducible() -> None:
    a, b = ClickStream(seed=3), ClickStream(seed=3)
    assert a.next_chunk(50) == b.next_chunk(50)
    cols = {
        "user": np.full(24, 5),
        "item": np.full(24, 9),
        "cat": np.arange(24),
        "device": np.zeros(24, dtype=int),
        "pos": np.zeros(24, dtype=int),
    }
    early = a.click_probability(cols, np.zeros(24))
    later = a.click_probability(cols, np.full(24, a.drift_period / 2))
    assert np.abs(early - later).max() > 0.2  # what is "hot" has changed


@pytest.mark.slow
def test_producer_process_feeds_the_file_tail_source(tmp_path: Path) -> None:
    import multiprocessing

    ctx = multiprocessing.get_context("spawn")
    offsets = tmp_path / "off.json"
    proc = ctx.Process(
        target=produce,
        args=(str(tmp_path), str(offsets)),
        kwargs={
            "total": 2500,
            "records_per_file": 1000,
            "chunk": 250,
            "bad_every": 1000,
            "max_pending_files": 2,
        },
    )
    proc.start()
    source = FileTailSource(
        tmp_path,
        pattern="part-*.jsonl",
        batch_size=100,
        collate_fn=collate_clicks,
        offsets_path=offsets,
        commit_interval=1e-3,
        poll_interval=0.01,
    )
    watchdog = threading.Timer(60, source.close)  # bounded, even if the producer hangs
    watchdog.start()
    with pytest.warns(Warning):
        batches = list(source)
    watchdog.cancel()
    proc.join(30)
    assert proc.exitcode == 0
    assert sum(len(b[2]) for b in batches) == 2500
    assert source.bad_records == 2  # t = 999 and t = 1999
    assert json.loads(offsets.read_text())["offsets"]  # committed for the producer to read


@pytest.mark.slow
def test_online_ctr_run_end_to_end(tmp_path: Path) -> None:
    from trainledger.demos.online_ctr import run

    # 200 x 64 records span two of the producer's 10,000-record files, so the producer's
    # back-pressure on the consumer's committed offsets is exercised
    result = run(
        tmp_path, max_steps=200, batch_size=64, checkpoint_seconds=1, log_every=10, quiet=True
    )
    assert result["steps"] == 200 and result["stop_reason"] == "max_steps"
    assert set(result["window_metrics"]) == {"auc", "logloss"}
    assert result["records_read"] >= 200 * 64
    run_dir = Path(result["run_dir"])
    assert run_dir == tmp_path / "online_ctr"
    record = read_lineage(run_dir)
    assert record["run"]["status"] == "finished"
    assert record["run"]["bad_records"] == result["bad_records"]
    assert record["hyper_parameters"]["batch_size"] == 64
    scalars = read_scalars(run_dir)
    assert {"loss/auto", "window/auc", "window/logloss", "eval/auc"} <= set(scalars)
    params = load_checkpoint(result["latest_checkpoint"])
    assert params["step_num"] == 200
    # running the demo again replaces its own run (no online_ctr_2 beside it)
    again = run(tmp_path, max_steps=5, batch_size=32, quiet=True)
    assert again["run_dir"] == str(run_dir) and not (tmp_path / "online_ctr_2").exists()
    assert read_lineage(run_dir)["run"]["total_steps"] == 5
