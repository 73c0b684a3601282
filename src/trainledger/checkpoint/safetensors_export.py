"""Export one checkpoint (MindSpore ``.ckpt`` or ours) as a plain ``.safetensors`` file.

Why: safetensors is what the torch ecosystem loads without trainledger (``safetensors.torch.
load_file``), memory-mapped and without pickle. Tensors keep their names, dtypes (bfloat16
included) and shapes; plain values (MindSpore string values, our append_info) go into the
file's string metadata. The file appears atomically: a crash leaves the old state.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from trainledger.storage import atomic_write_bytes

__all__ = ["export_safetensors"]


def export_safetensors(
    src: str | os.PathLike[str],
    dst: str | os.PathLike[str],
    dec_key: bytes | None = None,
    overwrite: bool = False,
) -> int:
    """Write the tensors of checkpoint ``src`` to ``dst`` (safetensors); returns their number.

    Refuses (``FileExistsError``) an existing ``dst`` unless ``overwrite``, and ``dst == src``.
    """
    import torch
    from safetensors.torch import save

    from trainledger.checkpoint.io import read_checkpoint

    src_path, dst_path = Path(src), Path(dst)
    if dst_path.resolve() == src_path.resolve():
        raise FileExistsError(f"DST {dst_path} is the source checkpoint; choose another file")
    if dst_path.exists() and not overwrite:
        raise FileExistsError(f"{dst_path} exists; pass overwrite=True (--overwrite) to replace it")
    ckpt = read_checkpoint(src_path, dec_key)
    tensors = {k: v.contiguous() for k, v in ckpt.tensors.items() if isinstance(v, torch.Tensor)}
    metadata = {"source": src_path.name, "format": str(ckpt.info.get("format", "trainledger"))}
    for name, value in ckpt.append_info.items():
        metadata[name] = value if isinstance(value, str) else json.dumps(value, default=str)
    atomic_write_bytes(dst_path, save(tensors, metadata=metadata))
    return len(tensors)
