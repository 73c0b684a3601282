"""Savers: thread and spawned-process writers snapshot, write, and surface errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from trainledger.checkpoint import load_checkpoint
from trainledger.checkpoint.async_save import ProcessSaver, SyncSaver, ThreadSaver, make_saver
from trainledger.errors import CheckpointWriteError


def state() -> dict[str, torch.Tensor]:
    return {
        "w": torch.randn(64, 33),
        "b": torch.randn(7).bfloat16(),
        "t": torch.arange(10).reshape(2, 5).t(),
        "flag": torch.tensor(True),
        "e": torch.empty(0),
    }


@pytest.mark.parametrize("saver_cls", [ThreadSaver, ProcessSaver])
def test_snapshot_then_write(tmp_path: Path, saver_cls: type) -> None:
    saver = saver_cls()
    try:
        tensors = state()
        expected = {k: v.clone() for k, v in tensors.items()}
        for i in range(3):
            path = tmp_path / f"s{i}.ckpt"
            saver.save(path, list(tensors.items()), {"epoch": i})
            tensors["w"].add_(1.0)  # mutate right after: the snapshot must not see it
            assert saver.wait() == path
            loaded = load_checkpoint(path, crc_check=True)
            for k, v in expected.items():
                assert torch.equal(loaded[k], v), (i, k)
            expected["w"] = expected["w"] + 1.0
        with pytest.raises(RuntimeError, match="in flight"):
            saver.save(tmp_path / "a.ckpt", list(tensors.items()), {})
            saver.save(tmp_path / "b.ckpt", list(tensors.items()), {})
        saver.wait()
    finally:
        saver.close()
    assert saver.wait() is None


@pytest.mark.parametrize("saver_cls", [ThreadSaver, ProcessSaver])
def test_encrypted_async(tmp_path: Path, saver_cls: type) -> None:
    saver = saver_cls()
    try:
        saver.save(tmp_path / "e.ckpt", [("w", torch.ones(5))], {}, b"k" * 16, "AES-CBC")
        saver.wait()
    finally:
        saver.close()
    out = load_checkpoint(tmp_path / "e.ckpt", dec_key=b"k" * 16, dec_mode="AES-CBC")
    assert torch.equal(out["w"], torch.ones(5))


@pytest.mark.parametrize("saver_cls", [ThreadSaver, ProcessSaver])
def test_background_error_surfaces_once(tmp_path: Path, saver_cls: type) -> None:
    saver = saver_cls()
    try:
        bad = tmp_path / "no" / "such" / "dir" / "x.ckpt"  # the writer cannot create it
        saver.save(bad, [("w", torch.ones(2))], {})
        with pytest.raises(CheckpointWriteError, match="background save of .*x.ckpt failed"):
            saver.wait()
        saver.save(tmp_path / "ok.ckpt", [("w", torch.ones(2))], {})  # later saves still work
        assert saver.wait() == tmp_path / "ok.ckpt"
        saver.save(bad, [("w", torch.ones(2))], {})
    finally:
        with pytest.raises(CheckpointWriteError):
            saver.close()  # close waits and raises the pending failure


def test_process_saver_survives_a_dead_writer(tmp_path: Path) -> None:
    saver = ProcessSaver()
    try:
        saver.save(tmp_path / "a.ckpt", [("w", torch.ones(2))], {})
        saver.wait()
        saver._proc.kill()  # killed between saves: the next save spawns a new writer
        saver._proc.wait()
        saver.save(tmp_path / "b.ckpt", [("w", torch.ones(2))], {})
        assert saver.wait() == tmp_path / "b.ckpt"
        saver._proc.kill()  # killed while a save is in flight: that save fails loudly
        saver._proc.wait()
        saver._ensure_child = lambda: None  # type: ignore[method-assign]
        with pytest.raises(CheckpointWriteError, match="writer process died"):
            saver.save(tmp_path / "x.ckpt", [("w", torch.ones(2))], {})
            saver.wait()
        del saver._ensure_child
        saver.save(tmp_path / "c.ckpt", [("w", torch.ones(2))], {})  # a new writer is spawned
        assert saver.wait() == tmp_path / "c.ckpt"
    finally:
        saver.close()


def test_process_messages_are_json(tmp_path: Path) -> None:
    from trainledger.checkpoint import async_save

    sent: list[bytes] = []
    original = async_save.send_message

    def spy(stream: object, message: dict) -> None:
        sent.append(json.dumps(message).encode())
        original(stream, message)

    async_save.send_message = spy  # type: ignore[assignment]
    saver = ProcessSaver()
    try:
        saver.save(tmp_path / "j.ckpt", [("w", torch.ones(2))], {"epoch": 1})
        saver.wait()
    finally:
        async_save.send_message = original  # type: ignore[assignment]
        saver.close()
    msg = json.loads(sent[0])
    assert msg["op"] == "save" and msg["tensors"][0][:3] == ["w", "F32", [2]]


def test_make_saver() -> None:
    assert isinstance(make_saver(False), SyncSaver)
    for mode, cls in ((True, ThreadSaver), ("thread", ThreadSaver), ("process", ProcessSaver)):
        saver = make_saver(mode)
        assert isinstance(saver, cls)
        saver.close()
    with pytest.raises(ValueError, match="async_save"):
        make_saver("fork")
