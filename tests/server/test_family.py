"""``GET /api/v1/runs/{id}/family`` (issue 53 item 6): ``trainledger.run_family``'s answer
with run ids the page links to, through the store's run-id rules."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.server.conftest import TestClient, client_for
from tests.server.family_runs import make_family_base
from trainledger.query.family import run_family


@pytest.fixture(scope="module")
def family_base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_family_base(tmp_path_factory.mktemp("family") / "base")


@pytest.fixture
def fclient(family_base: Path) -> Iterator[TestClient]:
    with client_for(family_base) as c:
        yield c


def test_a_childs_family_names_its_parent_with_step_match_and_run_ids(
    fclient: TestClient, family_base: Path
) -> None:
    answer = fclient.get("/api/v1/runs/fine/family")
    assert answer.status_code == 200, answer.text
    found = answer.json()
    assert found["run"] == "./fine" and found["run_id"] == "fine"
    (parent,) = found["ancestors"]
    assert parent["run_id"] == "pre" and parent["child_id"] == "fine"
    assert (parent["step"], parent["match"], parent["depth"]) == (8, 1.0, 1)
    assert [(e["run_id"], e["match"]) for e in found["evaluations"]] == [("fine-eval", 1.0)]
    assert found["descendants"] == []
    # the same family the library finds, plus the ids
    plain = run_family(family_base, "fine")
    assert [{k: v for k, v in e.items() if not k.endswith("_id")} for e in found["ancestors"]] == (
        plain["ancestors"]
    )


def test_a_parents_family_lists_its_child(fclient: TestClient) -> None:
    found = fclient.get("/api/v1/runs/pre/family").json()
    assert found["ancestors"] == [] and found["evaluations"] == []
    (child,) = found["descendants"]
    assert (child["run_id"], child["parent_id"], child["step"]) == ("fine", "pre", 8)


def test_a_run_without_family_has_empty_lists(fclient: TestClient) -> None:
    found = fclient.get("/api/v1/runs/alone/family").json()
    assert found["run_id"] == "alone"
    assert (found["ancestors"], found["descendants"], found["evaluations"]) == ([], [], [])


@pytest.mark.parametrize("run_id", ["nope", "../base/pre", "%2e%2e/pre", "/etc"])
def test_an_unknown_run_or_a_path_out_of_the_base_is_404(fclient: TestClient, run_id: str) -> None:
    answer = fclient.get(f"/api/v1/runs/{run_id}/family")
    assert answer.status_code == 404, answer.text


def test_the_family_of_a_run_in_a_bucket_through_the_uis_copy(s3_bucket: str) -> None:
    """An ``s3://`` base as ``trainledger ui`` serves it: the index's local copy, the store
    knowing its URL; the writers and the child's load on the bucket."""
    from torch import nn

    from tests.query.test_family import data, make_net
    from trainledger.callbacks import ModelCheckpoint, TrainLineage
    from trainledger.checkpoint import CheckpointConfig, load_checkpoint
    from trainledger.cli.locations import local_copy
    from trainledger.run import Model
    from trainledger.server.run_store import IndexedRunStore
    from trainledger.storage import flush_mirrors

    url = f"s3://{s3_bucket}/ui-family"
    net = make_net(0)
    model = Model(net, nn.CrossEntropyLoss(), torch_sgd(net))
    ckpt = ModelCheckpoint("m", f"{url}/pre", CheckpointConfig(save_checkpoint_steps=4))
    model.train(2, data(), callbacks=[ckpt, TrainLineage(f"{url}/pre")])
    flush_mirrors()
    child = make_net(1)
    load_checkpoint(f"{url}/pre/m-2_4.ckpt", child)
    Model(child, nn.CrossEntropyLoss(), torch_sgd(child)).train(
        1, data(), callbacks=[TrainLineage(f"{url}/fine")]
    )
    flush_mirrors()
    store = IndexedRunStore(Path(local_copy(url, for_index=True)), remote=url)
    try:
        (parent,) = store.family("fine")["ancestors"]
        assert (parent["run_id"], parent["step"], parent["match"]) == ("pre", 8, 1.0)
        assert parent["checkpoint"] == f"{url}/pre/m-2_4.ckpt"
        assert [d["run_id"] for d in store.family("pre")["descendants"]] == ["fine"]
    finally:
        store.close()


def torch_sgd(net: object) -> object:
    import torch

    return torch.optim.SGD(net.parameters(), 0.1)  # type: ignore[attr-defined]
