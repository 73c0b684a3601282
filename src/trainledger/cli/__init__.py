"""The `trainledger` command; subcommands are thin calls into the packages."""

from __future__ import annotations

from typing import TYPE_CHECKING

from trainledger.lazy import lazy_exports

_EXPORTS: dict[str, str] = {
    "cli": "trainledger.cli.main",
    "render_table": "trainledger.cli.lineage",
}

__all__ = [
    "cli",
    "render_table",
]

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())

if TYPE_CHECKING:  # pragma: no cover - for type checkers and IDEs only
    from trainledger.cli.lineage import render_table
    from trainledger.cli.main import cli
