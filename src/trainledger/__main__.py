"""``python -m trainledger``: the same as the ``trainledger`` command (for when the console
script is not on PATH, e.g. a venv that is not activated)."""

from __future__ import annotations

from trainledger.cli import cli

if __name__ == "__main__":
    cli()
