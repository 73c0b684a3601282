"""Test helper: MindInsight's own schema, compiled from the vendored .proto.

protoc only parses the .proto into a descriptor set; the message classes are built from it by
the protobuf runtime itself (``message_factory.GetMessageClass``), so the helper works with
every runtime the package supports, whatever version of protoc generated code would target.
"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

GOLDEN = Path(__file__).resolve().parents[1] / "golden"
_CACHE: dict[str, Any] = {}


def mindinsight_pb2(tmp_dir: Path) -> Any:
    """MindInsight's lineage messages by name (``.LineageEvent``...), built once per process."""
    if "m" in _CACHE:
        return _CACHE["m"]
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
    from grpc_tools import protoc

    tmp_dir.mkdir(parents=True, exist_ok=True)
    proto = tmp_dir / "mindinsight_lineage.proto"
    proto.write_bytes((GOLDEN / "mindinsight_lineage.proto").read_bytes())
    out = tmp_dir / "mindinsight_lineage.desc"
    code = protoc.main(["protoc", f"-I{tmp_dir}", f"--descriptor_set_out={out}", str(proto)])
    assert code == 0
    files = descriptor_pb2.FileDescriptorSet.FromString(out.read_bytes())
    pool = descriptor_pool.DescriptorPool()  # its own pool: names may repeat ours
    for file_proto in files.file:
        pool.Add(file_proto)
    described = pool.FindFileByName(files.file[-1].name)
    module = SimpleNamespace(
        **{
            name: message_factory.GetMessageClass(desc)
            for name, desc in described.message_types_by_name.items()
        }
    )
    _CACHE["m"] = module
    return module
