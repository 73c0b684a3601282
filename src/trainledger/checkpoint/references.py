"""Loading a named model: ``load_checkpoint("classifier@production", net, base=BASE)``.

Why a hook: the registry of named models lives in the query package, which stands above this
one (a checkpoint never imports a query: the layer rules). So the facade, which every
``trainledger`` import loads first, registers the query's resolver here
(``set_reference_resolver``), as it registers the default progress bar with the training
host; ``load_checkpoint`` asks it for the file a reference names and then loads that file
like any other, so the load is recorded alike (``digests.note_loaded``: the file's public
name and digests, from which a run started after it finds its parent).

Also here: ``check_filter_prefix``, ``load_checkpoint``'s check of ``filter_prefix``.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from trainledger.errors import CheckpointLoadError

__all__ = ["check_filter_prefix", "resolve_reference", "set_reference_resolver"]

#: (reference, base) -> the checkpoint file (a local path or an ``s3://`` URL)
Resolver = Callable[[str, Any], str]

_RESOLVER: list[Resolver] = []


def set_reference_resolver(resolver: Resolver) -> None:
    """Make ``resolver`` answer the references ``load_checkpoint(..., base=)`` is given (the
    facade registers ``trainledger.query.model_checkpoint``); the last one registered wins."""
    if not callable(resolver):
        raise TypeError(
            f"set_reference_resolver expected a callable, received: {type(resolver).__name__}"
        )
    _RESOLVER[:] = [resolver]


def resolve_reference(ref: Any, base: str | os.PathLike[str]) -> str:
    """The checkpoint file that ``ref`` (``NAME@ALIAS`` or ``NAME/VERSION``) names in the
    registry of ``base``; the resolver's errors (``ModelNotFoundError``...) as they are."""
    if not isinstance(ref, str):
        raise TypeError(
            "ckpt_file_name with base= expected a model reference, NAME@ALIAS or NAME/VERSION; "
            f"received: {type(ref).__name__}"
        )
    if not _RESOLVER:
        raise CheckpointLoadError(
            f"cannot resolve {ref!r}: no registry of named models is registered (import "
            "trainledger, which registers it)"
        )
    return _RESOLVER[0](ref, base)


def check_filter_prefix(filter_prefix: Any) -> tuple[str, ...]:
    """``filter_prefix`` (a str, or a list or tuple of them) as a tuple of prefixes."""
    if filter_prefix is None:
        return ()
    items = (filter_prefix,) if isinstance(filter_prefix, str) else filter_prefix
    if not isinstance(items, (list, tuple)) or not all(isinstance(p, str) and p for p in items):
        raise TypeError(
            "filter_prefix expected a non-empty str or a list/tuple of them, "
            f"received: {filter_prefix!r}"
        )
    return tuple(items)
