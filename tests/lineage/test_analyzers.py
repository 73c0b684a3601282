"""Analyzers: dataset walk for each dataset shape, backbone rule, optimizer/lr, loss, env."""

from __future__ import annotations

import functools
import os
from pathlib import Path
from typing import Any

import pytest
import torch
from torch import nn
from torch.utils.data import ConcatDataset, DataLoader, Dataset, Subset, TensorDataset

from trainledger.lineage.analyzers import (
    analyze_dataset,
    distributed_info,
    environment_info,
    git_info,
    initial_learning_rate,
    loss_function_name,
    network_name,
    optimizer_name,
    torch_seed,
)
from trainledger.lineage.records import dataset_graph_event, organize_graph


def _tensors(n: int = 20) -> TensorDataset:
    g = torch.Generator().manual_seed(0)
    return TensorDataset(torch.randn(n, 3, generator=g), torch.arange(n))


class FolderDataset(Dataset):  # type: ignore[type-arg]
    """A file-backed dataset exposing one of the path attributes."""

    def __init__(self, attr: str, value: Any, n: int = 7) -> None:
        setattr(self, attr, value)
        self.n = n
        self.train = True
        self.transform = None

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i: int) -> int:
        return i


def _files(tmp_path: Path, names: list[str]) -> list[Path]:
    out = []
    for name in names:
        p = tmp_path / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(b"x" * (len(name) + 1))
        out.append(p)
    return out


def test_dataloader_reports_real_batch_size_and_samples() -> None:
    loader = DataLoader(_tensors(20), batch_size=6, shuffle=True, drop_last=True)
    info = analyze_dataset(loader)
    assert info.batch_size == 6  # not the number of batches (3)
    assert info.size == 20
    assert info.path is None
    g = info.graph
    assert g["op_type"] == "DataLoader" and g["batch_size"] == 6 and g["drop_last"] is True
    assert g["num_workers"] == 0 and g["shuffle"] is True
    assert g["sampler"]["sampler_name"] == "RandomSampler"
    assert g["sampler"]["num_samples"] == 20
    (child,) = g["children"]
    assert child["op_type"] == "TensorDataset" and child["num_samples"] == 20
    assert child["tensor_shapes"] == ["(20, 3)", "(20,)"]
    assert info.fingerprint is not None and info.fingerprint.startswith("tensors:")


def test_graph_roundtrips_through_the_message() -> None:
    info = analyze_dataset(DataLoader(Subset(_tensors(), [1, 2, 3]), batch_size=2))
    event = dataset_graph_event(info.graph)
    assert organize_graph(event.dataset_graph) == info.graph


def test_subset_and_tensor_dataset() -> None:
    info = analyze_dataset(Subset(_tensors(20), list(range(5))))
    assert info.size == 5 and info.batch_size is None
    assert info.graph["op_type"] == "Subset"
    assert info.graph["children"][0]["op_type"] == "TensorDataset"
    other = analyze_dataset(Subset(_tensors(20), list(range(1, 6))))
    assert info.fingerprint != other.fingerprint  # which rows matters
    assert analyze_dataset(Subset(_tensors(20), list(range(5)))).fingerprint == info.fingerprint


def test_tensor_fingerprint_follows_content() -> None:
    a = analyze_dataset(_tensors()).fingerprint
    assert a == analyze_dataset(_tensors()).fingerprint
    changed = _tensors()
    changed.tensors[0][0, 0] += 1
    assert analyze_dataset(changed).fingerprint != a


@pytest.mark.parametrize("attr", ["root", "data_dir", "path"])
def test_path_attributes_directory(tmp_path: Path, attr: str) -> None:
    _files(tmp_path, ["a.bin", "sub/b.bin"])
    info = analyze_dataset(DataLoader(FolderDataset(attr, str(tmp_path)), batch_size=2))
    assert info.path == str(tmp_path)
    assert info.size == 7 and info.batch_size == 2
    assert info.graph["children"][0]["dataset_dir"] == str(tmp_path)
    assert info.graph["children"][0]["train"] is True
    assert info.fingerprint is not None and info.fingerprint.startswith("files:")


def test_path_attribute_file_reports_its_directory(tmp_path: Path) -> None:
    (f,) = _files(tmp_path, ["data/train.mindrecord"])
    info = analyze_dataset(FolderDataset("path", Path(f)))
    assert info.path == str(f.parent)


@pytest.mark.parametrize("attr", ["files", "dataset_files"])
def test_file_list_attributes(tmp_path: Path, attr: str) -> None:
    files = _files(tmp_path, ["d/x/1.rec", "d/y/2.rec"])
    info = analyze_dataset(FolderDataset(attr, [str(f) for f in files]))
    assert info.path == str(tmp_path / "d")
    assert info.graph["dataset_files"] == [str(f) for f in files]


