"""The run page in headless Chromium: its own curves, the landscape's weight snapshots listed
apart from checkpoints, and values shown as a person reads them (units, the model's path, no
"model size 0", a message for a missing dataset graph)."""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

import pytest

from tests.landscape.helpers import train_run
from tests.runs import OPTIMIZERS, make_base, sample_run, write_run
from tests.server.browser_support import LiveServer, shot
from tests.server.structure_runs import SETTINGS
from trainledger.summary import read_scalars

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def run_page_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    base = tmp_path_factory.mktemp("run-page") / "base"
    base.mkdir()
    train_run(base / "trained", SETTINGS)  # SummaryCollector's curves and weight snapshots
    sample_run(base, "sampled", 1, scalars=20)  # a checkpoint and its JSON model path
    write_run(base, "bare", train=False, metrics={"acc": 0.5})  # no dataset graph, no checkpoint
    server = LiveServer(base).start()
    yield server
    server.stop()


def _open_run(page: Any, url: str, run: str) -> None:
    page.goto(f"{url}#/run/{run}")
    page.wait_for_function("document.body.dataset.ready === 'run'")
    page.wait_for_function(f"document.getElementById('run-title').textContent === {run!r}")


def _card_value(page: Any, title: str, key: str) -> str:
    text: str = page.evaluate(
        """([title, key]) => {
          const card = [...document.querySelectorAll('#run-cards .card')]
            .find((c) => c.querySelector('h2').textContent === title);
          const dt = [...card.querySelectorAll('dt')].find((d) => d.textContent === key);
          return dt.nextElementSibling.textContent;
        }""",
        [title, key],
    )
    return text


def test_the_run_page_draws_the_runs_own_scalars(page: Any, run_page_server: LiveServer) -> None:
    _open_run(page, run_page_server.url, "trained")
    page.wait_for_selector("#run-scalars:not([hidden]) .chart-small[data-points]")
    charts = page.locator("#run-scalars .chart-small")
    tags = [charts.nth(i).get_attribute("data-tag") for i in range(charts.count())]
    assert "loss/auto" in tags
    loss = page.locator('#run-scalars .chart-small[data-tag="loss/auto"]')
    steps = read_scalars(run_page_server.base / "trained")["loss/auto"][0]
    assert int(loss.get_attribute("data-points") or 0) == len(steps) >= 2  # every point
    box = loss.locator('svg path[fill="none"]').first.bounding_box()
    assert box is not None and box["width"] > 100  # a drawn line across the chart
    shot(page, "run-page-scalars")


def test_landscape_snapshots_are_listed_apart_from_checkpoints(
    page: Any, run_page_server: LiveServer
) -> None:
    _open_run(page, run_page_server.url, "trained")
    page.wait_for_selector("#run-snapshots:not([hidden]) tbody tr")
    snapshots = page.locator("#run-snapshots tbody tr").all_inner_texts()
    assert snapshots and all(row.startswith("ckpt_dir/") for row in snapshots)
    assert "ckpt_dir/" not in page.locator("#run-checkpoints tbody").inner_text()
    assert "No checkpoints." in page.locator("#run-checkpoints tbody").inner_text()
    # no checkpoint: not "model size 0"
    assert _card_value(page, "Model", "size") == "— (no checkpoint)"


def test_values_are_shown_with_units_and_the_models_path(
    page: Any, run_page_server: LiveServer
) -> None:
    _open_run(page, run_page_server.url, "sampled")
    page.wait_for_selector("#run-checkpoints tbody tr td")
    path = _card_value(page, "Model", "path")
    assert path.endswith(".ckpt") and not path.startswith("{")  # the path, not raw JSON
    assert _card_value(page, "Model", "size").endswith(("B", "KiB"))
    assert page.locator("#run-snapshots").is_hidden()
    assert page.locator("#run-tree-empty").is_hidden()


def test_a_run_without_a_dataset_graph_says_so(page: Any, run_page_server: LiveServer) -> None:
    _open_run(page, run_page_server.url, "bare")
    page.wait_for_selector("#run-tree-empty:not([hidden])")
    assert page.locator("#run-tree").is_hidden()
    assert "No dataset graph" in page.locator("#run-tree-empty").inner_text()
    assert page.locator("#run-scalars").is_hidden()  # no scalars written: no empty card


@pytest.fixture(scope="module")
def sweep_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    """Four runs: learning rates over three decades, a constant epoch, two batch sizes."""
    base = tmp_path_factory.mktemp("sweep") / "base"
    for i, lr in enumerate((1e-4, 1e-3, 1e-2, 1e-1)):
        write_run(
            base,
            f"lr{i}",
            learning_rate=lr,
            epoch=3,
            batch_size=(16, 32)[i % 2],
            metrics={"accuracy": 0.6 + i / 10},
            mtime=100 + i,
        )
    server = LiveServer(base).start()
    yield server
    server.stop()


