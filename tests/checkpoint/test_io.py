"""save_checkpoint / load_checkpoint / load_param_into_net / latest_checkpoint."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import pytest
import torch

from trainledger.checkpoint import (
    checkpoint_info,
    latest_checkpoint,
    load_checkpoint,
    load_param_into_net,
    read_checkpoint,
    save_checkpoint,
    wait_async_save,
)
from trainledger.errors import CheckpointLoadError, ObjectNotFoundError
from trainledger.storage import TEMP_MARKER


class Net(torch.nn.Module):
    def __init__(self, hidden: int = 4) -> None:
        super().__init__()
        self.fc1 = torch.nn.Linear(3, hidden)
        self.bn = torch.nn.BatchNorm1d(hidden)
        self.fc2 = torch.nn.Linear(hidden, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(self.bn(self.fc1(x)))


def same(a: torch.nn.Module, b: torch.nn.Module) -> bool:
    sa, sb = a.state_dict(), b.state_dict()
    return sa.keys() == sb.keys() and all(torch.equal(sa[k], sb[k]) for k in sa)


def test_module_state_dict_and_list_forms(tmp_path: Path) -> None:
    net = Net()
    save_checkpoint(net, tmp_path / "m")  # suffix added
    assert (tmp_path / "m.ckpt").exists()
    save_checkpoint(net.state_dict(), tmp_path / "s.ckpt")
    save_checkpoint(
        [{"name": k, "data": v} for k, v in net.state_dict().items()], tmp_path / "l.ckpt"
    )
    for name in ("m", "s", "l"):
        other = Net()
        load_checkpoint(tmp_path / f"{name}.ckpt", net=other, strict_load=True)
        assert same(net, other)
    order = list(load_checkpoint(tmp_path / "l.ckpt"))
    assert order == list(net.state_dict())  # name order preserved


def test_save_obj_errors(tmp_path: Path) -> None:
    with pytest.raises(TypeError, match="save_obj expected"):
        save_checkpoint(3, tmp_path / "x.ckpt")
    with pytest.raises(TypeError, match=r"save_obj\[0\]"):
        save_checkpoint([{"name": "a"}], tmp_path / "x.ckpt")
    with pytest.raises(ValueError, match="reserved prefix"):
        save_checkpoint({"__optimizer__/0": torch.ones(1)}, tmp_path / "x.ckpt")
    with pytest.raises(TypeError, match="append_dict"):
        save_checkpoint({"a": torch.ones(1)}, tmp_path / "x.ckpt", append_dict={"t": [1]})
    assert not list(tmp_path.iterdir())


def test_append_dict_and_info(tmp_path: Path) -> None:
    path = tmp_path / "a.ckpt"
    save_checkpoint(
        {"w": torch.ones(2)},
        path,
        append_dict={"epoch_num": 3, "lr": 0.5, "tag": "x", "flag": True},
        info={"epoch": 3},
    )
    out = load_checkpoint(path)
    assert out["epoch_num"] == 3 and out["lr"] == 0.5 and out["tag"] == "x" and out["flag"] is True
    assert checkpoint_info(path)["epoch"] == 3


def test_optimizer_round_trip_continues_identically(tmp_path: Path) -> None:
    torch.manual_seed(0)
    x, y = torch.randn(16, 3), torch.randint(0, 2, (16,))

    def step(net: Net, opt: torch.optim.Optimizer) -> None:
        opt.zero_grad()
        torch.nn.functional.cross_entropy(net(x), y).backward()
        opt.step()

    for make in (
        lambda p: torch.optim.Adam(p, lr=0.01, betas=(0.8, 0.9)),
        lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9, nesterov=True),
    ):
        net = Net()
        opt = make(net.parameters())
        for _ in range(3):
            step(net, opt)
        save_checkpoint(net, tmp_path / "o.ckpt", optimizer=opt)
        net2 = Net()
        opt2 = make(net2.parameters())
        load_checkpoint(tmp_path / "o.ckpt", net=net2, optimizer=opt2)
        assert opt2.state_dict()["param_groups"] == opt.state_dict()["param_groups"]
        step(net, opt)
        step(net2, opt2)
        assert same(net, net2)


def test_load_optimizer_without_state_is_error(tmp_path: Path) -> None:
    net = Net()
    save_checkpoint(net, tmp_path / "n.ckpt")
    with pytest.raises(CheckpointLoadError, match="no optimizer state"):
        load_checkpoint(tmp_path / "n.ckpt", optimizer=torch.optim.SGD(net.parameters(), lr=1))
    assert read_checkpoint(tmp_path / "n.ckpt").optimizer_state is None


def test_strict_and_non_strict(tmp_path: Path) -> None:
    net = Net()
    save_checkpoint(net, tmp_path / "n.ckpt")
    bigger = Net(hidden=5)
    params = load_checkpoint(tmp_path / "n.ckpt")
    params["extra"] = torch.ones(2)
    del params["fc2.bias"]
    with pytest.raises(CheckpointLoadError) as info:
        load_param_into_net(bigger, params, strict_load=True)
    text = str(info.value)
    assert "missing in checkpoint: fc2.bias (2,)" in text
    assert "not in net: extra (2,)" in text
    assert "fc1.weight: net (5, 3) vs checkpoint (4, 3)" in text
    param_not_load, ckpt_not_load = load_param_into_net(bigger, params)
    assert "fc2.bias" in param_not_load and "fc1.weight" in param_not_load
    assert "extra" in ckpt_not_load and "fc1.weight" in ckpt_not_load
    other = Net()
    assert load_param_into_net(other, params) == (["fc2.bias"], ["extra"])
    assert torch.equal(other.fc1.weight, net.fc1.weight)


def test_load_param_into_net_types() -> None:
    with pytest.raises(TypeError, match="net expected"):
        load_param_into_net({}, {})
    with pytest.raises(TypeError, match="parameter_dict expected"):
        load_param_into_net(Net(), [1])  # type: ignore[arg-type]


def test_filter_prefix_and_choice_func(tmp_path: Path) -> None:
    net = Net()
    save_checkpoint(net, tmp_path / "n.ckpt", append_dict={"epoch_num": 1})
    out = load_checkpoint(tmp_path / "n.ckpt", filter_prefix="bn.")
    assert not any(k.startswith("bn.") for k in out) and "fc1.weight" in out
    out = load_checkpoint(tmp_path / "n.ckpt", filter_prefix=["bn.", "fc2"])
    assert set(out) == {"fc1.weight", "fc1.bias", "epoch_num"}
    out = load_checkpoint(tmp_path / "n.ckpt", choice_func=lambda n: n.endswith("weight"))
    assert set(out) == {"fc1.weight", "bn.weight", "fc2.weight"}
    fresh = Net()
    load_checkpoint(tmp_path / "n.ckpt", net=fresh, choice_func=lambda n: n.startswith("fc1"))
    assert torch.equal(fresh.fc1.weight, net.fc1.weight)
    assert not torch.equal(fresh.fc2.weight, net.fc2.weight)
    with pytest.raises(TypeError, match="filter_prefix"):
        load_checkpoint(tmp_path / "n.ckpt", filter_prefix=3)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="filter_prefix"):
        load_checkpoint(tmp_path / "n.ckpt", filter_prefix=[""])
    with pytest.raises(TypeError, match="choice_func"):
        load_checkpoint(tmp_path / "n.ckpt", choice_func="fc1")  # type: ignore[arg-type]


def test_latest_checkpoint(tmp_path: Path) -> None:
    assert latest_checkpoint(tmp_path / "missing") is None
    assert latest_checkpoint(tmp_path) is None
    for name in (
        "net-1_5.ckpt",
        "net-2_1.ckpt",
        "net-10_2.ckpt",
        "net-10_2_breakpoint.ckpt",
        "other-99_1.ckpt",
        "net_1-50_1.ckpt",
    ):
        save_checkpoint({"w": torch.ones(1)}, tmp_path / name)
    (tmp_path / f"net-99_9.ckpt{TEMP_MARKER}1-ab").write_bytes(b"partial")
    assert latest_checkpoint(tmp_path, "net") == str(tmp_path / "net-10_2.ckpt")
    assert latest_checkpoint(tmp_path, "net_1") == str(tmp_path / "net_1-50_1.ckpt")
    now = time.time()
    os.utime(tmp_path / "other-99_1.ckpt", (now + 100, now + 100))
    assert latest_checkpoint(tmp_path) == str(tmp_path / "other-99_1.ckpt")
    assert latest_checkpoint(tmp_path, "nope") is None


def test_async_save_checkpoint(tmp_path: Path) -> None:
    net = Net()
    expected = {k: v.clone() for k, v in net.state_dict().items()}
    save_checkpoint(net, tmp_path / "a.ckpt", async_save=True)
    with torch.no_grad():
        net.fc1.weight.add_(1.0)  # training continues; the snapshot is unaffected
    save_checkpoint(net, tmp_path / "b.ckpt", async_save=True)  # waits for a.ckpt first
    wait_async_save()
    a = load_checkpoint(tmp_path / "a.ckpt")
    assert all(torch.equal(a[k], v) for k, v in expected.items())
    assert torch.equal(load_checkpoint(tmp_path / "b.ckpt")["fc1.weight"], net.fc1.weight)


def test_async_save_error_is_raised_later(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import trainledger.checkpoint.format as fmt

    def disk_full(*args: object, **kwargs: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(fmt, "save_container", disk_full)
    save_checkpoint({"w": torch.ones(1)}, tmp_path / "x.ckpt", async_save=True)  # returns
    with pytest.raises(OSError, match="background save of .*x.ckpt failed.*No space"):
        wait_async_save()
    wait_async_save()  # raised once, not again


def test_reading_side_needs_no_torch(tmp_path: Path) -> None:
    import subprocess
    import sys

    save_checkpoint({"w": torch.ones(2)}, tmp_path / "n-1_1.ckpt", info={"epoch": 1})
    code = (
        "import sys\n"
        "from trainledger.checkpoint import latest_checkpoint, checkpoint_info, CheckpointConfig\n"
        f"p = latest_checkpoint({str(tmp_path)!r}, 'n')\n"
        "assert checkpoint_info(p)['epoch'] == 1\n"
        "CheckpointConfig(save_checkpoint_steps=5)\n"
        "assert 'torch' not in sys.modules, 'torch was imported'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_a_file_where_the_directory_should_be_is_named(tmp_path: Path) -> None:
    from trainledger.errors import CheckpointWriteError

    (tmp_path / "file").write_bytes(b"not a directory")
    with pytest.raises(CheckpointWriteError, match=r"expected '.*file' to be a directory"):
        save_checkpoint(torch.nn.Linear(2, 2), str(tmp_path / "file" / "sub" / "w.ckpt"))
    assert (tmp_path / "file").read_bytes() == b"not a directory"


def test_load_checkpoint_onto_a_device_reads_straight_to_it_only_for_cuda(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``device=`` on a CUDA device has the reader put the bytes on the device
    (``DeviceTarget``); any other device reads to the host as before. On a CPU machine the
    CUDA side is checked by what is asked of the reader (tests/gpu loads onto a real GPU)."""
    import trainledger.checkpoint.io as io_mod

    state = {"w": torch.arange(6.0).reshape(2, 3), "b": torch.ones(2, dtype=torch.float16)}
    path = tmp_path / "m.ckpt"
    save_checkpoint(state, str(path))
    asked: list[Any] = []
    real = io_mod.read_checkpoint

    def spy(*args: Any, device: Any = None, **kwargs: Any) -> Any:
        asked.append(device)
        return real(*args, device=None, **kwargs)  # no CUDA here to read to

    monkeypatch.setattr(io_mod, "read_checkpoint", spy)
    loaded = load_checkpoint(path, device="cpu")
    assert asked == ["cpu"]
    moved: list[Any] = []
    monkeypatch.setattr(io_mod, "_to_device", lambda params, device: moved.append(device) or params)
    load_checkpoint(path, device="cuda:0")
    assert asked == ["cpu", "cuda:0"] and moved == ["cuda:0"]
    for name, value in state.items():
        assert loaded[name].device.type == "cpu"
        torch.testing.assert_close(loaded[name], value)
    cuda = ("cuda", "cuda:1", torch.device("cuda", 0))
    assert [io_mod._is_cuda(d) for d in cuda] == [True] * 3
    assert [io_mod._is_cuda(d) for d in (None, "cpu", torch.device("cpu"), "meta")] == [False] * 4


