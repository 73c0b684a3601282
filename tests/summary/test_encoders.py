"""Pure encoders: values in, protobuf messages out."""

from __future__ import annotations

import io

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from PIL import Image

from trainledger.storage import framing
from trainledger.summary import encoders, scalar_bytes
from trainledger.summary.proto import summary_pb2 as pb


def _decode_png(data: bytes) -> np.ndarray:
    return np.asarray(Image.open(io.BytesIO(data)))


@pytest.mark.parametrize(
    "value", [1.5, 3, np.float32(1.5), np.array([1.5]), torch.tensor(1.5), torch.tensor([[2.0]])]
)
def test_scalar_accepts_numbers_arrays_and_tensors(value):
    assert encoders.scalar("a", value).simple_value == pytest.approx(
        float(np.asarray(value).ravel()[0])
    )


def test_scalar_of_bfloat16_tensor():
    assert encoders.scalar("a", torch.tensor(0.5, dtype=torch.bfloat16)).simple_value == 0.5


@pytest.mark.parametrize(
    "value,exc", [(np.zeros(3), ValueError), ("x", TypeError), (np.array([]), ValueError)]
)
def test_scalar_rejects_non_scalars(value, exc):
    with pytest.raises(exc):
        encoders.scalar("a", value)


def test_histogram_buckets_count_every_finite_value():
    values = np.concatenate([np.arange(100, dtype=np.float64), [np.nan, np.inf]])
    h = encoders.make_histogram(values, bins=10)
    assert h.num == 100 and sum(h.bucket) == 100
    assert len(h.bucket_limit) == 10 and h.bucket_limit[-1] == 99.0
    assert h.min == 0 and h.max == 99
    assert h.sum == pytest.approx(4950) and h.sum_squares == pytest.approx(328350)
    assert list(h.bucket_limit) == sorted(h.bucket_limit)


def test_histogram_of_constant_and_empty():
    h = encoders.make_histogram(np.full(7, 2.0))
    assert h.num == 7 and sum(h.bucket) == 7 and h.min == h.max == 2.0
    empty = encoders.make_histogram(np.array([np.nan]))
    assert empty.num == 0 and list(empty.bucket) == [0.0]


@pytest.mark.parametrize("bins", [0, -1, 2.5, True])
def test_histogram_rejects_bad_bins(bins):
    with pytest.raises(ValueError):
        encoders.make_histogram([1.0], bins=bins)


def test_histogram_of_torch_parameter():
    p = torch.nn.Parameter(torch.randn(50))
    assert encoders.histogram("w", p).histo.num == 50


@pytest.mark.parametrize(
    "shape,fmt,expected_hwc",
    [
        ((3, 4, 5), None, (4, 5, 3)),  # CHW
        ((1, 4, 5), None, (4, 5, 1)),  # CHW gray
        ((4, 5, 3), None, (4, 5, 3)),  # HWC
        ((4, 5), None, (4, 5, 1)),  # HW
        ((3, 4, 3), "HWC", (3, 4, 3)),  # ambiguous, told
    ],
)
def test_image_layouts(shape, fmt, expected_hwc):
    arr = np.random.default_rng(0).random(shape)
    hwc = encoders.to_hwc_uint8(arr, fmt)
    assert hwc.shape == expected_hwc and hwc.dtype == np.uint8


def test_image_chw_float_round_trips_through_png():
    rng = np.random.default_rng(1)
    chw = rng.integers(0, 256, size=(3, 6, 7)).astype(np.float32) / 255.0
    v = encoders.image("img", chw)
    assert (v.image.height, v.image.width, v.image.colorspace) == (6, 7, 3)
    decoded = _decode_png(v.image.encoded_image_string)
    np.testing.assert_array_equal(decoded, np.round(chw.transpose(1, 2, 0) * 255).astype(np.uint8))


def test_image_uint8_gray_exact():
    img = np.arange(20, dtype=np.uint8).reshape(1, 4, 5)
    v = encoders.image("g", img)
    assert v.image.colorspace == 1
    np.testing.assert_array_equal(_decode_png(v.image.encoded_image_string), img[0])


def test_image_nchw_batch_becomes_grid():
    batch = torch.rand(5, 3, 8, 8)
    hwc = encoders.to_hwc_uint8(batch)
    # 5 images -> 3 columns x 2 rows with 2-pixel gaps
    assert hwc.shape == (2 * 8 + 2, 3 * 8 + 4, 3)
    np.testing.assert_array_equal(
        hwc[:8, :8], (batch[0].permute(1, 2, 0).numpy() * 255 + 0.5).astype(np.uint8)
    )


def test_image_float_is_clipped():
    hwc = encoders.to_hwc_uint8(np.array([[-1.0, 0.5, 2.0, np.nan]]))
    assert hwc[0, :, 0].tolist() == [0, 128, 255, 0]


