"""A base with the runs the landscape and graph views need, all written for real.

* ``ours``: trained by the training host with ``SummaryCollector`` (graph captured at the
  first step, weight snapshots), then ``SummaryLandscape`` (two train landscapes with their
  paths and one result landscape, 5 x 5);
* ``ms``: MindSpore 2.10's own files: the graph of ``golden/mindspore-full`` and the
  landscapes of ``golden/mindspore-landscape`` (``_MS`` files), with the former's lineage.
"""

from __future__ import annotations

import shutil
from pathlib import Path

GOLDEN = Path(__file__).resolve().parents[1] / "golden"
SETTINGS = {"intervals": [[1, 2, 3, 4], [5, 6, 8, 10, 12]], "num_samples": 40, "landscape_size": 5}


def make_structure_base(base: Path, size: int = 5) -> Path:
    """The two runs under ``base``; ``size`` is the landscapes' grid (5 x 5 by default)."""
    import trainledger
    from tests.landscape.helpers import data, train_run

    base.mkdir(parents=True, exist_ok=True)
    model, net = train_run(base / "ours", {**SETTINGS, "landscape_size": size})
    landscape = trainledger.SummaryLandscape(base / "ours", seed=0, show_progress=False)
    landscape.gen_landscapes_with_multi_process(lambda: (model, net, data(), {"loss"}))
    landscape.clean_ckpt()
    shutil.copytree(GOLDEN / "mindspore-full" / "run", base / "ms")
    for path in (GOLDEN / "mindspore-landscape" / "run").glob("*_MS"):
        shutil.copy(path, base / "ms" / path.name)
    return base