def test_runs_page_leaves_constant_fields_out_and_spans_decades_on_a_log_axis(
    page: Any, sweep_server: LiveServer
) -> None:
    page.goto(sweep_server.url + "#/lineage")
    page.wait_for_function("document.body.dataset.ready === 'lineage'")
    page.wait_for_function("document.querySelector('#parcoords').dataset.lines === '4'")
    axes = page.evaluate(
        """() => {
          const chart = echarts.getInstanceByDom(document.querySelector('#parcoords'));
          const model = chart.getModel();
          return chart.getOption().parallelAxis.map((a, i) => {
            const axis = model.getComponent('parallelAxis', i).axis;
            const at = (v) => axis.dataToCoord(v);
            return {name: a.name, type: a.type,
                    span: a.type === 'log' ? [at(1e-4), at(1e-3), at(1e-1)] : null};
          });
        }"""
    )
    names = [a["name"] for a in axes]
    assert "epoch" not in names and "batch_size" in names  # constant: not an axis
    note = page.locator("#chart-constant")
    assert note.is_visible() and "epoch = 3" in note.inner_text()
    lr = next(a for a in axes if a["name"] == "learning_rate")
    assert lr["type"] == "log"
    low, next_decade, high = lr["span"]  # each decade a third of the axis, on screen
    assert abs(next_decade - low) == pytest.approx(abs(high - low) / 3, rel=0.01)
    assert abs(high - low) > 150
    headers = page.locator("#runs-table thead th").all_inner_texts()
    assert not any(h.startswith("epoch") for h in headers)  # nor a default column
    assert any(h.startswith("batch_size") for h in headers)
    shot(page, "runs-constant-and-log")


@pytest.fixture(scope="module")
def sample_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    base = make_base(tmp_path_factory.mktemp("groups") / "runs", n=6, scalars=20)
    server = LiveServer(base).start()
    yield server
    server.stop()


def _series(page: Any, tag: str) -> list[dict[str, Any]]:
    series: list[dict[str, Any]] = page.evaluate(
        """(tag) => {
          const host = document.querySelector(`[data-chart-tag="${tag}"] .chart-scalar`);
          return echarts.getInstanceByDom(host).getOption().series
            .map((s) => ({name: s.name, type: s.type, data: s.data.map((p) => p.slice(0, 3))}));
        }""",
        tag,
    )
    return series


def test_runs_grouped_by_a_field_draw_each_groups_mean_and_band(
    page: Any, sample_server: LiveServer
) -> None:
    runs = [f"run{i:02d}" for i in range(6)]
    query = "&".join(f"run={r}" for r in runs) + "&tag=loss&smooth=0&group=optimizer"
    page.goto(f"{sample_server.url}#/scalars?{query}")  # a shared link: the same view
    page.wait_for_function("document.body.dataset.ready === 'scalars'")
    page.wait_for_function(
        "document.querySelector('[data-chart-tag=\"loss\"] .chart-scalar')?.dataset.groups === '3'"
    )
    assert page.locator("#group-by").input_value() == "optimizer"
    series = _series(page, "loss")
    means = {s["name"]: s["data"] for s in series if not s["name"].endswith("(band)")}
    assert len(means) == 3 and all(name.startswith("optimizer = ") for name in means)
    # tests/runs.py: run i has optimizer OPTIMIZERS[i % 3] and loss 2 exp(-step/20) + 0.1 i
    for k, optimizer in enumerate(OPTIMIZERS):
        members = [i for i in range(6) if i % 3 == k]
        mean = next(d for n, d in means.items() if n.startswith(f"optimizer = {optimizer} "))
        step, value, _ = mean[5]
        expected = sum(2 * math.exp(-step / 20) + 0.1 * i for i in members) / len(members)
        assert value == pytest.approx(expected)
        band = next(
            s["data"] for s in series if s["name"].endswith("(band)") and optimizer in s["name"]
        )
        assert band[5][0] == step  # min and max of the group's runs at the step
        assert band[5][2] - band[5][1] == pytest.approx(0.1 * (max(members) - min(members)))
    # the band is on screen: a filled polygon per group
    areas = page.locator('[data-chart-tag="loss"] svg path[fill-opacity="0.2"]')
    assert areas.count() == 3
    # the run list's swatches are the groups' colours: a run's is its group's mean line's
    swatches = page.evaluate(
        r"""() => {
          const rgb = (c) => { const e = document.createElement('i'); e.style.color = c;
            document.body.append(e); const v = getComputedStyle(e).color; e.remove(); return v; };
          const host = document.querySelector('[data-chart-tag="loss"] .chart-scalar');
          const lines = {};
          for (const s of echarts.getInstanceByDom(host).getOption().series) {
            if (!/\(band\)$/.test(s.name)) lines[s.name.split(' ')[2]] = rgb(s.color);
          }
          return [...document.querySelectorAll('#scalar-runs .swatch[data-group]')].map((e) =>
            [e.dataset.group, getComputedStyle(e).backgroundColor, lines[e.dataset.group]]);
        }"""
    )
    assert len(swatches) == 6 and {g for g, _, _ in swatches} == set(OPTIMIZERS)
    assert all(swatch == line for _, swatch, line in swatches)
    assert len({swatch for _, swatch, _ in swatches}) == 3
    shot(page, "scalars-grouped")


def test_the_scalar_views_state_is_kept_in_a_shareable_url(
    page: Any, sample_server: LiveServer
) -> None:
    page.goto(f"{sample_server.url}#/scalars")
    page.wait_for_function("document.body.dataset.ready === 'scalars'")
    page.wait_for_selector('#scalar-runs input[data-run="run04"]')
    page.check('#scalar-runs input[data-run="run04"]')
    page.locator("#smoothing").fill("0.3")
    page.select_option("#group-by", "batch_size")
    page.wait_for_function("location.hash.includes('group=batch_size')")
    link = page.evaluate("location.href")
    assert "run=run04" in link and "smooth=0.3" in link
    other = page.context.new_page()
    other.goto(link)
    other.wait_for_function("document.body.dataset.ready === 'scalars'")
    other.wait_for_function("document.querySelector('#group-by').value === 'batch_size'")
    assert other.locator('#scalar-runs input[data-run="run04"]').is_checked()
    assert other.locator("#smoothing-value").inner_text() == "0.30"
