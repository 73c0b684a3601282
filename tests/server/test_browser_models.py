"""Named models in headless Chromium (issue 54 item 5): the Models page's versions, alias
chips and history as drawn; Register on a run's checkpoint table (an error as a toast with
the server's message); an alias moved on the Models page, its history grown; the runs
table's chip; no write control with the read-only token."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.query.test_family import make_net, train
from tests.server.browser_support import LiveServer, doc_image, shot
from tests.server.test_browser import open_view, wait_rows
from trainledger.query import register_model, set_model_alias

pytestmark = pytest.mark.browser

RW = "rw-token-0123456789abcdef"
RO = "ro-token-0123456789abcdef"


def make_model_base(base: Path) -> Path:
    """``a`` and ``b``, trained and evaluated (checkpoints at steps 4 and 8); ``a``'s last
    registered as ``classifier/1`` by ``cli:ana@gpu-03``, ``production`` pointing at it."""
    train(base, "a", make_net(0), evaluate=True)
    train(base, "b", make_net(1), evaluate=True)
    version = register_model(base, "classifier", "a/m-2_4.ckpt", actor="cli:ana@gpu-03")
    set_model_alias(base, "classifier", "production", version, actor="cli:ana@gpu-03")
    return base


@pytest.fixture(scope="module")
def models_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    base = make_model_base(tmp_path_factory.mktemp("models") / "base")
    server = LiveServer(base, token=RW, read_token=RO).start()
    yield server
    server.stop()


def sign_in(page: Any, server: LiveServer, token: str) -> None:
    page.goto(f"{server.url}?token={token}")  # the cookie; the redirect drops the token


def card(page: Any, name: str = "classifier") -> Any:
    return page.locator(f'.model-card[data-model="{name}"]')


def cells(row: Any) -> list[str]:
    texts: list[str] = row.locator("td").all_inner_texts()
    return texts


def history(page: Any) -> list[list[str]]:
    rows = card(page).locator("table.model-history tbody tr")
    return [cells(rows.nth(i)) for i in range(rows.count())]


def toast_says(page: Any, text: str) -> None:
    page.wait_for_function(
        "(t) => !document.getElementById('toast').hidden"
        " && document.getElementById('toast').textContent.includes(t)",
        arg=text,
    )


def test_models_page_register_from_a_run_move_an_alias_and_the_runs_tables_chip(
    page: Any, models_server: LiveServer
) -> None:
    sign_in(page, models_server, RW)
    open_view(page, models_server.url, "models")
    # as drawn: the version, its run (a link), step, main metric, who; its alias as a chip
    (v1,) = card(page).locator("table.model-versions tbody tr").all()
    assert v1.get_attribute("data-version") == "1"
    version, aliases, run, checkpoint, step, metric, _, actor = cells(v1)
    assert (version, aliases, run, checkpoint, step) == (
        "v1",
        "@production",
        "a",
        "a/m-2_4.ckpt",
        "8",
    )
    assert metric.startswith("accuracy ") and actor == "cli:ana@gpu-03"
    assert v1.locator("a.run-link").get_attribute("href") == "#/run/a"
    assert [r[2:5] for r in history(page)] == [
        ["alias", "@production", "— → v1"],
        ["register", "—", "— → v1"],
    ]
    # Register on b's checkpoint table: a bad alias is the server's message, nothing registered
    open_view(page, models_server.url, "run/b")
    row = page.locator('#run-checkpoints tr[data-checkpoint="m-2_4.ckpt"]')
    row.locator("button.register").click()
    form = page.locator("#run-checkpoints form.register-form")
    form.locator("input[name=model]").fill("classifier")
    form.locator("input[name=alias]").fill("pro duction")
    form.locator("button[type=submit]").click()
    toast_says(page, "a model alias expected a short word")
    assert page.locator("#run-models").is_hidden()
    form.locator("input[name=alias]").fill("candidate")
    form.locator("button[type=submit]").click()
    toast_says(page, "Registered classifier v2 @candidate from m-2_4.ckpt")
    page.wait_for_selector("#run-models:not([hidden]) .model-chip")
    assert page.locator("#run-models .model-chip").all_inner_texts() == ["classifier v2 @candidate"]
    assert row.locator(".model-chip").all_inner_texts() == ["classifier v2 @candidate"]
    assert page.locator("#run-checkpoints form.register-form").count() == 0
    shot(page, "models-register")
    # the Models page: move production to v2; the chips follow and the history grows
    open_view(page, models_server.url, "models/classifier")
    assert card(page).locator("table.model-versions tbody tr").count() == 2
    assert len(history(page)) == 4
    form = card(page).locator("form.alias-form")
    form.locator("input[name=alias]").fill("production")
    form.locator("select[name=version]").select_option("2")
    form.locator("button[name=move]").click()
    toast_says(page, "classifier@production → v2 (was v1)")
    page.wait_for_function(
        "document.querySelectorAll('.model-card table.model-history tbody tr').length === 5"
    )
    newest = history(page)[0]
    assert newest[1].startswith("ui:write:") and RW not in newest[1]
    assert newest[2:5] == ["alias", "@production", "v1 → v2"]
    chips = card(page).locator('tr[data-version="2"] .alias-chip').all_inner_texts()
    assert chips == ["@candidate", "@production"]
    assert card(page).locator('tr[data-version="1"] .alias-chip').count() == 0
    shot(page, "models-page")
    doc_image(card(page), "models")
    # the runs table: one chip per run on its id cell, from one request
    page.goto("about:blank")
    requests: list[str] = []
    page.on("request", lambda r: requests.append(r.url) if "/api/v1/models" in r.url else None)
    open_view(page, models_server.url, "lineage")
    wait_rows(page, 2)
    chip = page.locator('#runs-table tr[data-run="b"] .model-chip')
    assert chip.inner_text() == "classifier v2 @candidate @production"
    assert page.locator('#runs-table tr[data-run="a"] .model-chip').inner_text() == "classifier v1"
    assert len(requests) == 1, requests


def test_the_read_only_token_shows_no_write_control(page: Any, models_server: LiveServer) -> None:
    sign_in(page, models_server, RO)
    open_view(page, models_server.url, "models")
    assert card(page).locator("table.model-versions tbody tr").count() >= 1
    assert page.locator("form.alias-form").count() == 0
    open_view(page, models_server.url, "run/a")
    page.wait_for_selector("#run-models:not([hidden]) .model-chip")
    assert page.locator("#run-checkpoints button.register").count() == 0
    assert page.locator('#run-checkpoints tr[data-checkpoint="m-2_4.ckpt"] .model-chip').count()
