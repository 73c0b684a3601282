"""The keys of a run's lineage dict (``get_summary_lineage``'s answer), in one light module.

Why apart from ``reader.py``: the query engine names these keys on every query (its fields,
the answer's shape), and importing the reader loads protobuf and the record framing, which a
query over an up-to-date index never uses.
"""

from __future__ import annotations

__all__ = ["SETTINGS_KEYS", "SUMMARY_KEYS"]

# get_summary_lineage's keys (MindInsight's order), then ours.
SUMMARY_KEYS = (
    "metric",
    "hyper_parameters",
    "algorithm",
    "train_dataset",
    "model",
    "valid_dataset",
    "dataset_graph",
    "user_defined",
    "run",
)
#: trainledger's keys shown only when the run has them (MindSpore's runs never do, so their
#: answers keep MindInsight's shape): the optimizer and scheduler as configured
SETTINGS_KEYS = ("optimizer_settings", "scheduler_settings")