@pytest.mark.parametrize(
    "value,exc",
    [
        (np.zeros((2, 5, 5)), ValueError),  # 2 channels
        (np.zeros((5,)), ValueError),
        (np.zeros((1, 1, 1, 1, 1)), ValueError),
        (np.full((4, 4), 300, dtype=np.int32), ValueError),
        (np.array([["a"]]), TypeError),
    ],
)
def test_image_rejects_bad_input(value, exc):
    with pytest.raises(exc):
        encoders.to_hwc_uint8(value)


def test_text_uses_text_plugin_and_string_tensor():
    v = encoders.text("notes", "héllo")
    assert v.metadata.plugin_data.plugin_name == "text"
    assert v.tensor.dtype == pb.DT_STRING
    assert list(v.tensor.string_val) == ["héllo".encode()]
    with pytest.raises(TypeError):
        encoders.text("notes", 3)  # type: ignore[arg-type]


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "uint8", "bool", "float16"])
def test_tensor_round_trips(dtype):
    arr = (np.arange(6).reshape(2, 3) % 2).astype(dtype)
    t = encoders.make_tensor_proto(arr)
    assert [d.size for d in t.tensor_shape.dim] == [2, 3]
    back = np.frombuffer(t.tensor_content, dtype=np.dtype(dtype).newbyteorder("<")).reshape(2, 3)
    np.testing.assert_array_equal(back, arr)


def test_tensor_of_strings_and_bad_dtype():
    t = encoders.make_tensor_proto(np.array(["a", "b"]))
    assert t.dtype == pb.DT_STRING and list(t.string_val) == [b"a", b"b"]
    with pytest.raises(TypeError):
        encoders.make_tensor_proto(np.array([np.datetime64("2020-01-01")]))


def test_file_version_event():
    e = encoders.file_version_event(12.5)
    assert e.file_version == "brain.Event:2" and e.wall_time == 12.5 and e.step == 0


@settings(max_examples=300, deadline=None)
@given(
    tag=st.text(min_size=1, max_size=200),
    value=st.floats(allow_nan=True, allow_infinity=True) | st.floats(width=32),
    step=st.integers(min_value=-(2**63), max_value=2**63 - 1),
    wall_time=st.floats(allow_nan=False) | st.sampled_from([0.0, -0.0, 1.7e9]),
)
def test_scalar_event_fast_path_equals_protobuf(tag, value, step, wall_time):
    expected = encoders.event(step, wall_time, [encoders.scalar(tag, value)]).SerializeToString()
    assert scalar_bytes.scalar_event_bytes(tag, value, step, wall_time) == expected


@settings(max_examples=200, deadline=None)
@given(
    pairs=st.lists(
        st.tuples(st.text(min_size=1, max_size=150), st.floats() | st.floats(width=32)),
        min_size=1,
        max_size=6,
    ),
    step=st.integers(min_value=-(2**63), max_value=2**63 - 1),
    wall_time=st.floats(allow_nan=False),
)
def test_several_scalars_fast_path_equals_protobuf(pairs, step, wall_time):
    values = [encoders.scalar(tag, value) for tag, value in pairs]
    expected = encoders.event(step, wall_time, values).SerializeToString()
    assert scalar_bytes.scalars_event_bytes(pairs, step, wall_time) == expected


@settings(max_examples=200, deadline=None)
@given(
    tags=st.lists(st.text(min_size=1, max_size=150), min_size=1, max_size=4),
    data=st.data(),
)
def test_scalar_rows_records_equal_framed_protobuf(tags, data):
    """The vectorised row path gives, record for record, the framed protobuf encoding: any
    step (0 and negatives change the layout), any wall time (+0.0 is omitted, -0.0 is not),
    any value (beyond float32 is +-inf; ints), in segments of mixed layouts."""
    n = len(tags)
    number = st.floats() | st.integers(min_value=-(2**70), max_value=2**70)
    rows = data.draw(
        st.lists(
            st.tuples(
                st.integers(min_value=-(2**63), max_value=2**63 - 1)
                | st.sampled_from([0, 1, 127, 128, 16383, 16384]),
                st.floats(allow_nan=False) | st.sampled_from([0.0, -0.0, 1.7e9]),
                *[number for _ in range(n)],
            ),
            max_size=12,
        )
    )
    chunks = scalar_bytes.scalar_rows_records(tuple(tags), rows)
    expected = [
        framing.frame(
            encoders.event(
                row[0], row[1], [encoders.scalar(t, v) for t, v in zip(tags, row[2:], strict=True)]
            ).SerializeToString()
        )
        for row in rows
    ]
    assert b"".join(blob for blob, _ in chunks) == b"".join(expected)
    records = [blob[i : i + size] for blob, size in chunks for i in range(0, len(blob), size)]
    assert records == expected  # chunk record sizes are right: the writer splits on them
