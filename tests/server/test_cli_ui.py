"""``trainledger ui``: options, the URL it prints, the warning for exposed servers."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from trainledger.cli.main import cli
from trainledger.cli.ui import is_loopback, ui_url


@pytest.fixture
def served(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    calls: list[dict[str, Any]] = []
    import uvicorn

    monkeypatch.setattr(uvicorn, "run", lambda app, **kw: calls.append({"app": app, **kw}))
    return calls


def test_defaults_bind_loopback(tmp_path: Path, served) -> None:  # type: ignore[no-untyped-def]
    result = CliRunner().invoke(cli, ["ui", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert served[0]["host"] == "127.0.0.1" and served[0]["port"] == 8080
    assert "http://127.0.0.1:8080/" in result.output
    assert "warning" not in result.output


def test_public_bind_without_token_warns(tmp_path: Path, served) -> None:  # type: ignore[no-untyped-def]
    result = CliRunner().invoke(cli, ["ui", str(tmp_path), "--host", "0.0.0.0", "--port", "9000"])
    assert result.exit_code == 0
    assert "warning: binding 0.0.0.0 without --token" in result.output
    assert served[0]["host"] == "0.0.0.0" and served[0]["port"] == 9000


def test_token_goes_in_the_printed_link(tmp_path: Path, served) -> None:  # type: ignore[no-untyped-def]
    result = CliRunner().invoke(
        cli, ["ui", str(tmp_path), "--host", "0.0.0.0", "--token", "abcdefghijklmnop"]
    )
    assert "warning" not in result.output
    assert "http://127.0.0.1:8080/?token=abcdefghijklmnop" in result.output
    assert served[0]["app"].state.token_required


def test_missing_base_is_an_error(tmp_path: Path, served) -> None:  # type: ignore[no-untyped-def]
    result = CliRunner().invoke(cli, ["ui", str(tmp_path / "nope")])
    assert result.exit_code == 2 and not served


@pytest.mark.parametrize(
    "host, loop",
    [
        ("127.0.0.1", True),
        ("::1", True),
        ("localhost", True),
        ("127.1.2.3", True),
        ("0.0.0.0", False),
        ("192.168.1.5", False),
        ("example.com", False),
    ],
)
def test_is_loopback(host: str, loop: bool) -> None:
    assert is_loopback(host) is loop


def test_ui_url_brackets_ipv6() -> None:
    assert ui_url("::1", 80) == "http://[::1]:80/"
