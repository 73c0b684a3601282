"""The vocabulary of search conditions: the field names, their kinds, the operators and the
keys that are not fields, and the two rules that read a name (``normalize_field``,
``is_field``).

Why apart from ``conditions.py``: these names are facts the whole query engine shares (the
schema's columns, the SQL and Python semantics, the ``--where`` compiler, the table and the
hyperparameter ranking read them), while the validation of one condition is
``conditions.py``'s; a module that only needs to know which fields exist should not depend on
how a condition is checked.
"""

from __future__ import annotations

from typing import Any

from trainledger.lineage import SETTINGS_KEYS
from trainledger.query.series_fields import parse_series_field

# The filterable fields, in MindInsight's FIELD_MAPPING order.
FIELDS: tuple[str, ...] = (
    "summary_dir",
    "loss_function",
    "train_dataset_path",
    "train_dataset_count",
    "test_dataset_path",
    "test_dataset_count",
    "network",
    "optimizer",
    "learning_rate",
    "epoch",
    "batch_size",
    "device_num",
    "loss",
    "model_size",
    "dataset_mark",
)
STR_FIELDS: frozenset[str] = frozenset(
    {
        "summary_dir",
        "loss_function",
        "train_dataset_path",
        "test_dataset_path",
        "network",
        "optimizer",
        "dataset_mark",
    }
)
INT_FIELDS: frozenset[str] = frozenset(
    {
        "train_dataset_count",
        "test_dataset_count",
        "epoch",
        "batch_size",
        "device_num",
        "model_size",
    }
)
FLOAT_FIELDS: frozenset[str] = frozenset({"learning_rate", "loss"})
#: trainledger's own filterable fields (not MindInsight's): from the run record, so they are
#: allowed in conditions and sorting but never shown in ``model_lineage``. ``status`` is the
#: run's state as written by the training (running, finished, failed, stopped), ``duration``
#: its seconds of training (a resumed run's: the sum of its sessions), ``sessions`` how many
#: processes trained it (1, or more for a resumed run); all None when the lineage has no run
#: record, as in MindSpore's files.
RUN_FIELDS: tuple[str, ...] = ("status", "duration", "sessions")
OPERATORS: tuple[str, ...] = ("eq", "lt", "gt", "le", "ge", "in", "not_in")
# Keys of a search condition that are not field filters.
#: the keys that join conditions (trainledger's, not MindInsight's): ``{"or": [cond, ...]}``,
#: ``{"and": [cond, ...]}``, ``{"not": cond}``; a condition's own fields are ANDed with them
LOGIC_KEYS: tuple[str, ...] = ("or", "and", "not")
#: ``series``: statistics to add to each object besides those the condition names
#: (``["max(eval/accuracy)"]``, ``series_fields.py``)
CONTROL_KEYS: tuple[str, ...] = (
    "limit", "offset", "sorted_name", "sorted_type", "lineage_type", "series", *LOGIC_KEYS,
)  # fmt: skip
#: the fixed fields that are hyperparameters (not results, not identifiers), in the order they
#: are worth a column: what tells runs apart (the CLI table, hyperparameter importance)
HYPERPARAMETERS: tuple[str, ...] = (
    "optimizer",
    "learning_rate",
    "batch_size",
    "epoch",
    "network",
    "loss_function",
    "device_num",
    "train_dataset_count",
    "dataset_mark",
)
LINEAGE_TYPES: tuple[str, ...] = ("dataset", "model")
#: the record's groups of named values, by the prefix their fields take: MindInsight's
#: ``metric/`` (evaluation results) and ``user_defined/`` (the user's keys), and trainledger's
#: ``optimizer/`` and ``scheduler/`` (the optimizer and scheduler as configured,
#: ``lineage.analyzers.settings``). The record keeps each group as a dict under its key.
#: Two groups take only the names listed for them: ``parent/`` (where the run's starting
#: weights came from, ``family_index.py``: its largest source's run, step, checkpoint and
#: match, and the number of sources) and ``run/`` (values of the run record worth a
#: condition: the fingerprint of the data it trained on).
GROUPS: dict[str, str] = {
    "metric/": "metric",
    "user_defined/": "user_defined",
    "optimizer/": "optimizer_settings",
    "scheduler/": "scheduler_settings",
    "parent/": "parent",
    "run/": "run",
    "registry/": "registry",
}
PREFIXES: tuple[str, ...] = tuple(GROUPS)
#: the names the closed groups take (see ``GROUPS``), number-valued ones marked
CLOSED_GROUPS: dict[str, dict[str, bool]] = {
    "parent/": {"run": False, "step": True, "checkpoint": False, "match": True, "count": True},
    "run/": {"train_dataset_fingerprint": False},
}
#: the grouped fields that are settings of a run, not results or where it came from
PARAMETER_PREFIXES: tuple[str, ...] = ("user_defined/", "optimizer/", "scheduler/")
#: the groups trainledger derives from more than the run's own values: ``registry/<name>``
#: (the newest version of a named model registered from the run) and
#: ``registry/<name>@<alias>`` (the version an alias names, on its run), ``registry_fields.py``
DERIVED_PREFIXES: tuple[str, ...] = (*CLOSED_GROUPS, "registry/")
#: a group's prefix by its record key (``optimizer_settings`` -> ``optimizer/``)
GROUP_PREFIXES: dict[str, str] = {group: prefix for prefix, group in GROUPS.items()}
#: the groups trainledger added (a run's answer has their key only when it has values)
SETTINGS_GROUPS: tuple[str, ...] = SETTINGS_KEYS
#: the groups an answer's ``model_lineage`` shows after metric and user_defined, when a run has
#: values in them
SHOWN_GROUPS: tuple[str, ...] = (*SETTINGS_GROUPS, "parent", "run", "registry")


