"""Regenerate ``lineage_pb2.py`` / ``lineage_pb2.pyi`` from ``lineage.proto`` with grpcio-tools.

Run ``python -m trainledger.lineage.proto.regen`` after editing the .proto; a test regenerates
into a temporary directory and checks the committed files are byte-identical.
"""

from __future__ import annotations

import sys

from trainledger._protoc import ProtoSpec

__all__ = ["PROTO_DIR", "GENERATED", "generate", "main"]

SPEC = ProtoSpec("trainledger/lineage/proto/lineage.proto")
PROTO_DIR = SPEC.proto_dir
GENERATED = SPEC.generated
generate = SPEC.generate
main = SPEC.main

if __name__ == "__main__":
    sys.exit(main())
