"""The named models' routes (issue 54 item 5): the registry with run ids and main metrics, a
model's history, a registration from a run's checkpoint table, an alias moved and removed;
the read-write token for every write, the registry's messages as 400, an unknown name,
version or alias as 404, and no checkpoint outside the base."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.runs import write_run
from tests.server.conftest import TestClient, client_for
from trainledger.lineage import RunValues
from trainledger.query import list_models, model_checkpoint

RW = "rw-token-0123456789abcdef"
RO = "ro-token-0123456789abcdef"


def model_base(root: Path) -> Path:
    """``r1`` (accuracy 0.81) and ``r2`` (0.92), each with ``m-1_8.ckpt`` saved at step 8;
    ``ext``, whose lineage names a checkpoint outside the base (``root/outside.ckpt``)."""
    base = root / "base"
    for name, accuracy in (("r1", 0.81), ("r2", 0.92)):
        ckpt = base / name / "m-1_8.ckpt"
        checkpoints = [(str(ckpt), 20, 8)]
        write_run(
            base,
            name,
            metrics={"loss": 0.3, "accuracy": accuracy},
            run=RunValues(status="finished", checkpoints=checkpoints),
        )
        ckpt.write_bytes(b"weights of " + name.encode())
    outside = root / "outside.ckpt"
    outside.write_bytes(b"not the base's")
    write_run(base, "ext", run=RunValues(status="finished", checkpoints=[(str(outside), 14, 3)]))
    return base


@pytest.fixture
def mbase(tmp_path: Path) -> Path:
    return model_base(tmp_path)


def register(client: TestClient, name: str, run: str, alias: str | None = None, **kw: object):  # type: ignore[no-untyped-def]
    body = {"run": run, "checkpoint": "m-1_8.ckpt", "alias": alias}
    return client.post(f"/api/v1/models/{name}/versions", json=body, **kw)


def test_a_registration_answers_the_version_with_its_run_step_and_metric(mbase: Path) -> None:
    with client_for(mbase) as client:
        first = register(client, "clf", "r1")
        assert first.status_code == 200, first.text
        second = register(client, "clf", "r2", alias="production")
        assert second.status_code == 200, second.text
        version = second.json()
        assert (version["version"], version["run_id"]) == (2, "r2")
        assert version["path"] == "r2/m-1_8.ckpt"
        assert (version["aliases"], version["present"]) == (["production"], True)
        assert version["metric"] == {"accuracy": 0.92}  # the first by name, as the family's
        assert version["actor"].startswith("ui:write:no-token@")
        assert "checkpoint" not in version  # (no absolute path through the API)
        (model,) = client.get("/api/v1/models").json()["models"]
        assert (model["name"], model["latest"], model["aliases"]) == ("clf", 2, {"production": 2})
        assert [(v["run_id"], v["metric"]) for v in model["versions"]] == [
            ("r1", {"accuracy": 0.81}),
            ("r2", {"accuracy": 0.92}),
        ]
        shown = client.get("/api/v1/models/clf").json()
        assert [(e["action"], e["version"], e["previous"]) for e in shown["history"]] == [
            ("register", 1, None),
            ("register", 2, 1),
            ("alias", 2, None),
        ]
        assert shown["history"][0]["run_id"] == "r1"
        audit = client.get("/api/v1/audit").json()["entries"]
        assert [(e["action"], e["run"]) for e in audit] == [
            ("model_register", "r1"),
            ("model_register", "r2"),
        ]
    assert model_checkpoint(mbase, "clf@production") == str((mbase / "r2" / "m-1_8.ckpt").resolve())


def test_an_alias_moves_and_is_removed_and_the_history_says_from_which_version(
    mbase: Path,
) -> None:
    with client_for(mbase) as client:
        register(client, "clf", "r1", alias="production")
        register(client, "clf", "r2")
        moved = client.put("/api/v1/models/clf/aliases/production", json={"version": 2})
        assert moved.status_code == 200, moved.text
        entry = moved.json()
        assert (entry["alias"], entry["version"], entry["previous"]) == ("production", 2, 1)
        assert entry["run_id"] == "r2"
        removed = client.delete("/api/v1/models/clf/aliases/production").json()
        assert (removed["version"], removed["previous"], removed["run_id"]) == (None, 2, "r2")
        history = client.get("/api/v1/models/clf").json()["history"]
        moves = [(e["version"], e["previous"]) for e in history if e["action"] == "alias"]
        assert moves == [(1, None), (2, 1), (None, 2)]
        assert client.get("/api/v1/models").json()["models"][0]["aliases"] == {}
        audit = client.get("/api/v1/audit").json()["entries"]
        assert [e["action"] for e in audit][-2:] == ["model_alias", "model_alias"]


M = "/api/v1/models"
PROD = f"{M}/clf/aliases/production"
CKPT = "m-1_8.ckpt"


@pytest.mark.parametrize(
    ("method", "path", "body", "status", "said"),
    [
        ("get", f"{M}/nope", None, 404, "a model name expected one registered"),
        ("get", f"{M}/bad%20name", None, 400, "a model name expected a short word"),
        ("put", PROD, {"version": 9}, 404, "versions 1"),
        ("put", f"{M}/nope/aliases/production", {"version": 1}, 404, "one registered"),
        ("put", f"{M}/clf/aliases/a%20b", {"version": 1}, 400, "a model alias expected"),
        ("put", PROD, {"version": 0}, 400, "from 1; received: 0"),
        ("put", PROD, {"version": "1"}, 422, "version"),
        ("delete", f"{M}/clf/aliases/never", None, 404, "never"),
        ("post", f"{M}/a%20b/versions", {"run": "r1", "checkpoint": CKPT}, 400, "a short word"),
        ("post", f"{M}/clf/versions", {"run": "nope", "checkpoint": CKPT}, 404, "run not found"),
        ("post", f"{M}/clf/versions", {"run": "../r1", "checkpoint": CKPT}, 404, "run not found"),
    ],
)
def test_errors_say_what_was_expected(
    mbase: Path, method: str, path: str, body: object, status: int, said: str
) -> None:
    with client_for(mbase) as client:
        assert register(client, "clf", "r1").status_code == 200
        answer = client.request(method.upper(), path, json=body)
        assert answer.status_code == status, answer.text
        assert said in answer.text


def test_writes_need_the_read_write_token(mbase: Path) -> None:
    with client_for(mbase, token=RW, read_token=RO) as client:
        ro = {"Authorization": f"Bearer {RO}"}
        rw = {"Authorization": f"Bearer {RW}"}
        assert register(client, "clf", "r1", headers=ro).status_code == 403
        assert client.get("/api/v1/models", headers=ro).json() == {"models": []}
        done = register(client, "clf", "r1", alias="production", headers=rw)
        assert done.status_code == 200, done.text
        fingerprint = done.json()["actor"]
        assert fingerprint.startswith("ui:write:") and RW not in fingerprint
        put = client.put("/api/v1/models/clf/aliases/x", json={"version": 1}, headers=ro)
        assert put.status_code == 403
        assert client.delete("/api/v1/models/clf/aliases/production", headers=ro).status_code == 403
        assert client.get("/api/v1/models/clf", headers=ro).json()["aliases"] == {"production": 1}
        assert client.get("/api/v1/models").status_code == 401  # no token at all
        history = client.get("/api/v1/models/clf", headers=ro).json()["history"]
        assert {e["actor"] for e in history} == {fingerprint}


def test_only_a_checkpoint_the_runs_table_lists_inside_the_base_is_registered(
    mbase: Path, tmp_path: Path
) -> None:
    with client_for(mbase) as client:
        listed = [c["name"] for c in client.get("/api/v1/runs/ext").json()["checkpoints"]]
        assert listed == [str(tmp_path / "outside.ckpt")]  # the lineage names it: listed
        outside = client.post(
            "/api/v1/models/clf/versions", json={"run": "ext", "checkpoint": listed[0]}
        )
        assert outside.status_code == 400
        assert "expected a file inside the base" in outside.json()["detail"]
        for name in ("../r2/m-1_8.ckpt", str(mbase / "r2" / "m-1_8.ckpt"), "lineage"):
            other = client.post(
                "/api/v1/models/clf/versions", json={"run": "r1", "checkpoint": name}
            )
            assert other.status_code == 400, (name, other.text)
            assert "as its checkpoint table lists them (m-1_8.ckpt)" in other.json()["detail"]
        typo = register(client, "clf", "r1", alias="pro duction")
        assert typo.status_code == 400 and "a model alias expected" in typo.json()["detail"]
    assert list_models(mbase) == []  # none of them registered anything


def test_the_openapi_schema_documents_the_routes(mbase: Path) -> None:
    with client_for(mbase) as client:
        paths = client.get("/openapi.json").json()["paths"]
    assert set(paths["/api/v1/models/{name}/aliases/{alias}"]) == {"put", "delete"}
    assert "post" in paths["/api/v1/models/{name}/versions"]
    assert "get" in paths["/api/v1/models"] and "get" in paths["/api/v1/models/{name}"]


def test_a_checkpoint_in_a_bucket_is_registered_through_the_uis_copy(s3_bucket: str) -> None:
    """An ``s3://`` base as ``trainledger ui`` serves it: the registry of the base's URL,
    the checkpoint named by its URL, its existence asked of the store."""
    from torch import nn

    from tests.query.test_family import data, make_net
    from tests.server.test_family import torch_sgd
    from trainledger.callbacks import ModelCheckpoint, TrainLineage
    from trainledger.checkpoint import CheckpointConfig
    from trainledger.cli.locations import local_copy
    from trainledger.run import Model
    from trainledger.server.app import create_app
    from trainledger.server.run_store import IndexedRunStore
    from trainledger.storage import flush_mirrors

    url = f"s3://{s3_bucket}/ui-models"
    net = make_net(0)
    ckpt = ModelCheckpoint("m", f"{url}/pre", CheckpointConfig(save_checkpoint_steps=4))
    Model(net, nn.CrossEntropyLoss(), torch_sgd(net)).train(
        2, data(), callbacks=[ckpt, TrainLineage(f"{url}/pre")]
    )
    flush_mirrors()
    local = Path(local_copy(url, for_index=True))
    store = IndexedRunStore(local, remote=url, background_rescan=False)
    with TestClient(create_app(local, store=store)) as client:
        names = [c["name"] for c in client.get("/api/v1/runs/pre").json()["checkpoints"]]
        assert "m-2_4.ckpt" in names
        done = client.post(
            "/api/v1/models/clf/versions",
            json={"run": "pre", "checkpoint": "m-2_4.ckpt", "alias": "production"},
        )
        assert done.status_code == 200, done.text
        assert (done.json()["path"], done.json()["step"]) == ("pre/m-2_4.ckpt", 8)
        gone = client.post(
            "/api/v1/models/clf/versions", json={"run": "pre", "checkpoint": "m-9_9.ckpt"}
        )
        assert gone.status_code == 400
        (model,) = client.get("/api/v1/models").json()["models"]
        assert [v["run_id"] for v in model["versions"]] == ["pre"]
    assert model_checkpoint(url, "clf@production") == f"{url}/pre/m-2_4.ckpt"