def group_field(name: str) -> tuple[str, str] | None:
    """(the record's group key, the name inside it) of a grouped field, e.g.
    ``optimizer/betas.0`` -> ``("optimizer_settings", "betas.0")``; None for another field
    (``run/status``, which no closed group holds, among them)."""
    for prefix, group in GROUPS.items():
        if name.startswith(prefix) and len(name) > len(prefix):
            closed = CLOSED_GROUPS.get(prefix)
            if closed is not None and name[len(prefix) :] not in closed:
                return None
            return group, name[len(prefix) :]
    return None


def group_values(record: Any) -> list[tuple[str, Any]]:
    """(field name, value) of every grouped value of a record, group by group."""
    pairs: list[tuple[str, Any]] = []
    for prefix, group in GROUPS.items():
        values = record.get(group)
        if isinstance(values, dict):
            # (in C: a wide run holds 1,650 values)
            pairs.extend(zip(map(prefix.__add__, map(str, values)), values.values(), strict=True))
    return pairs


def normalize_field(name: str) -> str:
    """Map the older ``metric_<name>`` spelling to ``metric/<name>``."""
    if name.startswith("metric_") and len(name) > len("metric_"):
        return "metric/" + name[len("metric_") :]
    return name


def is_number_field(name: str) -> bool:
    """Whether ``name``'s values are numbers (a condition on it compares numbers): the
    int and float fields, ``duration``, ``sessions``, ``tag``, ``metric/``, statistics."""
    prefix, _, rest = name.partition("/")
    return (
        name in INT_FIELDS
        or name in FLOAT_FIELDS
        or name in ("duration", "sessions", "tag")
        or name.startswith(("metric/", "registry/"))
        or CLOSED_GROUPS.get(prefix + "/", {}).get(rest, False)
        or parse_series_field(name) is not None
    )


def is_field(name: Any) -> bool:
    """Whether ``name`` is a filterable/sortable field (after normalization)."""
    if not isinstance(name, str):
        return False
    return (
        name in FIELDS
        or name in RUN_FIELDS
        or group_field(name) is not None
        or parse_series_field(name) is not None
    )
