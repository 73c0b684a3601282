"""A running run in headless Chromium: its hyperparameters, written at train begin
(``train_begin``), are in its table row, on the parallel coordinates' axes (no "—" category
for it) and in its run page's cards, as a finished run's are.

The running run is real: tests/golden/train-begin/runs/running, a trainledger training whose
process ended mid-epoch without an end hook (as SIGKILL leaves it)."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.runs import sample_run
from tests.server.browser_support import LiveServer, shot

pytestmark = pytest.mark.browser

FIXTURE = Path(__file__).resolve().parents[1] / "golden" / "train-begin" / "runs"


@pytest.fixture(scope="module")
def running_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    base = tmp_path_factory.mktemp("running") / "base"
    shutil.copytree(FIXTURE, base)  # finished and running
    sample_run(base, "other", 2)  # Momentum, lr 0.03, batch 64: every column varies
    server = LiveServer(base).start()
    yield server
    server.stop()


def _cells(page: Any, run: str) -> dict[str, str]:
    cells: dict[str, str] = page.evaluate(
        """(run) => Object.fromEntries([...document.querySelectorAll(
             `#runs-table tr[data-run="${run}"] td[data-column]`)]
           .map((td) => [td.dataset.column, td.textContent]))""",
        run,
    )
    return cells


def test_a_running_runs_row_and_axes_show_its_hyperparameters(
    page: Any, running_server: LiveServer
) -> None:
    page.goto(running_server.url + "#/lineage")
    page.wait_for_function("document.body.dataset.ready === 'lineage'")
    page.wait_for_function("document.querySelectorAll('#runs-table tbody tr').length === 3")
    cells = _cells(page, "running")
    assert cells["run/status"] == "running"
    assert (cells["optimizer"], cells["learning_rate"], cells["batch_size"]) == ("SGD", "0.05", "8")
    assert _cells(page, "finished")["optimizer"] == "SGD"
    option = page.evaluate(
        "echarts.getInstanceByDom(document.querySelector('#parcoords')).getOption()"
    )
    names = [axis["name"] for axis in option["parallelAxis"]]
    assert "optimizer" in names and "batch_size" in names
    for axis in option["parallelAxis"]:  # no run lacks one: no "—" category on their axes
        if axis["name"] in ("optimizer", "network", "loss_function"):
            assert "—" not in axis["data"], axis["name"]
    shot(page, "lineage-running-run")


def test_a_running_runs_page_has_its_hyperparameters_card(
    page: Any, running_server: LiveServer
) -> None:
    page.goto(f"{running_server.url}#/run/running")
    page.wait_for_function("document.body.dataset.ready === 'run'")
    page.wait_for_function("document.getElementById('run-title').textContent === 'running'")
    assert page.locator("#run-status").text_content() == "running"
    cards: dict[str, dict[str, str]] = page.evaluate(
        """() => Object.fromEntries([...document.querySelectorAll('#run-cards .card')].map((c) =>
             [c.querySelector('h2').textContent, Object.fromEntries([...c.querySelectorAll('dt')]
               .map((dt) => [dt.textContent, dt.nextElementSibling.textContent]))]))"""
    )
    hyper = cards["Hyperparameters"]
    assert (hyper["optimizer"], hyper["learning_rate"], hyper["batch_size"]) == ("SGD", "0.05", "8")
    assert hyper["epoch"] == "2" and hyper["loss_function"] == "CrossEntropyLoss"
    assert cards["Algorithm"] == {"network": "Sequential"}  # no loss before the end
    assert cards["Optimizer settings"]["momentum"] == "0.9"
    assert cards["Train dataset"]["train_dataset_size"] == "40"
    shot(page, "run-page-running")
