"""``trainledger export tensorboard`` / ``export safetensors`` against the real other side:
TensorBoard's own ``EventAccumulator`` reads the converted runs, ``safetensors`` reads the
exported checkpoints."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from click.testing import CliRunner, Result

from trainledger.checkpoint import load_checkpoint
from trainledger.cli.main import cli
from trainledger.summary import read_scalars
from trainledger.summary.mindspore import list_mindspore_files
from trainledger.summary.proto import mindspore_summary_pb2 as ms
from trainledger.summary.reader import RunReader

GOLDEN = Path(__file__).parents[1] / "golden"
RUNS = sorted(p.parent.relative_to(GOLDEN).as_posix() for p in GOLDEN.rglob("*_MS"))
KEY = b"trainledger-test"  # the public test key of make_fixtures.py
# MindInsight 2.3.1's reading of every run directory (mindspore-full/record_mindinsight.py)
ANSWERS = json.loads((GOLDEN / "mindspore-full" / "mindinsight-summaries.json").read_text())


def _run(*args: str, **env: str) -> Result:
    return CliRunner().invoke(cli, list(args), env=env or None)


def _tree_digest(root: Path) -> str:
    h = hashlib.sha256()
    for path in sorted(root.rglob("*")):
        h.update(path.relative_to(root).as_posix().encode())
        if path.is_file():
            h.update(path.read_bytes())
    return h.hexdigest()


@pytest.fixture(scope="module")
def converted(tmp_path_factory: pytest.TempPathFactory) -> Path:
    dst = tmp_path_factory.mktemp("tb")
    before = _tree_digest(GOLDEN)
    result = _run("export", "tensorboard", str(GOLDEN), str(dst))
    assert result.exit_code == 0, result.output
    assert f"converted {len(set(RUNS))} run(s)" in result.output
    assert _tree_digest(GOLDEN) == before  # the source is only read
    return dst


def _accumulator(path: Path, purge: bool = False):  # type: ignore[no-untyped-def]
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    # keep every event (the defaults sample) and, unless asked, do not purge when steps go back
    size = {"scalars": 0, "images": 0, "histograms": 0, "tensors": 0}
    acc = EventAccumulator(str(path), size_guidance=size, purge_orphaned_data=purge)
    acc.Reload()
    return acc


_KINDS = {"scalar": "scalars", "image": "images", "histogram": "histograms", "tensor": "tensors"}


def _mindinsight(rel: str) -> dict[str, dict[str, dict]]:
    """MindInsight 2.3.1's reading of the run directory ``rel``: ``{plugin: {tag: answer}}``."""
    out: dict[str, dict[str, dict]] = {plugin: {} for plugin in _KINDS}
    for key, answer in ANSWERS["by_dir"][rel].items():
        plugin = answer["plugin"]
        out[plugin][key[: -len(plugin) - 1]] = answer
    return out


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _histogram_terms(min_: float, max_: float, count: float, buckets: list) -> tuple:
    """A histogram as ``(min, max, count, right edges, counts)``: TensorBoard's form of the
    export (its bucket limits are MindSpore's right edges) and MindInsight's ``[left, width,
    count]`` buckets compare in these terms."""
    rights = [left + width for left, width, _ in buckets]
    return min_, max_, count, rights, [c for _, _, c in buckets]


def _assert_same_value(plugin: str, event: Any, want: dict | float) -> None:
    """One exported point (TensorBoard's reading) equals MindInsight's value of that step."""
    from tensorboard.util.tensor_util import make_ndarray

    if plugin == "scalar":
        assert event.value == want, event.step
    elif plugin == "histogram":
        h, w = event.histogram_value, want
        assert isinstance(w, dict)
        mi_min, mi_max, mi_count, rights, counts = _histogram_terms(
            w["min"], w["max"], w["count"], w["buckets"]
        )
        assert (h.min, h.max, h.num) == (mi_min, mi_max, mi_count), event.step
        assert np.allclose(h.bucket_limit, rights) and list(h.bucket) == counts, event.step
    else:
        assert isinstance(want, dict)
        arr = make_ndarray(event.tensor_proto)
        assert list(arr.shape) == want["dims"], event.step
        assert arr.reshape(-1).tolist() == want["values"], event.step


