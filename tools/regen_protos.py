"""Regenerate the committed ``*_pb2.py`` / ``*_pb2.pyi`` files with grpcio-tools' protoc.

Run ``make protos`` after editing a .proto: it runs ``python -m tools.regen_protos`` in a
side venv that holds ``grpcio-tools`` ``GENERATOR`` (protoc 25.1).

Why committed code: users need no protoc at install time. Why that old protoc: its code has no
runtime version check and runs on every protobuf runtime from 4.25 to today's (the floor
``pyproject.toml`` declares; ``make test`` runs the protobuf tests on it), where code from a
new protoc refuses any runtime older than itself. Why a regen test: it compiles each schema
with the dev venv's protoc and checks that the committed module embeds the same serialized
descriptor, so a .proto and its code never drift apart. grpcio-tools is a dev dependency only.
"""

from __future__ import annotations

import re
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

__all__ = ["GENERATOR", "PROTOS", "ProtoSpec", "embedded_descriptor", "main"]

#: The grpcio-tools release whose protoc writes the committed modules (protoc 25.1).
GENERATOR = "1.62.3"

_SRC_ROOT = Path(__file__).resolve().parents[1] / "src"


@dataclass(frozen=True)
class ProtoSpec:
    """One .proto of the package, given relative to ``src`` (its import path)."""

    proto_rel: str

    @property
    def proto_dir(self) -> Path:
        return _SRC_ROOT / Path(self.proto_rel).parent

    @property
    def generated(self) -> tuple[str, str]:
        stem = Path(self.proto_rel).stem
        return (f"{stem}_pb2.py", f"{stem}_pb2.pyi")

    def generate(self, out_dir: str | Path) -> dict[str, bytes]:
        """Run protoc into ``out_dir``; return generated file name -> bytes."""
        try:
            from grpc_tools import protoc
        except ImportError as exc:  # pragma: no cover - depends on the environment
            raise RuntimeError(
                f"regenerating {self.generated[0]} needs grpcio-tools (pip install grpcio-tools)"
            ) from exc
        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        # protoc's well-known types (google/protobuf/struct.proto), shipped with grpcio-tools
        well_known = Path(protoc.__file__).resolve().parent / "_proto"
        args = [
            "protoc",
            f"-I{_SRC_ROOT}",
            f"-I{well_known}",
            f"--python_out={out}",
            f"--pyi_out={out}",
            str(_SRC_ROOT / self.proto_rel),
        ]
        code = protoc.main(args)
        if code != 0:
            raise RuntimeError(f"protoc failed with exit code {code}: {' '.join(args)}")
        gen_dir = out / Path(self.proto_rel).parent
        return {name: (gen_dir / name).read_bytes() for name in self.generated}

    def main(self) -> int:
        """Regenerate the committed files in place (with ``GENERATOR`` only)."""
        with tempfile.TemporaryDirectory() as tmp:
            files = self.generate(tmp)
        for name, data in files.items():
            (self.proto_dir / name).write_bytes(data)
            print(f"wrote {self.proto_dir / name} ({len(data)} bytes)")
        return 0


#: Every schema of the package.
PROTOS = (
    ProtoSpec("trainledger/summary/proto/summary.proto"),
    ProtoSpec("trainledger/summary/proto/mindspore_summary.proto"),
    ProtoSpec("trainledger/checkpoint/proto/mindspore_checkpoint.proto"),
    ProtoSpec("trainledger/summary/proto/hparams.proto"),
    ProtoSpec("trainledger/lineage/proto/lineage.proto"),
)


def embedded_descriptor(module_source: bytes) -> bytes:
    """The serialized ``FileDescriptorProto`` a generated ``_pb2.py`` embeds."""
    match = re.search(rb"AddSerializedFile\((b'.*?')\)", module_source, re.S)
    if match is None:
        raise ValueError("not a protoc-generated _pb2 module: no AddSerializedFile call")
    value = eval(match.group(1), {"__builtins__": {}})  # a bytes literal written by protoc
    assert isinstance(value, bytes)
    return value


def main() -> int:
    from importlib.metadata import version

    found = version("grpcio-tools")
    if found != GENERATOR:
        print(
            f"regen_protos expected grpcio-tools {GENERATOR}, found {found}: run `make protos`",
            file=sys.stderr,
        )
        return 2
    for spec in PROTOS:
        spec.main()
    return 0


if __name__ == "__main__":
    sys.exit(main())
