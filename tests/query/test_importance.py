"""Hyperparameter importance ranks what moves the metric above what does not."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

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
    assert by["learning_rate"]["importance"] > 5 * max(by["batch_size"]["importance"], 0.01)
    assert "user_defined/note" not in by  # the same in every run: says nothing
    assert answer["left_out"] == ["user_defined/seed"]  # id-like by its name
    assert len(by["batch_size"]["per_fold"]) == 5 and by["batch_size"]["spread"] >= 0
    assert len(by["learning_rate"]["values"]) == answer["runs"] == 40  # scatter points
    assert answer["explains"] and answer["heldout_r2"] > 0.8, answer["verdict"]
    assert by["learning_rate"]["direction"]["correlation"] > 0.5  # more lr, more accuracy
    assert by["optimizer"]["direction"] == {"lowest": "SGD", "highest": "Adam"}
    kept = hyperparameter_importance(result, "accuracy", include_ids=True)
    assert "user_defined/seed" in [p["name"] for p in kept["parameters"]]


def noise_base(tmp_path: Path) -> Path:
    """120 runs whose accuracy is pure noise, with a counter that grows with the runs' time."""
    rng = random.Random(1)
    base = tmp_path / "runs"
    for i in range(120):
        write_run(
            base,
            f"r{i:03d}",
            optimizer=rng.choice(["SGD", "Adam"]),
            learning_rate=10 ** rng.uniform(-4, -1),  # random search: unique, and kept
            metrics={"accuracy": rng.random()},
            user={"copy": i},
            mtime=1_000 + i,
        )
    return base


def test_a_noise_metric_is_not_explained_and_a_run_counter_is_left_out(tmp_path: Path) -> None:
    """The issue's case, smaller: the metric is pure noise and a counter grows with the runs'
    time. Scored on its own runs the forest ranked the counter first; held out, it says no."""
    base = noise_base(tmp_path)
    answer = hyperparameter_importance(filter_summary_lineage(str(base)), "accuracy")
    assert answer["left_out"] == ["user_defined/copy"]  # an integer that grows with time
    assert "learning_rate" in [p["name"] for p in answer["parameters"]]
    assert not answer["explains"] and answer["heldout_r2"] < 0.1
    assert answer["verdict"].startswith("these parameters do not explain metric/accuracy")


def test_too_few_runs_say_why(tmp_path: Path) -> None:
    result = filter_summary_lineage(str(_base(tmp_path, n=MIN_RUNS - 1)))
    answer = hyperparameter_importance(result, "metric/accuracy")
    assert answer["parameters"] == [] and f"at least {MIN_RUNS}" in answer["reason"]


def test_cli_and_api(tmp_path: Path) -> None:
    base = _base(tmp_path)
    done = CliRunner().invoke(cli, ["importance", str(base), "--metric", "accuracy"])
    assert done.exit_code == 0, done.output
    out = done.output.splitlines()
    assert out[1].startswith("held-out R² ")  # the verdict comes first
    lines = [line.split() for line in out[2:]]
    assert {lines[0][0], lines[1][0]} == {"learning_rate", "optimizer"}
    assert "the metric rises with it" in out[2 + [x[0] for x in lines].index("learning_rate")]
    assert out[-1] == "left out as id-like: user_defined/seed"
    done = CliRunner().invoke(
        cli, ["importance", str(base), "-m", "accuracy", "-w", "optimizer = Adam", "--json"]
    )
    answer = json.loads(done.output)
    assert answer["runs"] < 40 and "optimizer" not in [p["name"] for p in answer["parameters"]]
    with client_for(base) as client:
        got = client.get("/api/v1/importance", params={"metric": "accuracy"}).json()
    assert got["parameters"][0]["name"] in ("learning_rate", "optimizer")
    with client_for(base) as client:
        kept = client.get(
            "/api/v1/importance", params={"metric": "accuracy", "include_ids": "true"}
        ).json()
    assert kept["left_out"] == [] and "user_defined/seed" in [p["name"] for p in kept["parameters"]]


def test_the_api_answers_again_from_its_cache_until_the_data_change(
    tmp_path: Path, monkeypatch: Any
) -> None:
    from trainledger.server.routes import importance as route

    base = _base(tmp_path)
    calls: list[str] = []
    real = route.hyperparameter_importance

    def counted(*args: Any, **kwargs: Any) -> dict[str, Any]:
        calls.append(args[1])
        return real(*args, **kwargs)

    monkeypatch.setattr(route, "hyperparameter_importance", counted)
    with client_for(base) as client:
        first = client.get("/api/v1/importance", params={"metric": "accuracy"}).json()
        again = client.get("/api/v1/importance", params={"metric": "accuracy"}).json()
        assert again == first and len(calls) == 1  # the same data: the forests are not refit
        write_run(base, "r99", learning_rate=0.1, metrics={"accuracy": 0.7}, mtime=10**10)
        later = client.get("/api/v1/importance", params={"metric": "accuracy"}).json()
        assert len(calls) == 2 and later["runs"] == first["runs"] + 1


def test_one_value_under_two_names_is_one_parameter_and_decades_want_a_log_axis() -> None:
    """``learning_rate`` and ``optimizer/lr`` hold the same value in every run: one parameter
    (the standard name kept, the other its alias), so its importance is not split in two; a
    positive parameter spanning two decades or more gets a log scatter (issue 51 item 13)."""
    from trainledger.query.importance import log_scaled, same_parameters

    rows = [
        {"learning_rate": lr, "optimizer/lr": lr, "batch_size": b, "optimizer/momentum": 0.9 + b}
        for lr, b in [(1e-4, 16), (1e-3, 32), (1e-2, 16)]
    ]
    columns = [
        ("learning_rate", "numeric"),
        ("batch_size", "numeric"),
        ("optimizer/lr", "numeric"),
        ("optimizer/momentum", "numeric"),
    ]
    assert same_parameters(rows, columns) == {
        "learning_rate": ["optimizer/lr"],
        "batch_size": [],
        "optimizer/momentum": [],
    }
    assert log_scaled([1e-4, 1e-3, 1e-2]) and not log_scaled([16, 32, 64])
    assert not log_scaled([-1.0, 10.0, 1000.0]) and not log_scaled([None, "adam"])


def test_the_answer_names_an_alias_once(tmp_path: Path) -> None:
    for i in range(12):
        lr = 10 ** (-4 + i * 0.25)
        write_run(
            tmp_path,
            f"r{i}",
            learning_rate=lr,
            optimizer_settings={"lr": lr},
            batch_size=(16, 32)[i % 2],
            metrics={"accuracy": 0.5 + i / 30},
        )
    answer = hyperparameter_importance(filter_summary_lineage(str(tmp_path)), "accuracy")
    names = [p["name"] for p in answer["parameters"]]
    assert "optimizer/lr" not in names and "learning_rate" in names
    lr = next(p for p in answer["parameters"] if p["name"] == "learning_rate")
    assert lr["aliases"] == ["optimizer/lr"] and lr["log"] is True
