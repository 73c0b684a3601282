"""Every committed protobuf module is what protoc makes of its .proto today."""

from __future__ import annotations

from pathlib import Path

import pytest

from tools.regen_protos import PROTOS, ProtoSpec


@pytest.mark.parametrize("spec", PROTOS, ids=lambda s: Path(s.proto_rel).name)
def test_regenerating_is_byte_identical(spec: ProtoSpec, tmp_path: Path) -> None:
    for name, data in spec.generate(tmp_path).items():
        committed = (spec.proto_dir / name).read_bytes()
        assert committed == data, f"{name} is stale: run python -m tools.regen_protos"
