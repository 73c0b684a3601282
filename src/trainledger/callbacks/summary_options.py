"""SummaryCollector's argument checks and collection decisions, as small pure functions.

Kept apart from the callback so the rules (which keys, which types, which steps) are tested as
tables without a training loop (docs/development.md, convention 3).
"""

from __future__ import annotations

import copy
import json
import logging
import os
import re
from collections.abc import Mapping
from typing import Any

from trainledger.run import rank_and_world
from trainledger.storage import writable_dir

__all__ = [
    "is_not_tensor_plugin",
    "is_tensor_plugin",
    "tensor_range",
    "DEFAULT_SPECIFIED_DATA",
    "HYPER_CONFIG_ENV",
    "TENSOR_STEP_LIMIT",
    "process_specified_data",
    "check_landscape",
    "process_custom_lineage_data",
    "tensor_collect_steps",
]

logger = logging.getLogger("trainledger.summary")

HYPER_CONFIG_ENV = "MINDINSIGHT_HYPER_CONFIG"
HYPER_CONFIG_LEN_LIMIT = 100_000
TENSOR_STEP_LIMIT = 20

_DEFAULT_LANDSCAPE: dict[str, Any] = {
    "landscape_size": 40,
    "unit": "step",
    "num_samples": 128,
    "create_landscape": {"train": True, "result": True},
    "intervals": [[1, 2, 3, 4, 5, 6, 7, 8, 9], [10, 11, 12, 13, 14, 15, 16, 17, 18, 19]],
}

DEFAULT_SPECIFIED_DATA: dict[str, Any] = {
    "collect_metric": True,
    "collect_graph": True,
    "collect_train_lineage": True,
    "collect_eval_lineage": True,
    "collect_input_data": True,
    "collect_dataset_graph": True,
    "histogram_regular": None,
    "collect_landscape": _DEFAULT_LANDSCAPE,
    # trainledger's: the GPU allocator's memory (allocated, reserved, peak) with each record
    "collect_device_stats": False,
}
_BOOL_KEYS = frozenset(DEFAULT_SPECIFIED_DATA) - {"histogram_regular", "collect_landscape"}


def _type_name(value: Any) -> str:
    return type(value).__name__


def process_specified_data(specified: Any, keep_default_action: Any) -> dict[str, Any]:
    """The effective collection switches.

    None -> every default (or nothing when ``keep_default_action`` is False). A dict -> its
    keys over the defaults (``keep_default_action=True``) or alone (False). Unknown keys are a
    ValueError naming them; a wrong type is a TypeError naming the key.
    """
    if not isinstance(keep_default_action, bool):
        raise TypeError(
            f"keep_default_action expected a bool, received: {_type_name(keep_default_action)}"
        )
    if specified is None:
        return copy.deepcopy(DEFAULT_SPECIFIED_DATA) if keep_default_action else {}
    if not isinstance(specified, dict):
        raise TypeError(
            f"collect_specified_data expected a dict or None, received: {_type_name(specified)}"
        )
    for key in specified:
        if not isinstance(key, str):
            raise TypeError(
                f"collect_specified_data keys expected str, received: {key!r} ({_type_name(key)})"
            )
    unknown = sorted(set(specified) - set(DEFAULT_SPECIFIED_DATA))
    if unknown:
        raise ValueError(
            f"collect_specified_data keys {unknown} are not supported; expected keys among "
            f"{list(DEFAULT_SPECIFIED_DATA)}"
        )
    for key in _BOOL_KEYS & set(specified):
        if not isinstance(specified[key], bool):
            raise TypeError(
                f"collect_specified_data[{key!r}] expected a bool, received: "
                f"{_type_name(specified[key])}"
            )
    if "histogram_regular" in specified:
        regular = specified["histogram_regular"]
        if regular is not None and not isinstance(regular, str):
            raise TypeError(
                "collect_specified_data['histogram_regular'] expected a str or None, received: "
                f"{_type_name(regular)}"
            )
        if isinstance(regular, str):
            try:
                re.compile(regular)
            except re.error as exc:
                raise ValueError(
                    "collect_specified_data['histogram_regular'] expected a valid regular "
                    f"expression, received: {regular!r} ({exc})"
                ) from exc
    if "collect_landscape" in specified:
        check_landscape(specified["collect_landscape"])
    result = copy.deepcopy(DEFAULT_SPECIFIED_DATA) if keep_default_action else {}
    result.update(copy.deepcopy(specified))
    return result