@pytest.mark.parametrize("plugin", sorted(_KINDS))
@pytest.mark.parametrize("rel", sorted(set(RUNS)))
def test_every_plugin_follows_mindinsights_step_rule(
    converted: Path, rel: str, plugin: str
) -> None:
    """One rule for every plugin: TensorBoard reads each scalar, histogram and tensor tag at
    exactly the steps and values MindInsight 2.3.1 showed for the run (a repeated step once,
    its last value; an earlier file's steps purged when a later file starts the tag again).
    Images, which MindInsight samples (10 per tag), follow the same rule: each step once, and
    MindInsight's sample is among them byte for byte."""
    acc, answers = _accumulator(converted / rel), _mindinsight(rel)[plugin]
    assert sorted(acc.Tags()[_KINDS[plugin]]) == sorted(answers)
    get = {"scalar": acc.Scalars, "image": acc.Images, "histogram": acc.Histograms,
           "tensor": acc.Tensors}[plugin]  # fmt: skip
    for tag, answer in answers.items():
        events = get(tag)
        if plugin == "image":
            exported = {e.step: _sha256(e.encoded_image_string) for e in events}
            assert len(exported) == len(events), tag  # each step once
            assert len(answer["steps"]) <= 10 and set(answer["steps"]) <= set(exported), tag
            assert [exported[s] for s in answer["steps"]] == [v["sha256"] for v in answer["values"]]
            continue
        assert [e.step for e in events] == answer["steps"], tag
        for event, want in zip(events, answer["values"], strict=True):
            _assert_same_value(plugin, event, want)


def test_rich_run_images_follow_the_rule(converted: Path) -> None:
    """The rich run's images by the rule itself, not by MindInsight's sample: the second
    training started ``input_data/auto`` again at step 0, so only its images remain, step 2
    (written twice) as its last image; ``input_image``, written by the first training only,
    keeps its steps 1..6."""
    rel = "mindspore-rich/run"
    reader = RunReader(GOLDEN / rel)
    first, second = (
        reader.read_mindspore_events_of(path) for path in list_mindspore_files(GOLDEN / rel)
    )

    def last_per_step(events: list[ms.Event], tag: str) -> dict[int, str]:
        return {
            e.step: _sha256(v.image.encoded_image)
            for e in events
            for v in e.summary.value
            if v.tag == tag and v.HasField("image")
        }

    acc = _accumulator(converted / rel)
    for tag, source in (("input_data/auto", second), ("input_image", first)):
        exported = [(e.step, _sha256(e.encoded_image_string)) for e in acc.Images(tag)]
        assert exported == list(last_per_step(source, tag).items()), tag
    assert [e.step for e in acc.Images("input_data/auto")] == [0, 1, 2, 3]
    assert [e.step for e in acc.Images("input_image")] == [1, 2, 3, 4, 5, 6]


def test_tensorboards_own_purge_has_nothing_left_to_drop(converted: Path) -> None:
    """The rich run exported by the rule reads the same with TensorBoard's default
    ``purge_orphaned_data``, which drops a tag's points when its step goes back: each tag's
    steps only go forward, so TensorBoard shows what MindInsight showed either way."""
    plain = _accumulator(converted / "mindspore-rich" / "run")
    purged = _accumulator(converted / "mindspore-rich" / "run", purge=True)
    for kind, get in (("scalars", "Scalars"), ("images", "Images"), ("histograms", "Histograms"),
                      ("tensors", "Tensors")):  # fmt: skip
        for tag in plain.Tags()[kind]:
            steps = [e.step for e in getattr(plain, get)(tag)]
            assert [e.step for e in getattr(purged, get)(tag)] == steps, (kind, tag)
            assert steps == sorted(set(steps)), (kind, tag)


def test_graph_keeps_mindspore_names_and_scopes(converted: Path) -> None:
    source = next(
        e.graph_def
        for e in RunReader(GOLDEN / "mindspore-full" / "run").read_mindspore_events()
        if e.HasField("graph_def")
    )
    graph = _accumulator(converted / "mindspore-full" / "run").Graph()
    names = {n.name for n in graph.node}
    assert {op.full_name for op in source.node} <= names
    assert {p.name for p in source.parameters} <= names
    assert any(n.startswith("Default/network-WithLossCell/_backbone-TinyNet/") for n in names)
    for node in graph.node:  # every edge ends at a node of the graph
        assert all(i.lstrip("^") in names for i in node.input), node.name
    by_name = {n.name: n for n in graph.node}
    relu = next(op for op in source.node if op.op_type == "ReLU")
    assert by_name[relu.full_name].op == "ReLU"
    kinds = {e.type for op in source.node for e in op.input}
    assert kinds <= {ms.InputProto.DATA_EDGE, ms.InputProto.CONTROL_EDGE}


