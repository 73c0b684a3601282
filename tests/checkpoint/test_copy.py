"""The snapshot copy (``torch_adapter.copy_all`` on ``trainledger.storage.parallel``): exact bytes
whatever the split, and a busy helper never holds the caller back."""

from __future__ import annotations

import threading
import time

import pytest
import torch

from trainledger.checkpoint import torch_adapter
from trainledger.checkpoint.torch_adapter import copy_all
from trainledger.storage import parallel as _parallel


def _pairs() -> list[tuple[torch.Tensor, torch.Tensor]]:
    gen = torch.Generator().manual_seed(0)
    sources = [
        torch.randn(4100, 4096, generator=gen),  # 67 MB: several chunks, one ragged
        torch.randn(1024, 4096, generator=gen).to(torch.bfloat16),
        torch.randn(2048, 2048, generator=gen).t(),  # non-contiguous: torch's copy
        torch.empty(0),
        torch.arange(7, dtype=torch.int64),
        torch.tensor(True),
    ]
    return [(torch.zeros_like(s, memory_format=torch.contiguous_format), s) for s in sources]


@pytest.mark.parametrize("threads", [1, 2, 4])
def test_copies_every_byte_in_parallel_or_not(threads: int) -> None:
    pairs = _pairs()
    contiguous = sum(s.nbytes for _, s in pairs if s.is_contiguous())
    assert contiguous > torch_adapter._PARALLEL_MIN_BYTES  # the parallel path
    copy_all(pairs, threads=threads)
    for dst, src in pairs:
        assert torch.equal(dst, src)


def test_helpers_share_the_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    """Slowed chunk copies make every thread take part (and race for the last chunks)."""
    import numpy as np

    real = np.copyto
    copiers: set[int] = set()

    def slow_copy(dst: object, src: object) -> None:
        copiers.add(threading.get_ident())
        time.sleep(0.002)
        real(dst, src)

    monkeypatch.setattr(np, "copyto", slow_copy)
    pairs = _pairs()
    copy_all(pairs, threads=3)
    assert len(copiers) >= 2
    for dst, src in pairs:
        assert torch.equal(dst, src)


def test_a_helper_that_never_starts_is_not_waited_for(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every helper thread is busy elsewhere: the caller copies everything alone and returns."""
    from concurrent.futures import ThreadPoolExecutor

    pool = ThreadPoolExecutor(max_workers=1)
    release = threading.Event()
    pool.submit(release.wait)  # the only worker is blocked
    monkeypatch.setattr(_parallel, "executor", lambda: pool)
    try:
        pairs = _pairs()
        caller = threading.Thread(target=copy_all, args=(pairs,), kwargs={"threads": 2})
        caller.start()
        caller.join(timeout=60)
        assert not caller.is_alive()  # returned while the helper is still blocked
        for dst, src in pairs:
            assert torch.equal(dst, src)
    finally:
        release.set()
        pool.shutdown()


def test_an_error_in_a_chunk_is_raised_and_stops_the_others() -> None:
    done: list[int] = []

    def do(i: int) -> None:
        if i == 3:
            raise OSError("disk gone")
        time.sleep(0.001)
        done.append(i)

    with pytest.raises(OSError, match="disk gone"):
        _parallel.run_chunks(400, do, threads=2)
    assert len(done) < 399  # the threads stopped taking chunks
    assert len(set(done)) == len(done)  # and none ran twice