def check_landscape(landscape: Any) -> None:
    """Validate ``collect_landscape`` as MindSpore does (``SummaryLandscape`` checks it too)."""
    key = "collect_specified_data['collect_landscape']"
    if landscape is None:
        return
    if not isinstance(landscape, dict):
        raise TypeError(f"{key} expected a dict or None, received: {_type_name(landscape)}")
    unknown = sorted(set(landscape) - set(_DEFAULT_LANDSCAPE))
    if unknown:
        raise ValueError(
            f"{key} keys {unknown} are not supported; expected {list(_DEFAULT_LANDSCAPE)}"
        )
    size = landscape.get("landscape_size", 40)
    if isinstance(size, bool) or not isinstance(size, int):
        raise TypeError(f"{key}['landscape_size'] expected an int, received: {_type_name(size)}")
    if not 3 <= size <= 256:
        raise ValueError(f"{key}['landscape_size'] expected 3..256, received: {size}")
    unit = landscape.get("unit", "step")
    if unit not in ("step", "epoch"):
        raise ValueError(f"{key}['unit'] expected 'step' or 'epoch', received: {unit!r}")
    samples = landscape.get("num_samples", 128)
    if isinstance(samples, bool) or not isinstance(samples, int):
        raise TypeError(f"{key}['num_samples'] expected an int, received: {_type_name(samples)}")
    create = landscape.get("create_landscape", {"train": True, "result": True})
    if not isinstance(create, dict):
        raise TypeError(
            f"{key}['create_landscape'] expected a dict, received: {_type_name(create)}"
        )
    for name, flag in create.items():
        if name not in ("train", "result"):
            raise ValueError(
                f"{key}['create_landscape'] keys expected 'train' or 'result', received: {name!r}"
            )
        if not isinstance(flag, bool):
            raise TypeError(
                f"{key}['create_landscape'][{name!r}] expected a bool, received: {_type_name(flag)}"
            )
    intervals = landscape.get("intervals", _DEFAULT_LANDSCAPE["intervals"])
    if not isinstance(intervals, list):
        raise TypeError(f"{key}['intervals'] expected a list, received: {_type_name(intervals)}")
    for interval in intervals:
        if not isinstance(interval, list):
            raise TypeError(
                f"{key}['intervals'] expected lists of ints, received: {_type_name(interval)}"
            )
        if len(interval) < 3:
            raise ValueError(
                f"{key}['intervals'] expected at least 3 epochs per interval, received: {interval}"
            )
        for item in interval:
            if isinstance(item, bool) or not isinstance(item, int):
                raise TypeError(
                    f"{key}['intervals'] expected ints, received: {item!r} ({_type_name(item)})"
                )


def _check_custom(name: str, data: Any) -> dict[str, int | float | str]:
    if not isinstance(data, dict):
        raise TypeError(f"{name} expected a dict or None, received: {_type_name(data)}")
    for key, value in data.items():
        if not isinstance(key, str):
            raise TypeError(f"{name} keys expected str, received: {key!r} ({_type_name(key)})")
        if isinstance(value, bool) or not isinstance(value, (int, float, str)):
            raise TypeError(
                f"{name}[{key!r}] expected an int, float or str, received: {_type_name(value)}"
            )
    return dict(data)


