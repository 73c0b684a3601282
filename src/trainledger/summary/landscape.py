"""Loss landscapes in TensorBoard files: the ``landscape`` plugin of ``SummaryRecord``.

A landscape is a dict (what ``SummaryLandscape`` computes and ``read_landscapes`` returns):

* ``kind``: "train" (PCA of a weight trajectory) or "result" (random directions around the
  final weights); ``decomposition``: "PCA" or "Random" (MindSpore's names);
* ``intervals``: the steps (or epochs, see ``unit``) of the weights it was made from;
* ``x``, ``y``: the grid's axes (``size`` floats each) and ``z``: the losses, ``size`` x
  ``size``, ``z[i, j]`` at ``(x[j], y[i])`` (MindSpore's meshgrid order);
* ``path``: ``{"x", "y", "z"}`` of the trajectory projected on the plane (train only, else
  None); ``convergence_point``: ``(x, y, z)`` of the final weights;
* ``unit``, ``step_per_epoch``, ``num_samples``; ``source``: "trainledger" or "mindspore";
* ``explained_variance`` (train landscapes written by trainledger 0.2 or later): the fraction
  of the trajectory's variance the two PCA directions explain, ``[r1, r2]``; absent from
  older files and from MindSpore's (its ``LossLandscape`` message has no such field).

Written as one event holding a tensor summary (``z``, with everything else as JSON in the
plugin metadata, plugin name ``trainledger_landscape``) and a rendered contour image
(``<tag>/contour``, TensorBoard's Images tab). No torch here.
"""

from __future__ import annotations

import json
import os
from typing import Any

import numpy as np

from trainledger.summary import encoders
from trainledger.summary.contour import render_contour
from trainledger.summary.proto import summary_pb2 as pb

__all__ = ["LANDSCAPE_PLUGIN", "checked_landscape", "landscape_values", "read_landscapes"]

LANDSCAPE_PLUGIN = "trainledger_landscape"
_KINDS = {"train": "PCA", "result": "Random"}
_META_KEYS = ("unit", "step_per_epoch", "num_samples")


def _floats(name: str, key: str, value: Any, ndim: int) -> np.ndarray:
    arr = np.asarray(value, dtype=np.float64)
    if arr.ndim != ndim:
        raise ValueError(
            f"landscape {name!r} expected {key} with {ndim} dimension(s), received shape "
            f"{arr.shape}"
        )
    return arr


def _ratios(name: str, value: Any) -> list[float] | None:
    """The optional ``explained_variance``: two fractions in [0, 1], or None."""
    if value is None:
        return None
    ratios = _floats(name, "explained_variance", value, 1)
    if ratios.shape != (2,) or not np.all((ratios >= 0) & (ratios <= 1)):
        raise ValueError(
            f"landscape {name!r} expected explained_variance as two fractions in [0, 1], "
            f"received {ratios.tolist()}"
        )
    return ratios.tolist()


def checked_landscape(name: str, value: Any) -> dict[str, Any]:
    """``value`` checked and copied as a landscape dict (see the module docstring)."""
    if not isinstance(value, dict):
        raise TypeError(f"landscape {name!r} expected a dict, received: {type(value).__name__}")
    kind = value.get("kind")
    if kind not in _KINDS:
        raise ValueError(f"landscape {name!r} expected kind 'train' or 'result', received {kind!r}")
    x = _floats(name, "x", value.get("x"), 1)
    y = _floats(name, "y", value.get("y"), 1)
    z = _floats(name, "z", value.get("z"), 2)
    if z.shape != (len(y), len(x)):
        raise ValueError(
            f"landscape {name!r} expected z of shape (len(y), len(x)) = {(len(y), len(x))}, "
            f"received {z.shape}"
        )
    path = value.get("path")
    if path is not None:
        path = {k: _floats(name, f"path[{k!r}]", path[k], 1).tolist() for k in ("x", "y", "z")}
    point = value.get("convergence_point")
    out = {
        "kind": kind,
        "decomposition": value.get("decomposition") or _KINDS[kind],
        "intervals": [int(i) for i in value.get("intervals") or []],
        "x": x,
        "y": y,
        "z": z,
        "path": path,
        "convergence_point": None if point is None else [float(v) for v in point],
        "source": value.get("source", "trainledger"),
    }
    for key in _META_KEYS:
        if value.get(key) is not None:
            out[key] = value[key]
    ratios = _ratios(name, value.get("explained_variance"))
    if ratios is not None:  # only when known: older readers and files never see the key
        out["explained_variance"] = ratios
    return out


def landscape_values(tag: str, value: dict[str, Any]) -> list[pb.Summary.Value]:
    """The tensor summary (``z`` + JSON metadata) and the contour image of a checked value."""
    meta = {k: v for k, v in value.items() if k != "z"}
    meta["x"], meta["y"] = value["x"].tolist(), value["y"].tolist()
    content = json.dumps(meta, separators=(",", ":")).encode("utf-8")
    metadata = pb.SummaryMetadata(
        plugin_data=pb.SummaryMetadata.PluginData(plugin_name=LANDSCAPE_PLUGIN, content=content),
        data_class=pb.DATA_CLASS_TENSOR,
    )
    tensor = encoders.make_tensor_proto(value["z"].astype(np.float32))
    path = value["path"]
    picture = render_contour(
        value["x"], value["y"], value["z"], (path["x"], path["y"]) if path else None
    )
    return [
        pb.Summary.Value(tag=tag, metadata=metadata, tensor=tensor),
        encoders.image(f"{tag}/contour", picture, "HWC"),
    ]


def _decode(tag: str, value: pb.Summary.Value) -> dict[str, Any]:
    meta = json.loads(value.metadata.plugin_data.content.decode("utf-8"))
    shape = tuple(d.size for d in value.tensor.tensor_shape.dim)
    z = np.frombuffer(value.tensor.tensor_content, dtype="<f4").reshape(shape)
    landscape = checked_landscape(tag, {**meta, "z": z.astype(np.float64)})
    landscape["tag"] = tag
    return landscape


def read_landscapes(run_dir: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """Every loss landscape of a run directory, in writing order (the last one per tag when a
    landscape was generated again): trainledger's event files and MindSpore's ``_MS`` files."""
    from trainledger.summary.mindspore_landscape import read_ms_landscapes
    from trainledger.summary.reader import iter_events

    found: dict[str, dict[str, Any]] = {}
    for event in iter_events(run_dir):
        for value in event.summary.value:
            if value.metadata.plugin_data.plugin_name == LANDSCAPE_PLUGIN:
                found.pop(value.tag, None)
                found[value.tag] = _decode(value.tag, value)
    for landscape in read_ms_landscapes(run_dir):
        found.pop(landscape["tag"], None)
        found[landscape["tag"]] = checked_landscape(landscape["tag"], landscape) | {
            "tag": landscape["tag"]
        }
    return list(found.values())
