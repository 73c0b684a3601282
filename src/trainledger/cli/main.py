"""The ``trainledger`` command.

Subcommands are thin calls into the packages and are imported only when used, so that
``trainledger lineage`` and ``trainledger ui`` start quickly and work without torch.
To add one: write a click command in ``trainledger/cli/<name>.py`` and list it in ``_COMMANDS``.
"""

from __future__ import annotations

import importlib
import importlib.util

import click

from trainledger.version import __version__

# subcommand name -> "module:attribute" of its click command
_COMMANDS: dict[str, str] = {
    "archive": "trainledger.cli.admin:archive",
    "audit": "trainledger.cli.admin:audit",
    "delete": "trainledger.cli.admin:delete",
    "demo": "trainledger.cli.demo:demo",
    "export": "trainledger.cli.export:export",
    "import": "trainledger.cli.importing:import_group",
    "importance": "trainledger.cli.importance:importance",
    "lineage": "trainledger.cli.lineage:lineage",
    "restore": "trainledger.cli.admin:restore",
    "show": "trainledger.cli.lineage:show",
    "sync": "trainledger.cli.sync:sync",
    "ui": "trainledger.cli.ui:ui",
}


class _LazyGroup(click.Group):
    """A group whose subcommands are imported on first use."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(name for name in _COMMANDS if self._importable(name))

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        target = _COMMANDS.get(cmd_name)
        if target is None:
            return None
        module_name, attr = target.split(":")
        return getattr(importlib.import_module(module_name), attr)  # type: ignore[no-any-return]

    @staticmethod
    def _importable(name: str) -> bool:
        module_name = _COMMANDS[name].split(":")[0]
        return importlib.util.find_spec(module_name) is not None


@click.group(cls=_LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "--version", "-V", prog_name="trainledger")
def cli() -> None:
    """trainledger: which data, network, optimizer and hyperparameters made which checkpoint
    and which score."""


def main() -> None:
    """Console-script entry point."""
    cli()


if __name__ == "__main__":  # pragma: no cover
    main()
