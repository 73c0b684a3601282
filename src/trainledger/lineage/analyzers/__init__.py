"""Analyzers that turn the user's torch objects (data loaders, datasets, networks, optimizers)
and the process environment into the plain values a lineage record holds.

They read public attributes only and never fail a run: anything they cannot work out is
reported as unknown (None). torch is imported lazily, where a torch object is inspected.
"""

from trainledger.lineage.analyzers.dataset import DatasetInfo, analyze_dataset
from trainledger.lineage.analyzers.environment import (
    distributed_info,
    environment_info,
    git_info,
    torch_seed,
)
from trainledger.lineage.analyzers.fingerprint import dataset_fingerprint
from trainledger.lineage.analyzers.network import (
    initial_learning_rate,
    loss_function_name,
    network_name,
    optimizer_name,
)
from trainledger.lineage.analyzers.settings import (
    Configured,
    configured,
    optimizer_settings,
    scheduler_settings,
)

__all__ = [
    "Configured",
    "configured",
    "optimizer_settings",
    "scheduler_settings",
    "DatasetInfo",
    "analyze_dataset",
    "dataset_fingerprint",
    "distributed_info",
    "environment_info",
    "git_info",
    "torch_seed",
    "initial_learning_rate",
    "loss_function_name",
    "network_name",
    "optimizer_name",
]
