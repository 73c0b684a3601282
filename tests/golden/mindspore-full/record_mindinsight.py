"""Record what MindInsight 2.3.1's ``MSDataLoader`` reads from every ``_MS`` file under
tests/golden. Never run by the tests; run from the repository root with the MindInsight venv::

    /tmp/venv-mi/bin/python tests/golden/mindspore-full/record_mindinsight.py

(``/work/shared/tools/mindinsight-venv.sh /tmp/venv-mi`` builds that venv, NumPy < 2.)

Each file is loaded alone (copied into an empty directory), because the loader merges all
files of a directory and drops points whose step goes backwards; ``by_file`` holds those
answers. ``by_dir`` holds the loader's answer for each whole run directory as well. Output:
``mindinsight-summaries.json`` next to this script (images as size and SHA-256 of the
encoded bytes; histograms as MindInsight's original buckets; tensors as values), and the
MindInsight and NumPy versions that answered (``recorded_with``).
"""

from __future__ import annotations

import hashlib
import json
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

# MindInsight 2.3.1 reads histograms and tensors with NumPy 1 names (np.PINF) that NumPy 2
# removed: on NumPy 2 it raises there and drops whole events (and the scalars sharing them).
# Patching the names back is not MindInsight as its users run it, so refuse instead.
if int(np.__version__.split(".")[0]) >= 2:
    sys.exit(f"MindInsight 2.3.1 needs NumPy < 2 (found {np.__version__}): mindinsight-venv.sh")

from mindinsight.datavisual.data_transform.ms_data_loader import MSDataLoader  # noqa: E402

HERE = Path(__file__).resolve().parent
GOLDEN = HERE.parent
PLUGINS = ("scalar", "image", "histogram", "tensor")


def _value(plugin: str, value: Any) -> object:
    if plugin == "scalar":
        return float(value)
    if plugin == "image":
        return {
            "width": value.width,
            "height": value.height,
            "colorspace": value.colorspace,
            "sha256": hashlib.sha256(value.encoded_image).hexdigest(),
        }
    if plugin == "histogram":
        hist = value.histogram
        return {
            "max": value.max,
            "min": value.min,
            "count": value.count,
            "buckets": [[b.left, b.width, b.count] for b in hist._original_buckets],
        }
    return {"dims": list(value.dims), "values": [float(v) for v in value.tensor_value.reshape(-1)]}


def load(summary_dir: Path) -> dict:
    loader = MSDataLoader(str(summary_dir))
    loader.load()
    events = loader.get_events_data()
    out: dict = {}
    for plugin in PLUGINS:
        try:
            tags = events.list_tags_by_plugin(plugin)
        except KeyError:
            continue
        for tag in tags:
            samples = events.tensors(tag)
            out[tag] = {
                "plugin": plugin,
                "steps": [s.step for s in samples],
                "wall_times": [s.wall_time for s in samples],
                "values": [_value(plugin, s.value) for s in samples],
            }
    return out


def main() -> int:
    files = sorted(GOLDEN.rglob("*_MS"))
    import mindinsight  # noqa: PLC0415

    versions = {"mindinsight": mindinsight.__version__, "numpy": np.__version__}
    result: dict = {"by_file": {}, "by_dir": {}, "recorded_with": versions}
    for path in files:
        with tempfile.TemporaryDirectory() as tmp:
            shutil.copy2(path, tmp)
            result["by_file"][path.relative_to(GOLDEN).as_posix()] = load(Path(tmp))
    for run_dir in sorted({p.parent for p in files}):
        result["by_dir"][run_dir.relative_to(GOLDEN).as_posix()] = load(run_dir)
    (HERE / "mindinsight-summaries.json").write_text(
        json.dumps(result, indent=1, sort_keys=True) + "\n"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
