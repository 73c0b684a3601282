"""The landscape and graph routes over real runs: one trained here, one MindSpore wrote."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.runs import sample_run
from tests.server.conftest import client_for
from tests.server.structure_runs import GOLDEN, make_structure_base
from trainledger.server.graph_view import graph_view
from trainledger.summary import GraphNode, SummaryRecord, graph_def_bytes, read_landscapes
from trainledger.summary.proto import summary_pb2 as pb


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = make_structure_base(tmp_path_factory.mktemp("structure") / "base")
    sample_run(base, "plain", 0)  # lineage and a checkpoint, no summaries
    return base


@pytest.fixture
def client(base: Path) -> Iterator[Any]:
    with client_for(base) as c:
        yield c


def test_landscapes_of_a_trained_run_are_those_read_from_its_files(client: Any, base: Path) -> None:
    answer = client.get("/api/v1/runs/ours/landscapes")
    assert answer.status_code == 200
    got = answer.json()["landscapes"]
    assert [(x["tag"], x["kind"], x["decomposition"]) for x in got] == [
        ("landscape_[1, 4]", "train", "PCA"),
        ("landscape_[5, 12]", "train", "PCA"),
        ("landscape_[12]", "result", "Random"),
    ]
    for item, read in zip(got, read_landscapes(base / "ours"), strict=True):
        assert np.allclose(item["z"], read["z"]) and np.shape(item["z"]) == (5, 5)
        assert item["x"] == read["x"].tolist() and item["y"] == read["y"].tolist()
        assert item["intervals"] == read["intervals"] and item["source"] == "trainledger"
    assert len(got[1]["path"]["x"]) == 5 and got[1]["path"]["x"][-1] == 0.0
    assert got[1]["path"]["z"] == read_landscapes(base / "ours")[1]["path"]["z"]
    assert got[2]["path"] is None and got[2]["convergence_point"][:2] == [0.0, 0.0]
    assert got[1]["explained_variance"] == read_landscapes(base / "ours")[1]["explained_variance"]
    assert got[2]["explained_variance"] is None  # random directions


def test_mindspore_landscapes_match_mindspores_own_parse(client: Any) -> None:
    got = client.get("/api/v1/runs/ms/landscapes").json()["landscapes"]
    expected = json.loads((GOLDEN / "mindspore-landscape" / "expected.json").read_text())
    assert [x["tag"] for x in got] == [x["tag"] for x in expected["landscapes"]]
    for item, want in zip(got, expected["landscapes"], strict=True):
        assert item["source"] == "mindspore" and item["explained_variance"] is None
        assert np.allclose(np.ravel(item["z"]), want["z"])
        assert np.allclose(item["x"], want["x"]) and np.allclose(item["y"], want["y"])


def test_graph_of_a_trained_run_has_module_scopes_and_shapes_on_edges(client: Any) -> None:
    graph = client.get("/api/v1/runs/ours/graph").json()
    nodes = {n["id"]: n for n in graph["nodes"]}
    assert graph["collapsed_depth"] is None and graph["total_nodes"] == len(nodes)
    fc1 = nodes["Net/Linear[fc1]/linear"]
    assert (fc1["op"], fc1["scope"], fc1["label"], fc1["shape"]) == (
        "linear",
        "Net/Linear[fc1]",
        "linear",
        [16, 12],
    )
    edges = {(e["source"], e["target"]): e["shape"] for e in graph["edges"]}
    assert edges[("input/input.0", "Net/Linear[fc1]/linear")] == [16, 6]  # the batch
    assert edges[("Net/Linear[fc1]/weight", "Net/Linear[fc1]/linear")] == [12, 6]
    assert edges[("Net/Linear[fc2]/linear", "output/output.0")] == [16, 2]
    scopes = {s["id"]: s for s in graph["scopes"]}
    assert scopes["Net/Linear[fc1]"] == {
        "id": "Net/Linear[fc1]",
        "parent": "Net",
        "label": "Linear[fc1]",
        "count": 3,
    }
    assert all(s["parent"] in scopes or s["parent"] == "" for s in scopes.values())


def test_mindspore_graph_keeps_its_scopes_and_shapes(client: Any) -> None:
    graph = client.get("/api/v1/runs/ms/graph").json()
    assert graph["total_nodes"] == len(graph["nodes"]) == 98
    conv = "Default/network-WithLossCell/_backbone-TinyNet/conv-Conv2d/Conv2D-op0"
    edges = {(e["source"], e["target"]): e["shape"] for e in graph["edges"]}
    assert edges[("inputs0", conv)] == [8, 1, 8, 8]
    node = next(n for n in graph["nodes"] if n["id"] == conv)
    assert (node["op"], node["shape"]) == ("Conv2D", [8, 2, 8, 8])
    scopes = {s["id"] for s in graph["scopes"]}
    assert "Default/network-WithLossCell/_backbone-TinyNet/fc-Dense" in scopes
    assert "Gradients/Default" in scopes


def test_a_large_graph_comes_collapsed_to_module_level(client: Any) -> None:
    graph = client.get("/api/v1/runs/ms/graph", params={"max_nodes": 40}).json()
    assert graph["collapsed_depth"] == 1 and not graph["truncated"]
    nodes = {n["id"]: n for n in graph["nodes"]}
    assert len(nodes) <= 40 and graph["total_nodes"] == 98
    assert nodes["Default"]["op"] == "Module" and nodes["Default"]["count"] == 45
    assert nodes["Gradients"]["count"] == 15
    assert all(e["source"] in nodes and e["target"] in nodes for e in graph["edges"])
    assert all(e["source"] != e["target"] for e in graph["edges"])
    assert graph["scopes"] == []  # everything left is at the top level
    bigger = client.get("/api/v1/runs/ms/graph", params={"max_nodes": 60}).json()
    assert bigger["collapsed_depth"] == 2 and len(bigger["nodes"]) <= 60


def test_runs_without_a_graph_or_landscape_and_unknown_runs(client: Any) -> None:
    assert client.get("/api/v1/runs/plain/landscapes").json() == {"landscapes": []}
    missing = client.get("/api/v1/runs/plain/graph")
    assert missing.status_code == 404 and "no computational graph" in missing.json()["detail"]
    for bad in ("nope", "..%2Fours"):  # every other traversal: test_security
        assert client.get(f"/api/v1/runs/{bad}/graph").status_code == 404
        assert client.get(f"/api/v1/runs/{bad}/landscapes").status_code == 404


def test_a_landscape_written_later_is_served(tmp_path: Path) -> None:
    base = tmp_path / "base"
    run = sample_run(base, "late", 0)
    with client_for(base) as client:
        assert client.get("/api/v1/runs/late/landscapes").json() == {"landscapes": []}
        grid = np.linspace(-1.0, 1.0, 3)
        z = np.add.outer(grid**2, grid**2)
        z[0, 0] = np.nan  # a diverged point is null, not an invalid JSON NaN
        with SummaryRecord(run) as record:
            value = {"kind": "result", "x": grid, "y": grid, "z": z, "intervals": [3]}
            record.add_value("landscape", "landscape_[3]", value)
            record.record(3)
        got = client.get("/api/v1/runs/late/landscapes").json()["landscapes"]
        assert [x["tag"] for x in got] == ["landscape_[3]"]
        assert got[0]["z"][0][0] is None and got[0]["z"][1][1] == 0.0


def test_graph_view_reads_output_indices_and_control_edges() -> None:
    data = graph_def_bytes(
        [
            GraphNode("Net/split", "split", shapes=((4, 2), (4, 3))),
            GraphNode("Net/Block[b]/mul", "mul", inputs=("Net/split:1",), shapes=((4, 3),)),
            GraphNode("Net/Block[b]/add", "add", inputs=("^Net/split", "Net/Block[b]/mul")),
            GraphNode("Net/out", "out", inputs=("Net/Block[b]/add", "missing/node")),
        ]
    )
    graph = pb.GraphDef.FromString(data)
    view = graph_view(graph)
    edges = {(e["source"], e["target"]): (e["shape"], e["control"]) for e in view["edges"]}
    assert edges == {
        ("Net/split", "Net/Block[b]/mul"): ([4, 3], False),  # output 1's shape
        ("Net/split", "Net/Block[b]/add"): ([4, 2], True),
        ("Net/Block[b]/mul", "Net/Block[b]/add"): ([4, 3], False),
        ("Net/Block[b]/add", "Net/out"): (None, False),  # no shape recorded
    }
    collapsed = graph_view(graph, max_nodes=3)
    assert collapsed["collapsed_depth"] == 2
    assert {n["id"]: n["count"] for n in collapsed["nodes"]} == {
        "Net/split": 1,
        "Net/Block[b]": 2,
        "Net/out": 1,
    }
    assert {(e["source"], e["target"]) for e in collapsed["edges"]} == {
        ("Net/split", "Net/Block[b]"),
        ("Net/Block[b]", "Net/out"),
    }


def test_a_graph_too_large_even_at_the_top_keeps_its_operators() -> None:
    weights = [GraphNode(f"w{i}", "Parameter", shapes=((2,),)) for i in range(30)]
    ops = [GraphNode(f"op{i}", "mul", inputs=(f"w{i}",)) for i in range(5)]
    view = graph_view(pb.GraphDef.FromString(graph_def_bytes(weights + ops)), max_nodes=10)
    assert view["truncated"] and view["total_nodes"] == 35 and view["collapsed_depth"] is None
    ids = [n["id"] for n in view["nodes"]]
    assert len(ids) == 10 and {f"op{i}" for i in range(5)} <= set(ids)
    assert {(e["source"], e["target"]) for e in view["edges"]} == {
        (f"w{i}", f"op{i}") for i in range(5)
    }


def test_bookkeeping_nodes_are_marked_and_forward_their_values(client: Any) -> None:
    """The rule of ``graph_view``'s docstring, over the graph MindSpore wrote."""
    graph = client.get("/api/v1/runs/ms/graph").json()
    nodes = {n["id"]: n for n in graph["nodes"]}
    marked = {n["op"] for n in graph["nodes"] if n["bookkeeping"]}
    assert marked == {
        "UpdateState",
        "Depend",
        "Load",
        "MakeTuple",
        "TupleGetItem",
        "ApplyMomentum",
        "AssignAdd",  # under optimizer-Momentum
        "ImageSummary",
        "HistogramSummary",
        "TensorSummary",
        "ScalarSummary",
    }
    computing = {n["op"] for n in graph["nodes"] if not n["bookkeeping"]}
    assert {"Conv2D", "BatchNorm", "ReLU", "MatMul", "ReluGrad", "Parameter"} <= computing
    net = "Default/network-WithLossCell/_backbone-TinyNet"
    assert nodes[f"{net}/Load-op0"]["through"] == ["conv.weight"]
    assert nodes[f"{net}/bn-BatchNorm2d/TupleGetItem-op0"]["through"] == [
        f"{net}/bn-BatchNorm2d/BatchNorm-op0"
    ]
    assert nodes[f"{net}/UpdateState-op0"]["through"] == []
    assert nodes["Default/optimizer-Momentum/Depend-op0"]["through"] == []  # the optimizer's
    conv = nodes[f"{net}/conv-Conv2d/Conv2D-op0"]
    assert conv["attrs"]["kernel_size"] == "(3, 3)" and conv["attrs"]["format"] == "NCHW"
    assert conv["shapes"] == [[8, 2, 8, 8]] and "scope" not in conv["attrs"]
    momentum = nodes["Default/optimizer-Momentum/ApplyMomentum-op0"]["attrs"]
    assert momentum["use_nesterov"] == "False" and momentum["output_names"] == "['output']"


@pytest.mark.parametrize(
    ("name", "op", "bookkeeping"),
    [
        ("Default/network-WithLossCell/UpdateState-op0", "UpdateState", True),
        ("Default/optimizer-Adam/Assign-op3", "Assign", True),
        ("Default/ApplyAdam-op0", "ApplyAdam", True),
        ("Default/Applyish-op0", "Applyish", False),
        ("Gradients/Default/network-WithLossCell/Grad_MatMul/MatMul-op0", "MatMul", False),
        ("Net/optimizer_head/linear", "linear", False),  # a module named so, not MindSpore's
        ("Net/Linear[fc1]/linear", "linear", False),
    ],
)
def test_the_bookkeeping_rule(name: str, op: str, bookkeeping: bool) -> None:
    from trainledger.server.graph_view import is_bookkeeping

    assert is_bookkeeping(name, op) is bookkeeping
