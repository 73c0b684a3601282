"""Runs of a TensorBoard logdir: which folders make one run, and what it answers to queries.

Why: a logdir written by ``torch.utils.tensorboard``, Lightning's ``TensorBoardLogger`` or
Keras holds no lineage file, yet its runs have hyper-parameters (the HParams plugin data)
and scalars. They answer queries as they are, with nothing converted (docs/queries.md,
"Runs from a TensorBoard logdir"). The rules, here in one place for the scan
(``discovery.py``), the series statistics (``series_index.py``) and the records:

- a directory without lineage files is a run when it holds event files (``*tfevents*``),
  or has a Keras part (below);
- its *parts* are sub-directories that belong to it rather than being runs of their own:
  Keras's ``train/`` and ``validation/`` (their scalars join the run's series under the
  folder's name: ``validation/epoch_loss``) and the ``<time.time()>/`` folders torch's
  ``add_hparams`` writes (their HParams join the run; their scalars are those hparams'
  metrics, read from there). Parts lie one level below their run whatever ``max_depth``
  says; they are real directories (a symlink is not a part), and nothing below a part is
  read. A timestamp folder belongs to a parent that is a run by the rules above; below a
  parent that is not, it is a run of its own (when ``max_depth`` reaches it);
- a directory holding lineage files is a lineage run exactly as before, event files or not.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Mapping
from typing import Any

from trainledger.storage import list_lineage_files

__all__ = [
    "SERIES_PARTS",
    "is_part_name",
    "run_parts",
    "series_parts",
    "series_parts_of",
    "tensorboard_lineage",
]

#: Keras's parts: their scalars join the run's series, named ``<part>/<tag>``
SERIES_PARTS = ("train", "validation")
#: what ``str(time.time())`` gives: torch's ``add_hparams`` folder names
_TIMESTAMP = re.compile(r"\d{9,11}\.\d+")


def is_part_name(name: str) -> bool:
    """Whether a sub-directory called ``name`` belongs to a TensorBoard run above it."""
    return name in SERIES_PARTS or _TIMESTAMP.fullmatch(name) is not None


def run_parts(path: str, children: tuple[tuple[str, str], ...]) -> tuple[tuple[str, str], ...]:
    """The (name, path) of the children of directory ``path`` that may be parts of a run
    there: real sub-directories (a listed symlink's path is its target's) with part names."""
    return tuple(
        (name, child)
        for name, child in children
        if is_part_name(name) and child == os.path.join(path, name)
    )


def series_parts(parts: tuple[str, ...]) -> tuple[str, ...]:
    """The parts whose scalars join the run's series (Keras's), in a fixed order."""
    return tuple(p for p in SERIES_PARTS if p in parts)


def series_parts_of(run_dir: str | os.PathLike[str]) -> tuple[str, ...]:
    """The Keras parts of the run at ``run_dir`` when it is a TensorBoard run (no lineage
    file): for a reader of one run's scalars (the UI's charts), which has no scan at hand."""
    if list_lineage_files(run_dir):
        return ()
    return tuple(p for p in SERIES_PARTS if _real_dir(os.path.join(run_dir, p)))


def _real_dir(path: str) -> bool:
    try:
        return stat.S_ISDIR(os.lstat(path).st_mode)
    except OSError:
        return False


def _part_order(name: str) -> tuple[int, float, str]:
    """Keras's parts first, then torch's timestamp folders in time order (later wins)."""
    return (0, 0.0, name) if name in SERIES_PARTS else (1, float(name), name)


def tensorboard_lineage(
    run_dir: str, parts: tuple[str, ...], last: Mapping[str, float | None]
) -> tuple[dict[str, Any], str | None]:
    """What a TensorBoard run answers: (``{"user_defined": hparams, "metric": metrics}``,
    its status).

    ``user_defined``: the run folder's ``hparams.yaml`` (Lightning's), then the session
    starts' hyper-parameters by name (run folder first, then its parts; a later session's
    value wins), numbers as the plugin stores them, doubles.
    ``metric``: each metric the HParams experiments name, with TensorBoard's value, the
    last point of its tag in the folder that holds the experiment (``<group>/<tag>`` when it
    names a group): a timestamp part's own scalars, or else the run's series statistics
    ``last`` (``last``: tag -> value, tags named as in the series). The status is the
    session end's, when one carries an end time.
    """
    # (heavy: the summary readers load numpy and protobuf, which only parsing a run needs,
    # not a query over the index: ``dir_listing`` imports this module)
    from trainledger.lineage import shortest_float32
    from trainledger.summary import read_hparams, read_hparams_yaml

    user: dict[str, Any] = {}
    metric: dict[str, Any] = {}
    status: str | None = None
    folders = [("", run_dir)] + [
        (p, os.path.join(run_dir, p)) for p in sorted(parts, key=_part_order)
    ]
    for part, folder in folders:
        stamped = part not in ("", *SERIES_PARTS)
        if not part:  # Lightning's, the plugin's values win (``summary.hparams_yaml``)
            user.update(_bools_as_ints(read_hparams_yaml(folder)))
        found = read_hparams(folder, scalars=stamped)
        user.update(_bools_as_ints(found.hparams))
        status = found.status or status
        for group, tag in found.metrics:
            name = f"{group}/{tag}" if group else tag
            if stamped:
                value = None if group else found.scalars.get(tag)
            else:
                value = last.get(f"{part}/{name}" if part else name)
            if value is not None:
                metric[name] = shortest_float32(value)
    return {"user_defined": dict(sorted(user.items())), "metric": metric}, status


def _bools_as_ints(hparams: Mapping[str, Any]) -> dict[str, Any]:
    """A bool as an int, as in every user_defined/ field (lineage.validate_user_defined_info):
    a condition compares numbers and text, never bools."""
    return {k: int(v) if isinstance(v, bool) else v for k, v in hparams.items()}
