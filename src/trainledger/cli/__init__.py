"""The `trainledger` command; subcommands are thin calls into the packages."""

from __future__ import annotations

from typing import TYPE_CHECKING

from trainledger.lazy import lazy_exports

_EXPORTS: dict[str, str] = {
    "cli_command": "trainledger.cli.hints",
    "render_table": "trainledger.cli.table",
    "cli": "trainledger.cli.main",
}

__all__ = [
    "cli",
    "cli_command",
    "render_table",
]

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())

if TYPE_CHECKING:  # pragma: no cover - for type checkers and IDEs only
    from trainledger.cli.hints import cli_command
    from trainledger.cli.main import cli
    from trainledger.cli.table import render_table
