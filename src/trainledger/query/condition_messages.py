"""MindInsight 2.3.1's messages for a field's bad condition (and trainledger's for its own
fields), word for word: callers matched on them, and the oracle tests compare them.

Why apart from ``conditions.py``: these are data, the text of one answer per field; the
validation that picks one is ``conditions.py``'s.
"""

from __future__ import annotations

__all__ = ["FIELD_MESSAGES"]

FIELD_MESSAGES: dict[str, str] = {
    "summary_dir": "The parameter summary_dir is invalid. It should be a dict and the value "
    "should be a string.",
    "loss_function": "The parameter loss_function is invalid. "
    "It should be a dict and the value should be a string.",
    "train_dataset_path": "The parameter train_dataset_path is invalid."
    " It should be a dict and the value should be a string.",
    "train_dataset_count": "The parameter train_dataset_count is invalid. It should be a dict "
    "and the value should be a integer between 0 and pow(2, 63) -1.",
    "test_dataset_path": "The parameter test_dataset_path is invalid. "
    "It should be a dict and the value should be a string.",
    "test_dataset_count": "The parameter test_dataset_count is invalid. It should be a dict "
    "and the value should be a integer between 0 and pow(2, 63) -1.",
    "network": "The parameter network is invalid. It should be a dict and the value should be "
    "a string.",
    "optimizer": "The parameter optimizer is invalid. "
    "It should be a dict and the value should be a string.",
    "learning_rate": "The parameter learning_rate is invalid. "
    "It should be a dict and the value should be a float or a integer.",
    "epoch": "The parameter epoch is invalid. It should be a positive integer.",
    "batch_size": "The parameter batch_size is invalid. It should be a non-negative integer.",
    "device_num": "The parameter device_num is invalid. It should be a non-negative integer.",
    "limit": "Invalid input limit. 0 < limit <= 100",
    "offset": "Invalid input offset. 0 <= offset <= 100000",
    "loss": "The parameter loss is invalid. It should be a float.",
    "model_size": "The parameter model_size is invalid. "
    "It should be an integer between 0 and pow(2, 63) -1.",
    "dataset_mark": "The parameter dataset_mark is invalid. It should be a string.",
    "lineage_type": "The parameter lineage_type is invalid. It should be 'dataset' or 'model'.",
    "status": "The parameter status is invalid. It should be a dict and the value should be "
    "a string (running, finished, failed or stopped).",
    "duration": "The parameter duration is invalid. It should be a dict and the value should "
    "be a float or a integer (seconds).",
    "sessions": "The parameter sessions is invalid. It should be a non-negative integer.",
}
