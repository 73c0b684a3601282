"""Images, histograms and tensors from TensorBoard files we write (checked against
TensorBoard's own ``EventAccumulator``), and the PNG decoder (checked against Pillow)."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pytest

from trainledger.summary import read_histograms, read_images, read_tensors
from trainledger.summary.encoders import encode_png
from trainledger.summary.media import decode_png
from trainledger.summary.record import SummaryRecord


@pytest.fixture(scope="module")
def tb_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    run = tmp_path_factory.mktemp("tb")
    rng = np.random.default_rng(0)
    with SummaryRecord(run) as rec:
        for step in range(5):
            rec.add_histogram("weights", rng.standard_normal(1000) + step, step)
            rec.add_image("rgb", rng.integers(0, 255, (6, 7, 3), dtype=np.uint8), step,
                          dataformats="HWC")  # fmt: skip
            rec.add_tensor("f32", rng.standard_normal((2, 3)).astype(np.float32), step)
            rec.add_tensor("i64", np.arange(4, dtype=np.int64) * step, step)
            rec.add_tensor("flags", np.array([True, step % 2 == 0]), step)
            rec.add_scalar("loss", 1.0 / (step + 1), step)
            rec.add_text("note", "not a tensor for read_tensors", step)
    return run


def _accumulator(run: Path):  # type: ignore[no-untyped-def]
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    size = {"images": 0, "histograms": 0, "tensors": 0, "scalars": 0}
    acc = EventAccumulator(str(run), size_guidance=size)
    acc.Reload()
    return acc


def test_histograms_equal_tensorboards(tb_run: Path) -> None:
    ours = read_histograms(tb_run)
    theirs = _accumulator(tb_run).Histograms("weights")
    assert list(ours) == ["weights"] and len(ours["weights"]) == len(theirs) == 5
    for mine, event in zip(ours["weights"], theirs, strict=True):
        h = event.histogram_value
        assert mine.step == event.step and mine.wall_time == event.wall_time
        assert mine.rights.tolist() == list(h.bucket_limit)
        assert mine.counts.tolist() == list(h.bucket)
        assert (mine.min, mine.max, mine.count, mine.sum) == (h.min, h.max, h.num, h.sum)
        assert mine.counts.sum() == 1000 and mine.lefts[0] == h.min
        assert (mine.lefts[1:] == mine.rights[:-1]).all()


def test_images_equal_tensorboards(tb_run: Path) -> None:
    ours = read_images(tb_run)["rgb"]
    theirs = _accumulator(tb_run).Images("rgb")
    assert len(ours) == len(theirs) == 5
    for mine, event in zip(ours, theirs, strict=True):
        assert mine.encoded == event.encoded_image_string
        assert (mine.step, mine.height, mine.width) == (event.step, event.height, event.width)
        from PIL import Image

        pixels = np.asarray(Image.open(io.BytesIO(mine.encoded)))
        assert np.array_equal(mine.array(), pixels)


def test_tensors_keep_dtype_and_shape(tb_run: Path) -> None:
    ours = read_tensors(tb_run)
    assert set(ours) == {"f32", "i64", "flags"}  # scalars and text belong to other plugins
    from tensorboard.util import tensor_util

    acc = _accumulator(tb_run)
    for tag, series in ours.items():
        theirs = acc.Tensors(tag)
        assert len(series) == len(theirs) == 5
        for mine, event in zip(series, theirs, strict=True):
            want = tensor_util.make_ndarray(event.tensor_proto)
            assert mine.value.dtype == want.dtype and np.array_equal(mine.value, want)
    assert ours["i64"][3].value.tolist() == [0, 3, 6, 9]


@pytest.mark.parametrize("mode", ["L", "LA", "RGB", "RGBA"])
@pytest.mark.parametrize("size", [(1, 1), (5, 3), (33, 17)])
def test_decode_png_equals_pillow(mode: str, size: tuple[int, int]) -> None:
    from PIL import Image

    rng = np.random.default_rng(sum(size))
    channels = len(mode)
    # smooth gradients plus noise make Pillow's adaptive filter pick every filter type
    base = np.add.outer(np.arange(size[1]), np.arange(size[0]))[..., None] * 7
    arr = ((base + rng.integers(0, 9, (size[1], size[0], channels))) % 256).astype(np.uint8)
    img = Image.fromarray(arr[..., 0] if channels == 1 else arr, mode)
    buf = io.BytesIO()
    img.save(buf, format="PNG", optimize=True)
    got = decode_png(buf.getvalue())
    assert got is not None and np.array_equal(got, arr.reshape(got.shape))
    if channels != 2:  # encode_png writes gray, RGB and RGBA
        assert np.array_equal(decode_png(encode_png(arr)), arr)


def test_decode_png_refuses_what_it_cannot_read() -> None:
    from PIL import Image

    buf = io.BytesIO()
    Image.new("P", (4, 4)).save(buf, format="PNG")  # palette
    assert decode_png(buf.getvalue()) is None
    good = encode_png(np.zeros((3, 3, 3), dtype=np.uint8))
    assert decode_png(good[:-30]) is None  # truncated
    assert decode_png(b"GIF89a....") is None


def _filtered_png(arr: np.ndarray) -> bytes:
    """A PNG of ``arr`` (H x W x C uint8) whose rows use filters 0-4 in turn (Pillow picks
    only some), each computed from the specification's formulas."""
    import struct
    import zlib

    h, w, c = arr.shape
    raw = arr.reshape(h, w * c).astype(np.int32)
    rows = []
    for y in range(h):
        kind, line = y % 5, raw[y]
        prior = raw[y - 1] if y else np.zeros_like(line)
        left = np.concatenate([np.zeros(c, np.int32), line[:-c]])
        up_left = np.concatenate([np.zeros(c, np.int32), prior[:-c]])
        if kind == 0:
            pred = np.zeros_like(line)
        elif kind == 1:
            pred = left
        elif kind == 2:
            pred = prior
        elif kind == 3:
            pred = (left + prior) >> 1
        else:
            p = left + prior - up_left
            pa, pb, pc = abs(p - left), abs(p - prior), abs(p - up_left)
            pred = np.where((pa <= pb) & (pa <= pc), left, np.where(pb <= pc, prior, up_left))
        rows.append(bytes([kind]) + ((line - pred) % 256).astype(np.uint8).tobytes())

    def chunk(kind: bytes, data: bytes) -> bytes:
        return (
            struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
        )

    color = {1: 0, 2: 4, 3: 2, 4: 6}[c]
    header = struct.pack(">IIBBBBB", w, h, 8, color, 0, 0, 0)
    body = zlib.compress(b"".join(rows))
    return (
        b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", body) + chunk(b"IEND", b"")
    )


@pytest.mark.parametrize("channels", [1, 2, 3, 4])
def test_decode_png_undoes_every_filter(channels: int) -> None:
    from PIL import Image

    arr = np.random.default_rng(channels).integers(0, 256, (11, 9, channels), dtype=np.uint8)
    png = _filtered_png(arr)
    pillow = np.asarray(Image.open(io.BytesIO(png)))  # the test's encoder is right
    assert np.array_equal(pillow.reshape(arr.shape), arr)
    assert np.array_equal(decode_png(png), arr)
