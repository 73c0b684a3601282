"""Record which checkpoint files MindSpore's ModelCheckpoint leaves for a few configs (run once).

Usage: /work/venvs/mindspore/bin/python tests/golden/conformance/record_mindspore.py

Trains a tiny network for 2 epochs of 4 steps (16 samples, batch 4, no sink) with
``ModelCheckpoint(prefix="net", config=CheckpointConfig(**config))`` per config below, and
writes ``mindspore_checkpoints.json`` next to this file: per config MindSpore's effective
policy (``get_checkpoint_policy()``, ``saved_network`` as a bool), and the sorted names of the
files left in the directory. Also MindSpore's ``append_dict`` for a few ``append_info`` values,
what its ``CheckpointManager`` does to a directory of files with known mtimes, and the errors
of the checks ``RecModel.online_train`` applies to ``dataset_sink_mode`` (``check_bool``) and,
in sink mode, ``sink_size`` (``check_positive_int``).
tests/checkpoint/test_mindspore_conformance.py reads it; tests never need MindSpore.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

import mindspore as ms
import numpy as np
from mindspore import dataset as ds
from mindspore import nn
from mindspore.train import CheckpointConfig, Model, ModelCheckpoint

HERE = Path(__file__).resolve().parent
EPOCHS, SAMPLES, BATCH = 2, 16, 4

CONFIGS: dict[str, dict] = {
    "default": {},
    "seconds_only": {"save_checkpoint_seconds": 3600},
    "seconds_with_steps_off": {"save_checkpoint_steps": 0, "save_checkpoint_seconds": 3600},
    "max0_minutes0": {"keep_checkpoint_max": 0, "keep_checkpoint_per_n_minutes": 0},
    "max_none": {"keep_checkpoint_max": None},
    "steps3_max2": {"save_checkpoint_steps": 3, "keep_checkpoint_max": 2},
    "minutes_only": {"keep_checkpoint_per_n_minutes": 1440},
    "minutes_with_max_off": {"keep_checkpoint_max": 0, "keep_checkpoint_per_n_minutes": 1440},
}
APPEND_INFOS = {
    "none": None,
    "empty": [],
    "epoch_step": ["epoch_num", "step_num"],
    "with_dict": ["step_num", {"lr": 0.01, "name": "run1", "flag": True}],
}


def dataset() -> ds.Dataset:
    rng = np.random.default_rng(0)
    x = rng.standard_normal((SAMPLES, 4)).astype(np.float32)
    y = (x[:, 0] > 0).astype(np.int32)
    return ds.NumpySlicesDataset({"x": x, "y": y}, shuffle=False).batch(BATCH)


def files_left(config: dict) -> dict:
    cfg = CheckpointConfig(**config)
    policy = cfg.get_checkpoint_policy()
    policy["saved_network"] = policy["saved_network"] is not None
    with tempfile.TemporaryDirectory() as tmp:
        net = nn.Dense(4, 2)
        loss = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
        model = Model(net, loss, nn.SGD(net.trainable_params(), learning_rate=0.1))
        cb = ModelCheckpoint(prefix="net", directory=tmp, config=cfg)
        model.train(EPOCHS, dataset(), callbacks=[cb], dataset_sink_mode=False)
        names = sorted(os.listdir(tmp))
    return {"config": config, "policy": policy, "files": names}


MANAGER_FILES = {  # name -> mtime offset in seconds
    "net-1_1.ckpt": 0,
    "net-1_2.ckpt": 60,
    "net-1_3.ckpt": 150,
    "net-1_4.ckpt": 170,
    "net_1-1_1.ckpt": 5,
    "net-1_2_breakpoint.ckpt": 10,
    "notes.txt": 20,
}
T0 = 1_800_000_000


def manager_steps() -> dict:
    """update_ckpoint_filelist, remove_oldest_ckpoint_file, keep_one_ckpoint_per_minutes."""
    from mindspore.train.callback._checkpoint import CheckpointManager

    def names(manager: CheckpointManager) -> list[str]:
        return sorted(os.path.basename(p) for p in manager.ckpoint_filelist)

    with tempfile.TemporaryDirectory() as tmp:
        for name, offset in MANAGER_FILES.items():
            path = os.path.join(tmp, name)
            Path(path).write_bytes(b"x")
            os.utime(path, (T0 + offset, T0 + offset))
        manager = CheckpointManager()
        steps = {"empty": names(manager)}
        manager.update_ckpoint_filelist(tmp, "net")
        steps["updated"] = names(manager)
        manager.remove_oldest_ckpoint_file()
        steps["after_remove_oldest"] = names(manager)
        manager.keep_one_ckpoint_per_minutes(2, T0 + 200)  # the files of the last 120 s
        steps["after_keep_one_per_2_minutes"] = names(manager)
        steps["on_disk"] = sorted(os.listdir(tmp))
    return {"files": MANAGER_FILES, "t0": T0, "cur_time": T0 + 200, "minutes": 2, **steps}


def sink_checks() -> dict:
    """MindSpore's own validators on the values RecModel.online_train may be given."""
    from mindspore import _checkparam as validator

    def error(fn: Any, value: Any) -> dict:
        try:
            fn(value)
        except (TypeError, ValueError) as exc:
            return {"value": value, "error": type(exc).__name__, "message": str(exc)}
        return {"value": value, "error": None}

    return {
        "dataset_sink_mode": [error(validator.check_bool, v) for v in ("yes", 1, None)],
        "sink_size": [error(validator.check_positive_int, v) for v in (0, -2, 1.5, True, "3")],
    }


def main() -> None:
    ms.set_context(mode=ms.PYNATIVE_MODE, device_target="CPU")
    out = {
        "mindspore": ms.__version__,
        "epochs": EPOCHS,
        "samples": SAMPLES,
        "batch": BATCH,
        "runs": {name: files_left(config) for name, config in CONFIGS.items()},
        "append_dict": {
            name: CheckpointConfig(append_info=info).append_dict
            for name, info in APPEND_INFOS.items()
        },
        "append_info": APPEND_INFOS,
        "manager": manager_steps(),
        "sink_checks": sink_checks(),
    }
    (HERE / "mindspore_checkpoints.json").write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()
