"""The ``trainledger`` command.

Subcommands are thin calls into the packages and are imported only when used, so that
``trainledger lineage`` and ``trainledger ui`` start quickly and work without torch.
To add one: write a click command in ``trainledger/cli/<name>.py`` and list it in ``_COMMANDS``.
"""

from __future__ import annotations

import importlib
import importlib.util
from typing import Any

import click

from trainledger.errors import TrainledgerError
from trainledger.version import __version__

#: the failures a command expects (a bucket, credentials, an index, a file, an extra): one
#: line each; anything else is a bug and keeps its traceback
_EXPECTED = (TrainledgerError, OSError)

# subcommand name -> "module:attribute" of its click command
_COMMANDS: dict[str, str] = {
    "archive": "trainledger.cli.admin:archive",
    "audit": "trainledger.cli.admin:audit",
    "delete": "trainledger.cli.admin:delete",
    "demo": "trainledger.cli.demo:demo",
    "export": "trainledger.cli.export:export",
    "family": "trainledger.cli.family:family",
    "import": "trainledger.cli.importing:import_group",
    "importance": "trainledger.cli.importance:importance",
    "lineage": "trainledger.cli.lineage:lineage",
    "models": "trainledger.cli.models:models",
    "restore": "trainledger.cli.admin:restore",
    "show": "trainledger.cli.lineage:show",
    "sync": "trainledger.cli.sync:sync",
    "ui": "trainledger.cli.ui:ui",
}


class _LazyGroup(click.Group):
    """A group whose subcommands are imported on first use, and whose expected failures are
    one line (``invoke``)."""

    def invoke(self, ctx: click.Context) -> Any:
        """Run the subcommand; an expected failure (a missing bucket, credentials, an
        unreachable index, a permission, a missing extra: any ``TrainledgerError`` or
        ``OSError``) is ``trainledger: error: <cause>`` on stderr and exit status 1, not a
        traceback of 60 lines; ``--debug`` lets it raise with its traceback."""
        try:
            return super().invoke(ctx)
        except _EXPECTED as exc:
            if ctx.params.get("debug"):
                raise
            click.echo(f"trainledger: error: {one_line(exc)}", err=True)
            ctx.exit(1)

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


def one_line(exc: BaseException) -> str:
    """``exc`` as one line naming its cause: its message (else its type) and its notes, line
    breaks made spaces; a chained cause the message does not already hold is appended."""
    parts = [str(exc) or type(exc).__name__, *getattr(exc, "__notes__", ())]
    cause = exc.__cause__
    if cause is not None and str(cause) and str(cause) not in parts[0]:
        parts.append(f"({type(cause).__name__}: {cause})")
    return " ".join(" ".join(part.split()) for part in parts)


@click.group(cls=_LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "--version", "-V", prog_name="trainledger")
@click.option(
    "--debug",
    is_flag=True,
    help="Show the traceback of a failure (by default: one line naming its cause).",
)
def cli(debug: bool) -> None:
    """trainledger: which data, network, optimizer and hyperparameters made which checkpoint
    and which score."""


def main() -> None:
    """Console-script entry point."""
    cli()


if __name__ == "__main__":  # pragma: no cover
    main()
