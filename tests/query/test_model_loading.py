"""Loading a named model (issue 54 item 3): ``load_checkpoint("clf@production", net,
base=BASE)`` loads the registered checkpoint and records the load like any other, so the run
it starts finds the registered run as its parent; real runs with checkpoints (as in
``test_family.py``), on a local base and in a bucket, on SQLite and PostgreSQL."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from torch import nn

from tests.query.test_family import data, make_net, train
from trainledger import load_checkpoint, register_model, resolve_model, run_family
from trainledger.callbacks import ModelCheckpoint, TrainLineage
from trainledger.checkpoint import CheckpointConfig, latest_checkpoint
from trainledger.errors import LineageParamValueError, ModelNotFoundError
from trainledger.query import list_models, model_checkpoint, set_model_alias
from trainledger.run import Model


def test_load_by_alias_and_the_fine_tune_finds_the_registered_run(tmp_path: Path) -> None:
    base = tmp_path / "base"
    pre = train(base, "pre", make_net(0), evaluate=True)
    ckpt = latest_checkpoint(pre)
    assert ckpt is not None
    assert register_model(base, "classifier", ckpt) == 1
    set_model_alias(base, "classifier", "production", 1)
    (version,) = list_models(base)[0]["versions"]
    assert version["step"] == 8 and len(version["digests"]) == 16  # from the run's lineage
    child = make_net(1)
    loaded = load_checkpoint("classifier@production", child, base=base)
    assert torch.equal(loaded["0.weight"], child[0].weight.detach())
    train(base, "fine", child)
    (parent,) = [a for a in run_family(base, "fine")["ancestors"] if a["depth"] == 1]
    assert (parent["run"], parent["checkpoint"], parent["match"]) == ("./pre", ckpt, 1.0)
    resolved = resolve_model(base, "classifier/1")
    assert resolved["checkpoint"] == ckpt and resolved["run"] == "./pre"
    assert [d["run"] for d in resolved["family"]["descendants"]] == ["./fine"]
    assert "accuracy" in resolved["lineage"]["model_lineage"]["metric"]


def test_a_checkpoint_saved_outside_its_run_folder_is_its_runs(tmp_path: Path) -> None:
    base = tmp_path / "base"
    net = make_net(0)
    model = Model(net, nn.CrossEntropyLoss(), torch.optim.SGD(net.parameters(), 0.1))
    saver = ModelCheckpoint("m", base / "shared-ckpts", CheckpointConfig(save_checkpoint_steps=4))
    model.train(2, data(), callbacks=[saver, TrainLineage(base / "pre")])
    assert register_model(base, "clf", "shared-ckpts/m-2_4.ckpt") == 1  # its lineage names it
    (version,) = list_models(base)[0]["versions"]
    assert (version["run"], version["step"]) == ("./pre", 8)


def test_load_checkpoint_with_base_takes_references_only(tmp_path: Path) -> None:
    base = tmp_path / "base"
    train(base, "pre", make_net(0), epochs=1)
    register_model(base, "clf", latest_checkpoint(base / "pre"))
    with pytest.raises(TypeError, match="expected a model reference, NAME@ALIAS or NAME/VER"):
        load_checkpoint(base / "pre" / "x.ckpt", make_net(1), base=base)  # type: ignore[arg-type]
    with pytest.raises(LineageParamValueError, match="a model reference expected"):
        load_checkpoint(str(base / "pre" / "x.ckpt"), make_net(1), base=base)
    with pytest.raises(ModelNotFoundError, match="received: 'production'"):
        load_checkpoint("clf@production", make_net(1), base=base)
    assert load_checkpoint("clf/1", make_net(1), base=base)  # by version


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_named_models_of_a_bucket(
    s3_bucket: str,
    tmp_path: Path,
    backend: str,
    request: pytest.FixtureRequest,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Runs and their checkpoints in ``s3://``: registered by URL or key, resolved to the URL
    the writer named, loaded from the store by alias, and the fine-tune's parent found."""
    from trainledger.storage import flush_mirrors

    monkeypatch.setattr("trainledger.storage.locations.READ_MAX_AGE", 0.0)  # (each read syncs)
    index = request.getfixturevalue("pg_url") if backend == "postgresql" else None
    base = f"s3://{s3_bucket}/team"
    net = make_net(0)
    model = Model(net, nn.CrossEntropyLoss(), torch.optim.SGD(net.parameters(), 0.1))
    saver = ModelCheckpoint("m", f"{base}/pre", CheckpointConfig(save_checkpoint_steps=4))
    model.train(2, data(), callbacks=[saver, TrainLineage(f"{base}/pre")])
    flush_mirrors()
    assert register_model(base, "clf", f"{base}/pre/m-2_4.ckpt", index=index) == 1
    assert register_model(base, "clf", "pre/m-1_4.ckpt", index=index) == 2
    set_model_alias(base, "clf", "production", 1, index=index)
    assert model_checkpoint(base, "clf@production", index=index) == f"{base}/pre/m-2_4.ckpt"
    versions = list_models(base, index=index)[0]["versions"]
    assert [(v["run"], v["path"], v["step"]) for v in versions] == [
        ("./pre", "pre/m-2_4.ckpt", 8),
        ("./pre", "pre/m-1_4.ckpt", 4),
    ]
    with pytest.raises(LineageParamValueError, match=r"expected an existing object; received"):
        register_model(base, "clf", "pre/m-9_9.ckpt", index=index)
    with pytest.raises(LineageParamValueError, match="expected its s3:// URL or a path relative"):
        register_model(base, "clf", str(tmp_path / "m.ckpt"), index=index)
    with pytest.raises(LineageParamValueError, match="expected an object under the base"):
        register_model(base, "clf", f"s3://{s3_bucket}/other/m.ckpt", index=index)
    child = make_net(1)
    if index is not None:  # load_checkpoint(base=) reads the registry the variable names
        monkeypatch.setenv("TRAINLEDGER_INDEX_URL", index)
    load_checkpoint("clf@production", child, base=base)
    model = Model(child, nn.CrossEntropyLoss(), torch.optim.SGD(child.parameters(), 0.1))
    model.train(1, data(), callbacks=[TrainLineage(f"{base}/fine")])
    flush_mirrors()
    resolved = resolve_model(base, "clf@production", index=index)
    assert resolved["checkpoint"] == f"{base}/pre/m-2_4.ckpt"
    assert [d["run"] for d in resolved["family"]["descendants"]] == ["./fine"]
    assert resolved["lineage"]["summary_dir"] == "./pre"
    # the same as query fields over the bucket: the run behind the alias, and its child
    from trainledger.query import filter_summary_lineage

    behind = filter_summary_lineage(base, {"registry/clf@production": {"eq": 1}}, index=index)
    assert [o["summary_dir"] for o in behind["object"]] == ["./pre"]
    assert behind["object"][0]["model_lineage"]["registry"] == {"clf": 2, "clf@production": 1}
    children = filter_summary_lineage(base, {"parent/run": {"eq": "./pre"}}, index=index)
    assert [o["summary_dir"] for o in children["object"]] == ["./fine"]
    assert children["object"][0]["model_lineage"]["parent"]["step"] == 8
