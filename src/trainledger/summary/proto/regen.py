"""Regenerate ``summary_pb2.py`` / ``summary_pb2.pyi`` from ``summary.proto`` with grpcio-tools.

Run ``python -m trainledger.summary.proto.regen`` after editing the .proto; a test regenerates
into a temporary directory and checks the committed files are byte-identical, so the schema
and the code never drift apart.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

__all__ = ["PROTO_DIR", "GENERATED", "generate", "main"]

PROTO_DIR = Path(__file__).resolve().parent
_SRC_ROOT = PROTO_DIR.parents[2]  # .../src
_PROTO_REL = "trainledger/summary/proto/summary.proto"
GENERATED = ("summary_pb2.py", "summary_pb2.pyi")


def generate(out_dir: str | Path) -> dict[str, bytes]:
    """Run protoc into ``out_dir``; return generated file name -> bytes."""
    try:
        from grpc_tools import protoc  # dev dependency, only needed to regenerate
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise RuntimeError(
            "regenerating summary_pb2 needs grpcio-tools (pip install grpcio-tools)"
        ) from exc
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    args = [
        "protoc",
        f"-I{_SRC_ROOT}",
        f"--python_out={out}",
        f"--pyi_out={out}",
        str(_SRC_ROOT / _PROTO_REL),
    ]
    code = protoc.main(args)
    if code != 0:
        raise RuntimeError(f"protoc failed with exit code {code}: {' '.join(args)}")
    gen_dir = out / Path(_PROTO_REL).parent
    return {name: (gen_dir / name).read_bytes() for name in GENERATED}


def main() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        files = generate(tmp)
    for name, data in files.items():
        (PROTO_DIR / name).write_bytes(data)
        print(f"wrote {PROTO_DIR / name} ({len(data)} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
