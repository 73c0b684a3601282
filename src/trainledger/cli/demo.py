"""``trainledger demo``: train a few small runs and show them (``--online``: the CTR stream).

Thin: the training logic lives in ``trainledger.demos``; torch and scikit-learn are imported
only when the command runs, so ``trainledger --help`` stays fast.
"""

from __future__ import annotations

import importlib
from pathlib import Path

import click


@click.command()
@click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("demo-runs"),
    show_default=True,
    help="Directory that receives one sub-directory per run.",
)
@click.option(
    "--online",
    is_flag=True,
    help="Run the online CTR demo (a click stream trained with RecModel) instead.",
)
@click.option(
    "--max-steps",
    type=click.IntRange(min=0),
    default=2000,
    show_default=True,
    help="Steps of the online demo (0: until Ctrl-C). Ignored without --online.",
)
def demo(out: Path, online: bool, max_steps: int) -> None:
    """Train a few small runs with different hyperparameters and print a table of them.

    The offline demo trains MLPs and a CNN on scikit-learn's digits images (shipped with
    scikit-learn, no download), each run in its own directory under OUT.
    """
    from rich.console import Console  # ~25 ms, on use: ``trainledger demo --help`` stays fast

    console = Console()
    if online:
        module = _import_demo("trainledger.demos.online_ctr", "the online demo")
        summary = module.run(out, max_steps)
        if summary:
            for key, value in summary.items():
                console.print(f"{key}: {value}")
        return
    offline = _import_demo("trainledger.demos.offline", "the demo")
    offline.run_demo(out, console)


def _import_demo(name: str, what: str):  # type: ignore[no-untyped-def]
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as exc:
        missing = exc.name or ""
        if missing == name:
            raise click.ClickException(
                f"{what} is not available in this installation ({name} is missing)"
            ) from exc
        if missing.split(".")[0] in ("sklearn", "torch"):
            raise click.ClickException(
                f"{what} needs {missing.split('.')[0]}: "
                "pip install -c constraints.txt 'trainledger[torch,demo]'"
            ) from exc
        raise
