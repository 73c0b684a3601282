"""RecordBatcher: bad records are counted and dropped, and only they are."""

from __future__ import annotations

import warnings

import pytest
import torch

from trainledger.data.batcher import BadRecordWarning, RecordBatcher


def _batcher(batch_size: int) -> RecordBatcher:
    return RecordBatcher(batch_size, None, None, "test")


def test_a_ragged_record_is_dropped_alone() -> None:
    batcher = _batcher(4)
    records = [{"x": [1.0, 2.0]}, {"x": [3.0]}, {"x": [5.0, 6.0]}, {"x": [7.0, 8.0]}]
    with pytest.warns(BadRecordWarning, match="shape does not match"):
        batch = None
        for i, record in enumerate(records):
            batch = batcher.add(record, f"#{i}")
    assert batcher.bad_records == 1
    assert torch.equal(batch["x"][0], torch.tensor([1.0, 5.0, 7.0]))  # x is a list of columns


def test_records_that_do_not_collate_alone_are_dropped() -> None:
    batcher = _batcher(3)
    with pytest.warns(BadRecordWarning, match="collate_fn raised"):
        batcher.add({"x": 1.0}, "#0")
        batcher.add({"x": object()}, "#1")
        batch = batcher.add({"x": 2.0}, "#2")
    assert batcher.bad_records == 1
    assert batch["x"].tolist() == [1.0, 2.0]


def test_clean_batches_warn_nothing() -> None:
    batcher = _batcher(2)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert batcher.add({"x": 1.0}, "#0") is None
        assert batcher.add({"x": 2.0}, "#1")["x"].tolist() == [1.0, 2.0]
    assert batcher.bad_records == 0
