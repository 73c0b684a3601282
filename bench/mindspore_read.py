"""Reading MindSpore ``_MS`` scalars: ``trainledger.summary.read_scalars`` vs MindInsight 2.3.1.

The file is written by real MindSpore 2.10 (``SummaryRecord``, ``--steps`` steps of two scalar
tags), once, cached under the temp dir. MindInsight lives in another venv (another protobuf),
so each of its rounds runs in a subprocess started by this process: the subprocess imports
MindInsight and warms its worker pool first, then times ``MSDataLoader(dir).load()`` until
every event has been added (the pool shut down), and reports that time. Ours is timed in this
process. Rounds alternate which side goes first; the report gives each side's median and
spread and the median of the per-round ratios. Both sides' answers are checked equal first
(MindInsight samples 1000 points per tag; each must be one of ours). Target: ours >= 5x faster.

    .venv/bin/python bench/mindspore_read.py [--steps 20000] [--rounds 7]
        [--mindspore /work/venvs/mindspore/bin/python]
        [--mindinsight /work/venvs/mindinsight/bin/python]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

_WRITE = """
import sys
import numpy as np
import mindspore as ms
from mindspore.train.summary import SummaryRecord
ms.set_context(mode=ms.PYNATIVE_MODE, device_target="CPU")
with SummaryRecord(sys.argv[1]) as rec:
    for step in range(1, int(sys.argv[2]) + 1):
        rec.add_value("scalar", "loss", ms.Tensor(np.float32(np.sin(step / 100))))
        rec.add_value("scalar", "lr", ms.Tensor(np.float32(1.0 / step)))
        rec.record(step)
"""

# Runs in the MindInsight venv. NumPy 2 removed aliases MindInsight 2.3.1 uses; restore them
# first (module level, so the loader's worker processes get them too).
_MINDINSIGHT = """
import json, sys, time
import numpy as np
for name, value in (("PINF", np.inf), ("NINF", -np.inf), ("NaN", np.nan), ("Inf", np.inf)):
    if name not in np.__dict__:
        setattr(np, name, value)
from mindinsight.datavisual.data_transform.ms_data_loader import MSDataLoader
from mindinsight.utils.computing_resource_mgr import ComputingResourceManager

def main():
    run_dir, check = sys.argv[1], sys.argv[2] == "check"
    with ComputingResourceManager.get_instance().get_executor() as executor:
        executor.submit(int, 0).result()  # the worker pool is up before the clock starts
        start = time.perf_counter()
        loader = MSDataLoader(run_dir)
        while not loader.load(executor):
            pass
    elapsed = time.perf_counter() - start  # leaving the block waited for every event
    events = loader.get_events_data()
    out = {"seconds": elapsed, "points": {}}
    for tag in events.list_tags_by_plugin("scalar"):
        samples = events.tensors(tag)
        out["points"][tag] = len(samples)
        if check:
            out.setdefault("series", {})[tag] = [[s.step, float(s.value)] for s in samples]
    print(json.dumps(out))

if __name__ == "__main__":
    main()
"""


def make_run(python: str, steps: int) -> Path:
    run = Path(tempfile.gettempdir()) / f"trainledger-bench-ms-{steps}"
    if not any(run.glob("*_MS")):
        run.mkdir(parents=True, exist_ok=True)
        subprocess.run([python, "-c", _WRITE, str(run), str(steps)], check=True,
                       capture_output=True, cwd=tempfile.gettempdir())  # fmt: skip
    return run


def theirs(python: str, script: Path, run: Path, check: bool = False) -> dict:
    proc = subprocess.run([python, str(script), str(run), "check" if check else "time"],
                          check=True, capture_output=True, text=True,
                          cwd=tempfile.gettempdir())  # fmt: skip
    return json.loads(proc.stdout.strip().splitlines()[-1])


def ours(run: Path) -> tuple[float, dict]:
    from trainledger.summary import read_scalars

    start = time.perf_counter()
    got = read_scalars(run)
    return time.perf_counter() - start, got


def check_equal(run: Path, answer: dict) -> int:
    """MindInsight keeps a reservoir sample of 1000 points per scalar tag: each of its points
    must be ours (last value per step, MindInsight's rule for a repeated step)."""
    _, got = ours(run)
    for tag, series in answer["series"].items():
        steps, _, values = got[tag.rsplit("/", 1)[0]]
        last = dict(zip(steps.tolist(), values.tolist(), strict=True))
        assert all(last[step] == value for step, value in series), tag
        assert len(series) == min(len(last), 1000), tag
    return sum(len(s[0]) for s in got.values())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=20000)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--mindspore", default="/work/venvs/mindspore/bin/python")
    parser.add_argument("--mindinsight", default="/work/venvs/mindinsight/bin/python")
    args = parser.parse_args()
    run = make_run(args.mindspore, args.steps)
    size = sum(p.stat().st_size for p in run.glob("*_MS"))
    with tempfile.TemporaryDirectory() as tmp:
        script = Path(tmp) / "mindinsight_read.py"
        script.write_text(_MINDINSIGHT)
        points = check_equal(run, theirs(args.mindinsight, script, run, check=True))
        print(f"{run}: {size / 1e6:.2f} MB, {points} scalars; MindInsight's points are ours")
        ours_s, theirs_s, ratios = [], [], []
        for r in range(args.rounds):
            if r % 2:
                t_theirs = theirs(args.mindinsight, script, run)["seconds"]
                t_ours = ours(run)[0]
            else:
                t_ours = ours(run)[0]
                t_theirs = theirs(args.mindinsight, script, run)["seconds"]
            ours_s.append(t_ours)
            theirs_s.append(t_theirs)
            ratios.append(t_theirs / t_ours)
            print(f"round {r}: ours {t_ours:.4f} s, MindInsight {t_theirs:.3f} s, "
                  f"{t_theirs / t_ours:.1f}x")  # fmt: skip

    def fmt(xs: list[float]) -> str:
        return f"median {statistics.median(xs):.4f} s (min {min(xs):.4f}, max {max(xs):.4f})"

    print(f"ours:        {fmt(ours_s)}; {points / statistics.median(ours_s):,.0f} scalars/s")
    print(f"MindInsight: {fmt(theirs_s)}; {points / statistics.median(theirs_s):,.0f} scalars/s")
    ratio = statistics.median(ratios)
    print(f"ratio: median {ratio:.1f}x (min {min(ratios):.1f}x, max {max(ratios):.1f}x); "
          f"target >= 5x: {'met' if ratio >= 5 else 'NOT met'}")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
