"""Every committed protobuf module is what protoc makes of its .proto today, written by the
generator that keeps the protobuf floor (``tools/regen_protos.py``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tools.regen_protos import GENERATOR, PROTOS, ProtoSpec, embedded_descriptor


@pytest.mark.parametrize("spec", PROTOS, ids=lambda s: Path(s.proto_rel).name)
def test_committed_modules_embed_the_schema_protoc_compiles_today(
    spec: ProtoSpec, tmp_path: Path
) -> None:
    module = spec.generated[0]
    fresh = spec.generate(tmp_path)[module]
    committed = (spec.proto_dir / module).read_bytes()
    assert embedded_descriptor(committed) == embedded_descriptor(fresh), (
        f"{module} is stale: run make protos"
    )
    # written by the old generator: no runtime version check, so any runtime >= 4.25 loads it
    assert b"# Protobuf Python Version: 4.25.1" in committed, f"{module}: not from {GENERATOR}"
    assert b"ValidateProtobufRuntimeVersion" not in committed
