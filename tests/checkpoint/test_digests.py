"""Per-tensor digests (issue 53 item 1): each checkpoint's header holds the crc32c of each
tensor, from the save's one pass over the bytes; they equal the digests of the same tensors
taken in memory, a load records what it read, and the safetensors library still reads the
file."""

from __future__ import annotations

from pathlib import Path

import crc32c
import numpy as np
import pytest
import torch
from safetensors.torch import load_file, save_file
from torch import nn

from trainledger.checkpoint import load_checkpoint, save_checkpoint
from trainledger.checkpoint.digests import digests_of, header_digests, take_loads
from trainledger.checkpoint.format import read_container
from trainledger.checkpoint.header import COMBINE_FROM


def net() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(4, 300), nn.BatchNorm1d(300), nn.Linear(300, 600))


def test_the_header_holds_each_tensors_crc_of_its_bytes(tmp_path: Path) -> None:
    model = net()
    path = tmp_path / "m.ckpt"
    save_checkpoint(model, str(path))
    container = read_container(path)
    found = header_digests(container.info, container.entries)
    assert found is not None and len(found) == len(model.state_dict())
    state = model.state_dict()
    for name, crc, kind in zip(found.names, found.crcs, found.kinds, strict=True):
        raw = state[name].detach().contiguous().reshape(-1).view(torch.uint8).numpy()
        assert crc == crc32c.crc32c(raw.tobytes()), name  # the bytes' own crc, by itself
        assert kind.split(":")[1] == "x".join(map(str, state[name].shape)), name
    memory = digests_of(state.items())
    assert dict(zip(memory.names, memory.keys(), strict=True)) == dict(
        zip(found.names, found.keys(), strict=True)
    )
    # the big weight (600x300 floats) is above the combine threshold, the small ones below
    assert state["2.weight"].numel() * 4 >= COMBINE_FROM > state["0.weight"].numel() * 4
    assert set(load_file(str(path))) == set(state)  # the safetensors library reads it


def test_constant_tensors_are_marked(tmp_path: Path) -> None:
    state = net().state_dict()
    found = digests_of(state.items())
    marks = dict(zip(found.names, found.constant, strict=True))
    assert marks["1.weight"] and marks["1.bias"] and marks["1.num_batches_tracked"]
    assert not marks["0.weight"] and not marks["2.weight"]
    assert digests_of([("x", np.zeros((2, 3)))]).constant == (True,)


@pytest.mark.parametrize("foreign", [False, True])
def test_a_load_records_what_it_read(tmp_path: Path, foreign: bool) -> None:
    """Our file's digests come from its header; a foreign file (another writer's
    safetensors) is digested as it is read; a partial load records only what it kept."""
    state = net().state_dict()
    path = tmp_path / ("other.safetensors" if foreign else "ours.ckpt")
    if foreign:
        save_file({k: v.contiguous() for k, v in state.items()}, str(path))
    else:
        save_checkpoint(state, str(path))
    take_loads()
    load_checkpoint(str(path), filter_prefix="2.")
    ((where, digests, _),) = take_loads()
    assert where == str(path)
    assert sorted(digests.names) == sorted(k for k in state if not k.startswith("2."))
    expected = digests_of((k, v) for k, v in state.items() if not k.startswith("2."))
    assert dict(zip(digests.names, digests.keys(), strict=True)) == dict(
        zip(expected.names, expected.keys(), strict=True)
    )


def test_a_name_that_is_not_utf8_is_recorded_with_its_bad_bytes_replaced() -> None:
    """A foreign file's tensor names may hold any bytes: the lineage's string field takes
    them replaced, and the train begin that records them does not fail."""
    from trainledger.lineage import weights_event
    from trainledger.storage import Digests

    digests = Digests((1, 2), ("F32:1", "F32:1"), (), (b"a\x94b", "c\udc94d"))
    event = weights_event(initial=digests)
    assert list(event.weights.initial.name) == ["a\ufffdb", "c?d"]
