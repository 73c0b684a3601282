"""Histograms counted where the tensors live (callbacks/tensor_buckets.py): the same buckets
and statistics as numpy's histogram of the same values, on the CPU and on a device (the fake
device of tests/run/fake_device.py, whose host reads are counted), and no host read on a
device before the record's one copy."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import torch

from tests.run.fake_device import READS, FakeDeviceTensor, on_device
from trainledger.callbacks.tensor_buckets import DeviceBuckets, cpu_buckets
from trainledger.summary.encoders import make_histogram

nan, inf = float("nan"), float("inf")
CASES: dict[str, torch.Tensor] = {
    "normal float32": torch.randn(64, 33, generator=torch.Generator().manual_seed(0)),
    "float64 with NaN and inf": torch.tensor([1.0, nan, 2.5, inf, -inf, 2.0, -3.0]).double(),
    "constant": torch.full((3, 2), 7.0),
    "all non-finite": torch.tensor([nan, inf]),
    "empty": torch.zeros(0, 4),
    "int64": torch.arange(-5, 17).reshape(2, 11),
    "bfloat16": torch.linspace(-2, 3, 50).to(torch.bfloat16),
    "one value": torch.tensor([0.25]),
}


def _proto_fields(h: Any) -> dict[str, Any]:
    return {
        "min": h.min,
        "max": h.max,
        "num": h.num,
        "sum": h.sum,
        "sum_squares": h.sum_squares,
        "bucket_limit": list(h.bucket_limit),
        "bucket": list(h.bucket),
    }


def _assert_same(ours: Any, numpy_made: Any) -> None:
    a, b = _proto_fields(ours), _proto_fields(numpy_made)
    assert a["bucket"] == b["bucket"]
    assert a["num"] == b["num"] and a["min"] == b["min"] and a["max"] == b["max"]
    np.testing.assert_allclose(a["bucket_limit"], b["bucket_limit"], rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose([a["sum"], a["sum_squares"]], [b["sum"], b["sum_squares"]])


def _reference(t: torch.Tensor, bins: int) -> Any:
    return make_histogram(t.float().numpy() if t.dtype == torch.bfloat16 else t.numpy(), bins)


@pytest.mark.parametrize("bins", [1, 4, 30])
@pytest.mark.parametrize("name", list(CASES))
def test_cpu_buckets_are_numpys(name: str, bins: int) -> None:
    t = CASES[name]
    _assert_same(make_histogram(cpu_buckets(t, bins)), _reference(t, bins))


@pytest.mark.parametrize("bins", [1, 4, 30])
def test_device_buckets_of_many_tensors_are_numpys_without_a_host_read(bins: int) -> None:
    tensors = list(CASES.values())
    maker = DeviceBuckets(bins)
    READS.reads.clear()
    packed = maker.count(on_device(tensors))
    assert READS.reads == []  # counted on the device: nothing waited for it
    assert isinstance(packed, FakeDeviceTensor) and packed.shape == (len(tensors), 7 + bins)
    for t, ours in zip(tensors, maker.unpack(packed.elem), strict=True):
        _assert_same(make_histogram(ours), _reference(t, bins))


def test_device_buckets_keep_the_segment_index_of_a_set_of_sizes() -> None:
    maker = DeviceBuckets(8)
    first = on_device([torch.randn(5), torch.randn(2, 3)])
    maker.count(first)
    maker.count(on_device([torch.randn(5), torch.randn(2, 3)]))
    assert len(maker._segments) == 1
    maker.count(on_device([torch.randn(6)]))
    assert len(maker._segments) == 2


@pytest.mark.parametrize("dtype", [torch.complex64, torch.bool])
def test_histograms_of_values_that_are_not_real_numbers_are_refused(dtype: torch.dtype) -> None:
    t = torch.zeros(3, dtype=dtype)
    with pytest.raises(TypeError, match=f"expected real numbers, received dtype {dtype}"):
        cpu_buckets(t, 4)
    with pytest.raises(TypeError, match="expected real numbers"):
        DeviceBuckets(4).count(on_device([t]))