def test_concat_dataset_common_directory_and_children(tmp_path: Path) -> None:
    _files(tmp_path, ["a/1", "b/2"])
    concat = ConcatDataset(
        [
            FolderDataset("root", str(tmp_path / "a"), 3),
            FolderDataset("root", str(tmp_path / "b"), 4),
        ]
    )
    info = analyze_dataset(DataLoader(concat, batch_size=1))
    assert info.size == 7
    assert info.path == str(tmp_path)
    node = info.graph["children"][0]
    assert node["op_type"] == "ConcatDataset"
    assert [c["dataset_dir"] for c in node["children"]] == [
        str(tmp_path / "a"),
        str(tmp_path / "b"),
    ]


def test_file_fingerprint_changes_with_files(tmp_path: Path) -> None:
    _files(tmp_path, ["a.bin"])
    ds = FolderDataset("root", str(tmp_path))
    first = analyze_dataset(ds).fingerprint
    assert analyze_dataset(ds).fingerprint == first
    (tmp_path / "b.bin").write_bytes(b"new")
    assert analyze_dataset(ds).fingerprint != first


def test_transforms_become_operations(tmp_path: Path) -> None:
    class Scale:
        def __init__(self, factor: float) -> None:
            self.factor = factor
            self.mean = [0.5, 0.25]

        def __call__(self, x: Any) -> Any:
            return x

    class Compose:
        def __init__(self, transforms: list[Any]) -> None:
            self.transforms = transforms

    ds = FolderDataset("root", str(tmp_path))
    ds.transform = Compose([Scale(2.0), Scale(3.0)])
    info = analyze_dataset(ds)
    ops = info.graph["operations"]
    assert [op["tensor_op_name"] for op in ops] == ["Scale", "Scale"]
    assert ops[1]["factor"] == 3.0 and ops[0]["mean"] == "[0.5, 0.25]"
    assert organize_graph(dataset_graph_event(info.graph).dataset_graph) == info.graph


def test_odd_objects_do_not_fail() -> None:
    assert analyze_dataset(None).size is None
    info = analyze_dataset([(1, 2), (3, 4)])
    assert info.size == 2 and info.graph["op_type"] == "list"
    assert analyze_dataset(iter(range(3))).size is None


class MLP(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(3, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(x)


class WithLoss(nn.Module):
    def __init__(self, net: nn.Module) -> None:
        super().__init__()
        self._backbone = net
        self._loss_fn = nn.CrossEntropyLoss()


class TrainStep(nn.Module):
    def __init__(self, net: nn.Module) -> None:
        super().__init__()
        self.network = net


def test_backbone_rule() -> None:
    assert network_name(MLP()) == "MLP"
    assert network_name(WithLoss(MLP())) == "MLP"
    assert network_name(TrainStep(WithLoss(MLP()))) == "MLP"  # found deeper in the tree

    class Detector(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.backbone = MLP()

    assert network_name(Detector()) == "MLP"
    assert network_name(nn.DataParallel(WithLoss(MLP()))) == "MLP"
    assert network_name(None) is None


def test_loss_and_optimizer_names_and_lr() -> None:
    net = MLP()
    assert loss_function_name(nn.CrossEntropyLoss()) == "CrossEntropyLoss"
    assert loss_function_name(torch.nn.functional.mse_loss) == "mse_loss"
    assert loss_function_name(functools.partial(torch.nn.functional.l1_loss)) == "l1_loss"
    assert loss_function_name(None, WithLoss(net)) == "CrossEntropyLoss"
    assert loss_function_name(None) is None
    opt = torch.optim.SGD(net.parameters(), lr=0.12)
    assert optimizer_name(opt) == "SGD" and optimizer_name(None) is None
    assert initial_learning_rate(opt) == 0.12
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.5)
    opt.step()
    sched.step()
    assert opt.param_groups[0]["lr"] == pytest.approx(0.06)
    assert initial_learning_rate(opt) == 0.12  # initial_lr kept by the scheduler
    assert initial_learning_rate(opt, sched) == 0.12
    tensor_lr = torch.optim.Adam(net.parameters(), lr=torch.tensor(0.003))
    assert initial_learning_rate(tensor_lr) == pytest.approx(0.003)


def test_environment(tmp_path: Path) -> None:
    env = environment_info()
    assert env.pid == os.getpid() and env.hostname and env.command
    assert env.torch_version == torch.__version__ and env.trainledger_version
    assert git_info(str(tmp_path)) == (None, None)
    torch.manual_seed(1234)
    assert torch_seed() == 1234
    assert distributed_info() == (0, 1, "stand_alone")


def test_git_info_of_a_repository(tmp_path: Path) -> None:
    import subprocess

    def git(*args: str) -> None:
        subprocess.run(["git", *args], cwd=tmp_path, check=True, capture_output=True)

    git("init", "-q")
    (tmp_path / "f.txt").write_text("a")
    git("add", "f.txt")
    git("-c", "user.email=a@b", "-c", "user.name=n", "commit", "-q", "-m", "m")
    commit, dirty = git_info(str(tmp_path))
    assert commit is not None and len(commit) == 40 and dirty is False
    (tmp_path / "f.txt").write_text("b")
    sub = tmp_path / "sub"
    sub.mkdir()
    assert git_info(str(sub)) == (commit, True)
