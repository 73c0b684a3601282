"""``import_mlflow`` / ``trainledger import mlflow`` on stores MLflow's client generated."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner

mlflow = pytest.importorskip("mlflow")

from tests.integrations._mlflow_store import fast_dir, make_store  # noqa: E402
from trainledger.cli.main import cli  # noqa: E402
from trainledger.integrations import import_mlflow  # noqa: E402
from trainledger.query import filter_summary_lineage, get_summary_lineage  # noqa: E402
from trainledger.summary import read_scalars  # noqa: E402


def test_one_run_maps_onto_lineage(tmp_path: Path) -> None:
    uri, (run_id, *_) = make_store(tmp_path, 3)
    client = mlflow.tracking.MlflowClient(uri)
    ckpt = tmp_path / "best.ckpt"
    ckpt.write_bytes(b"x" * 123)
    client.log_artifact(run_id, str(ckpt), "checkpoints")
    client.set_tag(run_id, "mlflow.source.git.commit", "abc123")
    report = import_mlflow(uri, tmp_path / "runs")
    assert (report.imported, report.total) == (3, 3)
    lineage = get_summary_lineage(str(tmp_path / "runs" / f"mlflow-{run_id}"))
    assert lineage["hyper_parameters"] == {
        "optimizer": "SGD",
        "learning_rate": 0.001,
        "epoch": 5,
        "batch_size": 16,
    }
    assert lineage["metric"] == {"accuracy": 0.0, "loss": 1.0}
    assert lineage["algorithm"] == {"loss": 1.0}
    user = lineage["user_defined"]
    assert user["lr"] == 0.001 and user["batch_size"] == 16 and user["note"] == "trial 0"
    assert user["tag.team"] == "a" and user["mlflow.run_name"] == "run-0"
    assert user["mlflow.run_id"] == run_id and user["mlflow.experiment"] == "sweep"
    run = lineage["run"]
    assert run["status"] == "finished" and run["git_commit"] == "abc123"
    stored = os.path.join(tmp_path, "artifacts", run_id, "artifacts", "checkpoints", "best.ckpt")
    assert json.loads(lineage["model"]["path"]) == {"ckpt": stored}
    assert lineage["model"]["size"] == 123
    scalars = read_scalars(tmp_path / "runs" / f"mlflow-{run_id}")
    steps, times, values = scalars["accuracy"]
    assert list(steps) == [0, 1, 2, 3, 4] and times[1] - times[0] == pytest.approx(1.0)


def test_reimport_is_idempotent_and_picks_up_changes(tmp_path: Path) -> None:
    uri, ids = make_store(tmp_path, 4)
    base = tmp_path / "runs"
    import_mlflow(uri, base)
    before = {p: p.stat().st_mtime_ns for p in base.rglob("*") if p.is_file()}
    again = import_mlflow(uri, base)
    assert (again.unchanged, again.imported, again.updated) == (4, 0, 0)
    assert {p: p.stat().st_mtime_ns for p in base.rglob("*") if p.is_file()} == before
    mlflow.tracking.MlflowClient(uri).set_tag(ids[1], "team", "c")
    third = import_mlflow(uri, base)
    assert (third.unchanged, third.updated) == (3, 1)
    changed = base / f"mlflow-{ids[1]}"
    assert get_summary_lineage(str(changed))["user_defined"]["tag.team"] == "c"
    assert len(list(changed.iterdir())) == len(list((base / f"mlflow-{ids[0]}").iterdir()))
    # an import interrupted before its marker: re-imported, its half-written files replaced
    interrupted = base / f"mlflow-{ids[2]}"
    (interrupted / "mlflow_run.json").unlink()
    fourth = import_mlflow(uri, base)
    assert (fourth.unchanged, fourth.imported) == (3, 1)
    assert len(list(interrupted.iterdir())) == len(list(changed.iterdir()))


def test_cli_imports_with_a_filter(tmp_path: Path) -> None:
    uri, _ = make_store(tmp_path, 6)
    base = tmp_path / "runs"
    result = CliRunner().invoke(
        cli, ["import", "mlflow", uri, str(base), "--filter", "params.optimizer = 'Adam'"]
    )
    assert result.exit_code == 0, result.output
    assert "2 imported" in result.output
    assert len(list(base.iterdir())) == 2
    bad = CliRunner().invoke(cli, ["import", "mlflow", uri, str(base), "--experiment", "nope"])
    assert bad.exit_code != 0 and "received: 'nope'" in bad.output


@pytest.mark.slow
def test_a_thousand_runs_answer_filters_as_mlflow_does(monkeypatch: pytest.MonkeyPatch) -> None:
    with fast_dir() as root:
        uri, _ = make_store(root, 1000)
        monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)
        base = root / "runs"
        report = import_mlflow(uri, base)
        assert report.imported == 1000

        def ours(condition: dict[str, object]) -> set[str]:
            found = filter_summary_lineage(str(base), {**condition, "limit": 100, "offset": 0})
            ids = set()
            for offset in range(0, found["count"], 100):
                page = filter_summary_lineage(
                    str(base), {**condition, "limit": 100, "offset": offset // 100}
                )
                ids |= {o["model_lineage"]["user_defined"]["mlflow.run_id"] for o in page["object"]}
            return ids

        def theirs(filter_string: str) -> set[str]:
            df = mlflow.search_runs(search_all_experiments=True, filter_string=filter_string)
            return set(df["run_id"])

        # the same filter, in each system's language
        expected = theirs("metrics.accuracy > 0.5 and params.optimizer = 'Adam'")
        got = ours({"metric/accuracy": {"gt": 0.5}, "optimizer": {"eq": "Adam"}})
        assert got == expected and 50 < len(got) < 333
        # a numeric range on a param: MLflow compares params as strings, so the reference
        # applies the range to its search_runs frame; trainledger filters the parsed number
        df = mlflow.search_runs(search_all_experiments=True)
        lr = df["params.lr"].astype(float)
        expected = set(df[(lr > 0.05) & (df["tags.team"] == "a")]["run_id"])
        got = ours({"learning_rate": {"gt": 0.05}, "user_defined/tag.team": {"eq": "a"}})
        assert got == expected and len(got) > 100


def test_autologged_optimizer_settings_match_the_callbacks_own(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One Lightning fit with ``mlflow.pytorch.autolog`` (MLflow's own params: the optimizer's
    name and defaults, as strings) and trainledger's callback: the imported run's
    ``optimizer/`` fields are the callback's, and queryable."""
    import torch

    from tests.integrations._common import HPARAMS, loaders
    from tests.integrations.test_lightning import LitMLP, _trainer
    from trainledger.integrations.lightning import TrainledgerCallback

    class Momentum(LitMLP):
        def configure_optimizers(self) -> torch.optim.Optimizer:
            return torch.optim.SGD(
                self.parameters(), lr=self.hparams.lr, momentum=0.9, nesterov=True, foreach=False
            )

    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)
    client = mlflow.tracking.MlflowClient(uri)
    exp = client.create_experiment("autolog", artifact_location=str(tmp_path / "artifacts"))
    mlflow.pytorch.autolog(log_models=False, silent=True)
    try:
        with mlflow.start_run(experiment_id=exp):
            train, valid = loaders()
            callback = TrainledgerCallback(tmp_path / "ours")
            _trainer(callbacks=[callback], max_epochs=1).fit(Momentum(**HPARAMS), train, valid)
    finally:
        mlflow.pytorch.autolog(disable=True)
    (run,) = client.search_runs([exp])
    assert run.data.params["optimizer_name"] == "SGD" and run.data.params["nesterov"] == "True"
    import_mlflow(uri, tmp_path / "runs")
    imported = get_summary_lineage(str(tmp_path / "runs" / f"mlflow-{run.info.run_id}"))
    ours = get_summary_lineage(str(tmp_path / "ours"))["optimizer_settings"]
    settings = imported["optimizer_settings"]
    assert settings == {k: v for k, v in ours.items() if k != "param_groups"}
    assert settings["momentum"] == 0.9 and settings["nesterov"] == "true"
    assert "foreach" not in settings and "differentiable" not in settings
    found = filter_summary_lineage(
        summary_base_dir=str(tmp_path / "runs"),
        search_condition={"optimizer/momentum": {"eq": 0.9}, "optimizer/nesterov": {"eq": "true"}},
    )
    assert found["count"] == 1


