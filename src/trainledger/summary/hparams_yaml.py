"""Reading the ``hparams.yaml`` Lightning's loggers leave in a run's folder.

Why: Lightning's ``TensorBoardLogger`` writes the HParams plugin data (``hparams_read.py``)
only when it has a metric to pair them with: with ``default_hp_metric=False`` and no
metrics, a run's hyper-parameters are only in the ``hparams.yaml`` of its ``version_N``
folder. The query engine reads both (``query.tb_runs``: the plugin's values win where both
name a field).

What it gives is what the plugin would have held: Lightning flattens nested mappings with
``/`` and turns anything but a bool, a number or a text into its ``str`` (``None`` into
``"None"``, a list into ``"[1, 2]"``); numbers are doubles, as the plugin stores them.

Why careful: the file may come from anyone who can write the folder (a shared bucket). It is
found through the one checked listing (``storage.run_files``: a symlink, which may point out
of the base, or a FIFO is never opened) and parsed with PyYAML's safe loader; the
``!!python/...`` tags Lightning's dumper may write (a tuple, an object) become their plain
values or text: nothing is ever imported, called or built from them. A file over
``MAX_BYTES`` is skipped, and at most ``MAX_FIELDS`` fields are taken (a YAML alias can make
a small file a huge mapping). Without PyYAML (Lightning depends on it) or with a damaged
file, there is nothing, and a warning says why.
"""

from __future__ import annotations

import functools
import logging
import os
from collections.abc import Iterator
from typing import Any

from trainledger.storage import HPARAMS_YAML, run_files

__all__ = ["MAX_BYTES", "MAX_FIELDS", "read_hparams_yaml"]

_log = logging.getLogger(__name__)

MAX_BYTES = 1 << 20  #: a larger ``hparams.yaml`` is not read
MAX_FIELDS = 10_000  #: fields taken from one file at most
_MAX_DEPTH = 16  #: nested mappings below this depth are taken as text


def read_hparams_yaml(folder: str | os.PathLike[str]) -> dict[str, float | str | bool]:
    """The hyper-parameters of ``folder``'s ``hparams.yaml``, flattened as Lightning logs
    them (see the module docstring); {} when there is none or it cannot be read."""
    found = run_files(folder, lambda name: name == HPARAMS_YAML)  # (no symlink, no FIFO)
    if not found:  # (the common case)
        return {}
    path = found[0].path
    try:
        with open(path, "rb") as fh:
            data = fh.read(MAX_BYTES + 1)
    except OSError:
        return {}
    if len(data) > MAX_BYTES:
        _log.warning("skipped %s: larger than %d bytes", path, MAX_BYTES)
        return {}
    try:
        import yaml
    except ImportError:
        _log.warning("skipped %s: reading it needs PyYAML (pip install pyyaml)", path)
        return {}
    try:
        loaded = yaml.load(data, Loader=_loader())  # noqa: S506 - a safe loader, below
    except (yaml.YAMLError, ValueError, RecursionError) as exc:
        _log.warning("skipped %s: %s", path, str(exc).splitlines()[0] if str(exc) else exc)
        return {}
    if not isinstance(loaded, dict):
        return {}
    out: dict[str, float | str | bool] = {}
    for key, value in _flat(loaded, "", 0):
        if len(out) >= MAX_FIELDS:
            _log.warning("took the first %d fields of %s", MAX_FIELDS, path)
            break
        out[key] = _cell(value)
    return out


def _flat(mapping: dict[Any, Any], prefix: str, depth: int) -> Iterator[tuple[str, Any]]:
    """(``a/b`` name, value) of every leaf, as Lightning's ``_flatten_dict`` names them."""
    for key, value in mapping.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict) and value and depth < _MAX_DEPTH:
            yield from _flat(value, f"{name}/", depth + 1)
        else:
            yield name, value


def _cell(value: Any) -> float | str | bool:
    """A leaf as the HParams plugin holds it: a bool, a double, or text."""
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        return value
    return str(value)


@functools.cache
def _loader() -> type:
    """PyYAML's safe loader that reads ``!!python/...`` tags as their plain node values."""
    import yaml

    class Loader(yaml.SafeLoader):  # type: ignore[misc]
        pass

    def plain(loader: Any, suffix: str, node: Any) -> Any:
        if isinstance(node, yaml.MappingNode):
            return loader.construct_mapping(node, deep=True)
        if isinstance(node, yaml.SequenceNode):
            items = loader.construct_sequence(node, deep=True)
            return tuple(items) if suffix == "tuple" else items  # (its str as Lightning's)
        return loader.construct_scalar(node)

    Loader.add_multi_constructor("tag:yaml.org,2002:python/", plain)
    return Loader
