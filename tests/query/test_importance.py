"""Hyperparameter importance ranks what moves the metric above what does not."""

from __future__ import annotations

import json
import random
from pathlib import Path

from click.testing import CliRunner

from tests.runs import write_run
from tests.server.conftest import client_for
from trainledger.cli import cli
from trainledger.query import MIN_RUNS, filter_summary_lineage, hyperparameter_importance


def _base(tmp_path: Path, n: int = 40) -> Path:
    """accuracy = f(learning_rate, optimizer) + noise; batch_size and a seed play no part."""
    rng = random.Random(0)
    base = tmp_path / "runs"
    for i in range(n):
        lr = rng.choice([0.001, 0.003, 0.01, 0.03, 0.1])
        optimizer = rng.choice(["SGD", "Adam"])
        batch = rng.choice([16, 32, 64, 128])
        accuracy = 0.5 + 2.0 * lr + (0.1 if optimizer == "Adam" else 0.0) + rng.gauss(0, 0.005)
        write_run(
            base,
            f"r{i:02d}",
            optimizer=optimizer,
            learning_rate=lr,
            batch_size=batch,
            metrics={"accuracy": accuracy},
            user={"seed": rng.randint(0, 10**6), "note": "x"},
        )
    return base


def test_the_parameters_that_move_the_metric_rank_first(tmp_path: Path) -> None:
    result = filter_summary_lineage(str(_base(tmp_path)))
    answer = hyperparameter_importance(result, "accuracy")
    names = [p["name"] for p in answer["parameters"]]
    assert set(names[:2]) == {"learning_rate", "optimizer"}, names
    by = {p["name"]: p for p in answer["parameters"]}
    assert by["optimizer"]["kind"] == "categorical" and by["learning_rate"]["kind"] == "numeric"
    assert by["learning_rate"]["importance"] > 5 * max(
        by["batch_size"]["importance"], by["user_defined/seed"]["importance"], 0.01
    )
    assert "user_defined/note" not in by  # the same in every run: says nothing
    assert len(by["batch_size"]["per_seed"]) == 3 and by["batch_size"]["spread"] >= 0
    assert len(by["learning_rate"]["values"]) == answer["runs"] == 40  # scatter points


def test_too_few_runs_say_why(tmp_path: Path) -> None:
    result = filter_summary_lineage(str(_base(tmp_path, n=MIN_RUNS - 1)))
    answer = hyperparameter_importance(result, "metric/accuracy")
    assert answer["parameters"] == [] and f"at least {MIN_RUNS}" in answer["reason"]


def test_cli_and_api(tmp_path: Path) -> None:
    base = _base(tmp_path)
    done = CliRunner().invoke(cli, ["importance", str(base), "--metric", "accuracy"])
    assert done.exit_code == 0, done.output
    lines = [line.split() for line in done.output.splitlines()[1:-1]]
    assert {lines[0][0], lines[1][0]} == {"learning_rate", "optimizer"}
    done = CliRunner().invoke(
        cli, ["importance", str(base), "-m", "accuracy", "-w", "optimizer = Adam", "--json"]
    )
    answer = json.loads(done.output)
    assert answer["runs"] < 40 and "optimizer" not in [p["name"] for p in answer["parameters"]]
    with client_for(base) as client:
        got = client.get("/api/v1/importance", params={"metric": "accuracy"}).json()
    assert got["parameters"][0]["name"] in ("learning_rate", "optimizer")
