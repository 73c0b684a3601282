"""The summary readers on a path that is a mistake (missing, a file) and on an ``s3://`` URL
served by a real S3 server (moto): an error naming what was given, never ``{}``; a run in a
bucket reads the same values as the same run on disk."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from trainledger.errors import ObjectNotFoundError, ObjectStoreError, PathNotFoundError
from trainledger.summary import (
    read_histograms,
    read_images,
    read_scalar_sessions,
    read_scalars,
    read_tensors,
)
from trainledger.summary.record import SummaryRecord

READERS: list[Callable[[Any], dict[str, Any]]] = [
    read_scalars,
    read_scalar_sessions,
    read_images,
    read_histograms,
    read_tensors,
]


def _write_run(run: Path) -> None:
    rng = np.random.default_rng(0)
    with SummaryRecord(run) as rec:
        for step in range(3):
            rec.add_scalar("loss", 1.0 / (step + 1), step, wall_time=100.0 + step)
            rec.add_histogram("weights", rng.standard_normal(100) + step, step)
            rec.add_image("rgb", rng.integers(0, 255, (4, 5, 3), dtype=np.uint8), step,
                          dataformats="HWC")  # fmt: skip
            rec.add_tensor("f32", rng.standard_normal((2, 3)).astype(np.float32), step)


def _plain(value: Any) -> Any:
    """A reader's answer as comparable plain values (arrays as lists, events as dicts)."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, np.ndarray):
        return value.tolist()
    if hasattr(value, "__dataclass_fields__"):
        return {k: _plain(getattr(value, k)) for k in value.__dataclass_fields__}
    return value


@pytest.mark.parametrize("reader", READERS, ids=lambda r: r.__name__)
def test_a_missing_run_is_an_error_naming_it(reader: Any, tmp_path: Path) -> None:
    missing = tmp_path / "no-such-run"
    with pytest.raises(PathNotFoundError, match="no-such-run.*no such directory") as caught:
        reader(missing)
    assert isinstance(caught.value, FileNotFoundError)
    (tmp_path / "a-file").write_text("x")
    with pytest.raises(PathNotFoundError, match="a-file.*not a directory"):
        reader(tmp_path / "a-file")
    (tmp_path / "empty-run").mkdir()  # a run that logged nothing is no mistake: {}
    assert reader(tmp_path / "empty-run") == {}


def test_a_run_in_a_bucket_reads_as_on_disk(s3_bucket: str, tmp_path: Path) -> None:
    import boto3

    run = tmp_path / "run"
    _write_run(run)
    client = boto3.client("s3")
    for path in run.rglob("*"):
        if path.is_file():
            client.upload_file(str(path), s3_bucket, f"base/run/{path.relative_to(run)}")
    url = f"s3://{s3_bucket}/base/run"
    for reader in READERS:
        here = _plain(reader(run))
        assert here and _plain(reader(url)) == here, reader.__name__
    for reader in READERS:
        with pytest.raises(ObjectNotFoundError, match=f"s3://{s3_bucket}/base/nope") as caught:
            reader(f"s3://{s3_bucket}/base/nope")
        assert isinstance(caught.value, FileNotFoundError)
    with pytest.raises(ObjectStoreError, match="no-such-bucket-tl"):
        read_scalars("s3://no-such-bucket-tl/base/run")