def _hyper_config_lineage(environ: Mapping[str, str]) -> dict[str, int | float | str]:
    """``custom_lineage_data`` from the tuner's ``MINDINSIGHT_HYPER_CONFIG`` JSON, if any.

    A malformed variable is logged and ignored, as in MindSpore: it is set by a tool, and a bad
    value must not stop the training it launched.
    """
    raw = environ.get(HYPER_CONFIG_ENV)
    if raw is None:
        return {}
    if len(raw) > HYPER_CONFIG_LEN_LIMIT:
        logger.warning(
            "%s is longer than %d characters; ignored", HYPER_CONFIG_ENV, HYPER_CONFIG_LEN_LIMIT
        )
        return {}
    try:
        config = json.loads(raw)
    except json.JSONDecodeError as exc:
        logger.warning("%s is not valid JSON (%s); ignored", HYPER_CONFIG_ENV, exc)
        return {}
    data = config.get("custom_lineage_data") if isinstance(config, dict) else None
    if data is None:
        return {}
    try:
        return _check_custom(f"{HYPER_CONFIG_ENV}['custom_lineage_data']", data)
    except TypeError as exc:
        logger.warning("%s; ignored", exc)
        return {}


def process_custom_lineage_data(custom: Any, environ: Any = None) -> dict[str, int | float | str]:
    """User data validated and merged over the environment's hyper-config data (user wins)."""
    user = {} if custom is None else _check_custom("custom_lineage_data", custom)
    merged = _hyper_config_lineage(os.environ if environ is None else environ)
    merged.update(user)
    return merged


def tensor_collect_steps(
    total_steps: int | None, collect_freq: int, collect_tensor_freq: int | None
) -> range | None:
    """The steps (or sink epochs) at which tensor summaries are kept, MindSpore's rule.

    With ``collect_tensor_freq`` every multiple of it. Otherwise the same steps as the other
    summaries, thinned to at most ``TENSOR_STEP_LIMIT`` (20) steps spread over the run. The
    first step is always collected besides. ``None`` when the run's length is unknown (an
    iterable without ``len``): the caller then counts instead.
    """
    if total_steps is None:
        return None
    if collect_tensor_freq is not None:
        return range(0, total_steps + 1, collect_tensor_freq)
    regular = len(range(0, total_steps + 1, collect_freq))
    if regular <= TENSOR_STEP_LIMIT:
        return range(0, total_steps + 1, collect_freq)
    tensor_freq = total_steps // (TENSOR_STEP_LIMIT - 1)
    if tensor_freq > 1:
        return range(0, total_steps + 1, tensor_freq)[:TENSOR_STEP_LIMIT]
    return range(0, total_steps + 1)[: TENSOR_STEP_LIMIT + 1]


def tensor_range(
    params: Any, sink: bool, collect_freq: int, collect_tensor_freq: int | None
) -> range | None:
    """The steps of a run at which tensors are collected (``tensor_collect_steps``), from
    cb_params' ``epoch_num``/``batch_num``; None when the run's length is unknown."""
    epochs = params.get("epoch_num")
    batches = params.get("batch_num")
    if epochs is None:
        total = None
    elif sink:
        total = int(epochs)
    else:
        total = int(epochs) * int(batches) if batches else None
    return tensor_collect_steps(total, collect_freq, collect_tensor_freq)


def is_tensor_plugin(plugin: str) -> bool:
    """The plugin filter of a tensor step (``SummaryRecord.record(plugin_filter=...)``)."""
    return plugin == "tensor"


def is_not_tensor_plugin(plugin: str) -> bool:
    """The plugin filter of a step that is not a tensor step."""
    return plugin != "tensor"


def rank_summary_dir(summary_dir: str | os.PathLike[str], all_ranks: bool) -> tuple[str, bool]:
    """(directory, whether this rank collects): rank 0 alone by default under
    torch.distributed; every rank into ``rank_<n>/`` with ``all_ranks``. Made when it collects."""
    directory = writable_dir(summary_dir, "summary_dir")
    rank, world = rank_and_world()
    if world > 1 and all_ranks:
        directory = os.path.join(directory, f"rank_{rank}")
    active = rank == 0 or bool(all_ranks)
    if active:
        os.makedirs(directory, exist_ok=True)
    return directory, active
