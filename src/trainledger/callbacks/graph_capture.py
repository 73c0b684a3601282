"""Capture a network's computational graph from one batch, as a TensorBoard ``GraphDef``.

The network runs forward once on the batch, under ``torch.no_grad`` and a
``TorchFunctionMode`` that records every top-level torch call (``linear``, ``relu``,
``add``...) with the tensors it consumed and produced; forward hooks give each call its module
scope, so node names are ``Net/Linear[fc1]/linear`` as in ``SummaryWriter.add_graph``. Unlike
``torch.jit.trace`` this follows Python control flow as it ran and needs no scriptable model.

The capture leaves the run as it found it: no gradients (``no_grad``), the RNG states are
restored (``fork_rng``: dropout draws nothing visible), and every buffer is copied back
(BatchNorm running statistics, ``num_batches_tracked``). A network that steps its own
optimizer is not called. Any failure is a warning and no graph, never a failed run.
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import torch
from torch.overrides import TorchFunctionMode
from torch.utils._pytree import tree_flatten

from trainledger.checkpoint import is_fsdp, unwrap_network
from trainledger.run import call_network, split_batch
from trainledger.summary import GraphNode, graph_def_bytes

__all__ = ["capture_graph", "first_batch_graph", "graph_nodes"]

logger = logging.getLogger("trainledger.summary")


def _op_name(func: Any) -> str:
    name = getattr(func, "__name__", None) or type(func).__name__
    return name.strip("_") or "op"


def _dtype(tensors: list[torch.Tensor]) -> str:
    return str(tensors[0].dtype).replace("torch.", "") if tensors else ""


class _Recorder(TorchFunctionMode):
    """Records top-level torch calls as graph nodes (inner calls run with the mode off)."""

    def __init__(self, known: dict[int, tuple[str, str, torch.Tensor]]) -> None:
        super().__init__()
        self.scopes: list[str] = []
        self.nodes: list[GraphNode] = []
        self._names: dict[int, str] = {}
        self._keep: list[torch.Tensor] = []  # ids stay unique while the tensors live
        self._known = known  # id(parameter or buffer) -> (node name, kind, tensor)
        self._counts: dict[str, itertools.count[int]] = {}

    def unique(self, base: str) -> str:
        index = next(self._counts.setdefault(base, itertools.count()))
        return base if index == 0 else f"{base}_{index}"

    def produce(self, name: str, op: str, inputs: list[str], outputs: list[torch.Tensor]) -> None:
        shapes = tuple(tuple(int(d) for d in t.shape) for t in outputs)
        self.nodes.append(GraphNode(name, op, tuple(inputs), shapes, _dtype(outputs)))
        for tensor in outputs:
            self._names[id(tensor)] = name
            self._keep.append(tensor)

    def name_of(self, tensor: torch.Tensor) -> str:
        name = self._names.get(id(tensor))
        if name is not None:
            return name
        known = self._known.get(id(tensor))
        if known is not None:  # a parameter or buffer: a node in its module's scope
            name, kind, _ = known
            self.produce(name, kind, [], [tensor])
            return name
        scope = self.scopes[-1] if self.scopes else "constants"
        name = self.unique(f"{scope}/constant")
        self.produce(name, "Constant", [], [tensor])
        return name

    def __torch_function__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        outputs = [t for t in tree_flatten(out)[0] if isinstance(t, torch.Tensor)]
        if not outputs:
            return out  # shape getters, .item(), comparisons to Python values...
        inputs = [
            self.name_of(t) for t in tree_flatten((args, kwargs))[0] if isinstance(t, torch.Tensor)
        ]
        op = _op_name(func)
        scope = self.scopes[-1] if self.scopes else "ops"
        self.produce(self.unique(f"{scope}/{op}"), op, inputs, outputs)
        return out


def _scopes(network: torch.nn.Module) -> dict[int, str]:
    """``id(module) -> "Net/Sequential[block]/Linear[0]"`` (add_graph's naming)."""
    by_path: dict[str, str] = {}
    scopes: dict[int, str] = {}
    for path, module in network.named_modules(remove_duplicate=False):
        if not path:
            scope = type(network).__name__
        else:
            parent, _, leaf = path.rpartition(".")
            scope = f"{by_path[parent]}/{type(module).__name__}[{leaf}]"
        by_path[path] = scope
        scopes.setdefault(id(module), scope)
    return scopes


@contextmanager
def _state_kept(network: torch.nn.Module) -> Iterator[None]:
    """Restores every buffer and the RNG states after the block; no autograd inside."""
    buffers = [(b, b.detach().clone()) for b in network.buffers()]
    devices = list(range(torch.cuda.device_count())) if torch.cuda.is_initialized() else []
    with torch.random.fork_rng(devices=devices), torch.no_grad():
        try:
            yield
        finally:
            for buffer, saved in buffers:
                buffer.copy_(saved)


def graph_nodes(
    network: torch.nn.Module, inputs: Any, forward: Callable[[], Any]
) -> list[GraphNode]:
    """The nodes of one ``forward()`` of ``network`` on ``inputs`` (the tensors in it become
    the input nodes); leaves no trace."""
    scopes = _scopes(network)
    known: dict[int, tuple[str, str, torch.Tensor]] = {}
    for module in network.modules():
        scope = scopes[id(module)]
        for name, param in module.named_parameters(recurse=False):
            known.setdefault(id(param), (f"{scope}/{name}", "Parameter", param))
        for name, buf in module.named_buffers(recurse=False):
            known.setdefault(id(buf), (f"{scope}/{name}", "Buffer", buf))
    recorder = _Recorder(known)

    def enter(module: torch.nn.Module, args: Any) -> None:
        recorder.scopes.append(scopes[id(module)])

    def leave(module: torch.nn.Module, args: Any, output: Any) -> None:
        recorder.scopes.pop()  # returns None: the module's output stays as it is

    handles = []
    for module in network.modules():
        handles.append(module.register_forward_pre_hook(enter))
        handles.append(module.register_forward_hook(leave))
    try:
        flat_inputs = [t for t in tree_flatten(inputs)[0] if isinstance(t, torch.Tensor)]
        for index, tensor in enumerate(flat_inputs):
            recorder.produce(f"input/input.{index}", "IO Node", [], [tensor])
        with _state_kept(network), recorder:
            out = forward()
        results = [t for t in tree_flatten(out)[0] if isinstance(t, torch.Tensor)]
        for index, tensor in enumerate(results):
            source = recorder.name_of(tensor)
            recorder.produce(f"output/output.{index}", "IO Node", [source], [tensor])
    finally:
        for handle in handles:
            handle.remove()
    return recorder.nodes


def capture_graph(network: Any, batch: Any, with_loss_fn: bool) -> bytes | None:
    """A serialised ``GraphDef`` of ``network`` on ``batch`` (the inputs are the batch without
    its label when the run has a ``loss_fn``, as ``Model`` calls it), or None with a warning
    when the network cannot be captured."""
    name = type(network).__name__
    if not isinstance(network, torch.nn.Module):
        logger.warning("collect_graph: %s is not a torch.nn.Module; no graph is written", name)
        return None
    if not with_loss_fn and (
        getattr(network, "steps_itself", False) or getattr(network, "optimizer", None) is not None
    ):
        logger.warning(
            "collect_graph: %s steps its own optimizer, so running it to capture the graph would "
            "train it; no graph is written",
            name,
        )
        return None
    try:
        if with_loss_fn:
            args, kwargs, _ = split_batch(batch)
            nodes = graph_nodes(network, (args, kwargs), lambda: network(*args, **kwargs))
        else:
            nodes = graph_nodes(network, batch, lambda: call_network(network, batch))
        return graph_def_bytes(nodes)
    except Exception as exc:  # any model: a warning and no graph, never a failed run
        logger.warning(
            "collect_graph: the graph of %s could not be captured (%s: %s); no graph is written",
            name,
            type(exc).__name__,
            exc,
        )
        return None


def first_batch_graph(params: Any) -> bytes | None:
    """``capture_graph`` on a training step's cb_params (network, batch, loss_fn). A DDP
    network is captured unwrapped: its forward would run collectives on rank 0 alone; an FSDP
    network is not captured, for the same reason."""
    network = unwrap_network(params.get("network") or params.get("train_network"))
    batch = params.get("train_dataset_element")
    if network is None or batch is None:
        return None
    if is_fsdp(network):  # FSDP: a forward on rank 0 alone would start its all-gathers
        logger.warning("collect_graph: no graph of an FSDP network (its forward is collective)")
        return None
    return capture_graph(network, batch, params.get("loss_fn") is not None)