def test_optimizer_settings_from_other_loggers_params() -> None:
    """Transformers' MLflowCallback logs its TrainingArguments: an ``adamw_*`` optim's Adam
    arguments are the AdamW's settings; params logged by hand are no optimizer settings."""
    from trainledger.integrations.mlflow_mapping import optimizer_settings_of

    hf = {
        "optim": "adamw_torch_fused",
        "learning_rate": "5e-05",
        "adam_beta1": "0.9",
        "adam_beta2": "0.999",
        "adam_epsilon": "1e-08",
        "weight_decay": "0.0",
        "warmup_steps": "10",
    }
    assert optimizer_settings_of(hf) == {
        "lr": 5e-05,
        "betas.0": 0.9,
        "betas.1": 0.999,
        "eps": 1e-08,
        "weight_decay": 0.0,
    }
    assert optimizer_settings_of({**hf, "optim": "sgd"}) == {}
    assert optimizer_settings_of({"lr": "0.1", "momentum": "0.9"}) == {}  # no optimizer_name
    autolog = {"optimizer_name": "Adam", "betas": "(0.9, 0.999)", "eps": "None", "lr": "0.001"}
    assert optimizer_settings_of({**autolog, "fused": "None", "amsgrad": "False"}) == {
        "amsgrad": "false",
        "betas.0": 0.9,
        "betas.1": 0.999,
        "lr": 0.001,
    }
    assert optimizer_settings_of({"optimizer_name": "X", "betas": "(a, b)"}) == {}


def test_a_new_mapping_version_writes_every_run_again_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from trainledger.integrations import mlflow as importer

    uri, _ = make_store(tmp_path, 2)
    base = tmp_path / "runs"
    import_mlflow(uri, base)
    monkeypatch.setattr(importer, "MAPPING_VERSION", importer.MAPPING_VERSION + 1)
    again = import_mlflow(uri, base)
    assert (again.updated, again.unchanged) == (2, 0)
    assert import_mlflow(uri, base).unchanged == 2
