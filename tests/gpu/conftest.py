"""The GPU check (``tools/gpu-check.sh``): every test here is marked ``cuda`` and is skipped
where torch sees no CUDA device, so the suite passes on CPU machines and CI."""

from __future__ import annotations

import pytest
import torch


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    skip = pytest.mark.skip(reason="needs a CUDA device (tools/gpu-check.sh on a GPU machine)")
    for item in items:
        if "tests/gpu/" in str(item.fspath).replace("\\", "/"):
            item.add_marker(pytest.mark.cuda)
            if not torch.cuda.is_available():
                item.add_marker(skip)