def test_tensorboard_errors(tmp_path: Path, converted: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    result = _run("export", "tensorboard", str(empty), str(tmp_path / "out"))
    assert result.exit_code == 1 and "nothing to convert" in result.output
    run = tmp_path / "run"
    shutil.copytree(GOLDEN / "mindspore-runs" / "sgd_noeval", run)
    result = _run("export", "tensorboard", str(run), str(run / "tb"))
    assert result.exit_code == 1 and "inside SRC" in result.output
    assert not (run / "tb").exists()
    out = tmp_path / "out"
    assert _run("export", "tensorboard", str(run), str(out)).exit_code == 0
    assert len(list((out / "run").iterdir())) == 1  # one run -> DST/<run name>
    again = _run("export", "tensorboard", str(run), str(out))
    assert again.exit_code == 1 and "already holds TensorBoard event files" in again.output


@pytest.mark.parametrize(
    "rel", sorted(p.relative_to(GOLDEN).as_posix() for p in GOLDEN.rglob("*.ckpt"))
)
def test_safetensors_export_equals_the_checkpoint(tmp_path: Path, rel: str) -> None:
    from safetensors.torch import load_file

    dst = tmp_path / "out.safetensors"
    env = {"TL_KEY": KEY.hex()} if "encrypted" in rel else {}
    args = ["export", "safetensors", str(GOLDEN / rel), str(dst)]
    result = _run(*args, *(["--dec-key-env", "TL_KEY"] if env else []), **env)
    assert result.exit_code == 0, result.output
    assert KEY.hex() not in result.output
    exported = load_file(dst)
    original = load_checkpoint(GOLDEN / rel, dec_key=KEY if env else None)
    tensors = {k: v for k, v in original.items() if isinstance(v, torch.Tensor)}
    assert sorted(exported) == sorted(tensors)
    for name, tensor in tensors.items():
        assert exported[name].dtype == tensor.dtype and torch.equal(exported[name], tensor)
    from safetensors import safe_open

    with safe_open(str(dst), "pt") as fh:  # string values travel in the metadata
        metadata = fh.metadata()
    for name, value in original.items():
        if isinstance(value, str):
            assert metadata[name] == value


def test_safetensors_errors(tmp_path: Path) -> None:
    src = GOLDEN / "mindspore-full" / "ckpt-dtypes" / "encrypted.ckpt"
    result = _run("export", "safetensors", str(src), str(tmp_path / "a.safetensors"))
    assert result.exit_code == 1 and "--dec-key-env" in result.output
    dst = tmp_path / "b.safetensors"
    dst.write_bytes(b"keep me")
    plain = GOLDEN / "mindspore-full" / "ckpt-dtypes" / "dtypes.ckpt"
    result = _run("export", "safetensors", str(plain), str(dst))
    assert result.exit_code == 1 and "exists" in result.output
    assert dst.read_bytes() == b"keep me"
    assert _run("export", "safetensors", str(plain), str(dst), "--overwrite").exit_code == 0


def test_safetensors_export_of_our_own_checkpoint(tmp_path: Path) -> None:
    from safetensors import safe_open
    from safetensors.torch import load_file

    from trainledger.checkpoint import save_checkpoint

    net = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.BatchNorm1d(4))
    src, dst = tmp_path / "own.ckpt", tmp_path / "own.safetensors"
    save_checkpoint(net, str(src), append_dict={"epoch": 3, "note": "hi"})
    assert _run("export", "safetensors", str(src), str(dst)).exit_code == 0
    exported = load_file(dst)
    for name, tensor in net.state_dict().items():
        assert torch.equal(exported[name], tensor)
    with safe_open(str(dst), "pt") as fh:
        metadata = fh.metadata()
    assert metadata["note"] == "hi" and metadata["epoch"] == "3"


def test_both_exports_read_from_s3(s3_bucket: str, tmp_path: Path) -> None:
    """SRC as an s3:// URL (a real local S3 server): the same results as from the disk."""
    import boto3
    from safetensors.torch import load_file

    client = boto3.client("s3")
    ckpt = GOLDEN / "mindspore-full" / "ckpt-dtypes" / "dtypes.ckpt"
    client.upload_file(str(ckpt), s3_bucket, "ckpts/dtypes.ckpt")
    run = GOLDEN / RUNS[0]
    for path in run.rglob("*"):
        if path.is_file():
            key = f"base/{run.name}/{path.relative_to(run).as_posix()}"
            client.upload_file(str(path), s3_bucket, key)

    a, b = tmp_path / "a.safetensors", tmp_path / "b.safetensors"
    done = _run("export", "safetensors", f"s3://{s3_bucket}/ckpts/dtypes.ckpt", str(a))
    assert done.exit_code == 0, done.output
    local = _run("export", "safetensors", str(ckpt), str(b))
    assert local.exit_code == 0, local.output
    remote, here = load_file(str(a)), load_file(str(b))
    assert remote.keys() == here.keys()
    assert all(torch.equal(remote[k], here[k]) for k in here)

    done = _run("export", "tensorboard", f"s3://{s3_bucket}/base/{run.name}", str(tmp_path / "tb"))
    assert done.exit_code == 0, done.output
    local = _run("export", "tensorboard", str(run), str(tmp_path / "tb_local"))
    assert local.exit_code == 0, local.output
    assert sorted(p.name for p in (tmp_path / "tb").iterdir()) == [run.name]
    remote_scalars = read_scalars(tmp_path / "tb" / run.name)
    assert (
        remote_scalars
        and remote_scalars.keys() == read_scalars(tmp_path / "tb_local" / run.name).keys()
    )

    missing = _run(
        "export", "safetensors", f"s3://{s3_bucket}/ckpts/none.ckpt", str(tmp_path / "c")
    )
    assert missing.exit_code == 2 and "no such object" in missing.output