@pytest.mark.parametrize("chunk", [1 << 10, 1 << 20], ids=["many chunks", "one chunk"])
def test_bytes_read_chunk_by_chunk_to_a_device_are_the_files_and_checked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, chunk: int
) -> None:
    """The path of ``load_checkpoint(device="cuda")`` (``DeviceTarget``: each reading thread's
    two buffers in turn, each chunk copied to the device), run here with the CPU as the
    device: the same tensors as a read to the host, and damage or truncation still raises."""
    import trainledger.checkpoint.format as fmt
    from trainledger.checkpoint.torch_adapter import DeviceTarget, container_tensors
    from trainledger.errors import CheckpointFormatError

    monkeypatch.setattr(fmt, "_PARALLEL_READ_MIN", 4 << 10)  # threads, as for a large file
    monkeypatch.setattr(fmt, "_READ_CHUNK", chunk)
    g = torch.Generator().manual_seed(0)
    state = {
        "a": torch.randn(300, 7, generator=g),
        "b": torch.arange(5, dtype=torch.int64),
        "c": torch.randn(33, generator=g).to(torch.bfloat16),
    }
    path = tmp_path / "m.ckpt"
    save_checkpoint(state, str(path))
    targets: list[DeviceTarget] = []

    def target(n: int) -> DeviceTarget:
        targets.append(DeviceTarget("cpu", n))
        return targets[-1]

    container = fmt.read_container(path, target=target)
    assert container.owner is targets[0] and not len(container.data)
    on_device = container_tensors(container)
    on_host = container_tensors(fmt.read_container(path))
    assert sorted(on_device) == sorted(on_host) == sorted(state)
    for name, value in state.items():
        assert torch.equal(on_device[name], value) and torch.equal(on_host[name], value)
    raw = bytearray(path.read_bytes())
    raw[-3] ^= 0x40  # a flipped bit in the last tensor's bytes
    damaged = tmp_path / "damaged.ckpt"
    damaged.write_bytes(bytes(raw))
    with pytest.raises(CheckpointFormatError, match="crc32c"):
        fmt.read_container(damaged, target=target)
    short = tmp_path / "short.ckpt"
    short.write_bytes(path.read_bytes()[:-100])
    with pytest.raises(CheckpointFormatError):
        fmt.read_container(short, target=target)


def test_a_checkpoint_in_a_bucket_loads_as_on_disk(s3_bucket: str, tmp_path: Path) -> None:
    """An ``s3://`` URL (a real S3 server) reads through the download cache; a missing key
    is an error naming the URL, a ``FileNotFoundError`` as a missing local file is."""
    import boto3

    net, path = Net(), tmp_path / "net.ckpt"
    save_checkpoint(net, str(path), append_dict={"epoch": 2})
    boto3.client("s3").upload_file(str(path), s3_bucket, "ckpts/net.ckpt")
    url = f"s3://{s3_bucket}/ckpts/net.ckpt"
    remote, here = load_checkpoint(url), load_checkpoint(str(path))
    assert remote.keys() == here.keys() and remote["epoch"] == 2
    assert all(torch.equal(remote[k], v) for k, v in here.items() if isinstance(v, torch.Tensor))
    assert checkpoint_info(url) == checkpoint_info(str(path))
    missing = f"s3://{s3_bucket}/ckpts/none.ckpt"
    for read in (load_checkpoint, checkpoint_info):
        with pytest.raises(ObjectNotFoundError, match=missing) as caught:
            read(missing)
        assert isinstance(caught.value, FileNotFoundError)
