"""Test helper: MindInsight's own schema, compiled from the vendored .proto into tmp dirs."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

GOLDEN = Path(__file__).resolve().parents[1] / "golden"
_CACHE: dict[str, ModuleType] = {}


def mindinsight_pb2(tmp_dir: Path) -> ModuleType:
    """``mindinsight_lineage_pb2`` generated with grpc_tools' protoc (once per process: the
    descriptor pool accepts a file only once)."""
    if "m" in _CACHE:
        return _CACHE["m"]
    from grpc_tools import protoc

    tmp_dir.mkdir(parents=True, exist_ok=True)
    (tmp_dir / "mindinsight_lineage.proto").write_bytes(
        (GOLDEN / "mindinsight_lineage.proto").read_bytes()
    )
    code = protoc.main(
        [
            "protoc",
            f"-I{tmp_dir}",
            f"--python_out={tmp_dir}",
            str(tmp_dir / "mindinsight_lineage.proto"),
        ]
    )
    assert code == 0
    spec = importlib.util.spec_from_file_location(
        "mindinsight_lineage_pb2", tmp_dir / "mindinsight_lineage_pb2.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["mindinsight_lineage_pb2"] = module
    spec.loader.exec_module(module)
    _CACHE["m"] = module
    return module
