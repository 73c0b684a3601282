"""Redaction: what a run records about the machine it ran on, blurred before it leaves it.

A team store (``s3://``) and exports carry lineage to other people. Set
``TRAINLEDGER_REDACT`` to a comma list of ``command``, ``host``, ``paths`` (or ``all``) and the
lineage writer blurs those fields of every record it writes; the CLI's ``--format csv|json``
and the UI's CSV export blur the same fields of what they print, so runs written before the
setting (or by MindSpore) are covered on the way out too.

Blurring keeps what a comparison needs: a host becomes ``host-<8 hex>`` (runs of one host stay
together), a path keeps its last component plus a hash of the whole (``<redacted>/train#1a2b3c4d``:
two datasets stay two), a command keeps the interpreter's and the script's names and drops the
arguments (which may hold secrets). URLs (``s3://...``) are shared names and are kept.
"""

from __future__ import annotations

import copy
import json
import os
import re
import shlex
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from trainledger.lineage.proto import lineage_pb2 as pb
from trainledger.storage import REDACT_ENV, REDACT_KINDS, digest8, redaction_kinds

__all__ = ["Redaction", "REDACT_ENV", "redact_event", "redact_object"]

_PATHLIKE_KEY = re.compile(r"path|dir|file|root", re.IGNORECASE)
_ABS_PATH = re.compile(r"(?<![\w:/])(/[\w.\-@+~]+)+")
_URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")


@dataclass(frozen=True)
class Redaction:
    """Which kinds of fields to blur; false everywhere means "record as is"."""

    command: bool = False
    host: bool = False
    paths: bool = False

    @classmethod
    def parse(cls, text: str | None) -> Redaction:
        """``"command,host"``, ``"all"``, ``""``/None (nothing); anything else is refused."""
        kinds = redaction_kinds(text or "")
        return cls(*(k in kinds for k in REDACT_KINDS))

    @classmethod
    def from_env(cls) -> Redaction:
        return cls.parse(os.environ.get(REDACT_ENV))

    def __bool__(self) -> bool:
        return self.command or self.host or self.paths

    # -- single values ----------------------------------------------------------------------
    def path(self, value: str) -> str:
        if not self.paths or not value or _URL.match(value) or value.startswith("<redacted>"):
            return value
        if value.startswith("{"):  # the model path: {"ckpt": "/abs/path"}
            try:
                named = json.loads(value)
            except ValueError:
                named = None
            if isinstance(named, dict):
                return json.dumps(
                    {k: self.path(v) if isinstance(v, str) else v for k, v in named.items()}
                )
        name = os.path.basename(value.rstrip("/\\")) or "?"
        return f"<redacted>/{name}#{digest8(value)}"

    def text(self, value: str) -> str:
        """Free text (an error message): absolute paths in it are blurred."""
        return _ABS_PATH.sub(lambda m: self.path(m.group(0)), value) if self.paths else value

    def hostname(self, value: str) -> str:
        return f"host-{digest8(value)}" if self.host and value else value

    def commandline(self, value: list[str]) -> list[str]:
        if not self.command or not value:
            return value
        kept = [os.path.basename(a) for a in value[:2]]
        return kept + ([f"<{len(value) - 2} arguments redacted>"] if len(value) > 2 else [])


def _parameters(params: pb.OperationParameter, policy: Redaction) -> None:
    """Parameters whose key names a path (``dataset_dir``, ``dataset_files``...)."""
    for key in list(params.mapStr):
        if _PATHLIKE_KEY.search(key):
            params.mapStr[key] = policy.path(params.mapStr[key])
    for key in list(params.mapStrList):
        if _PATHLIKE_KEY.search(key):
            values = [policy.path(v) for v in params.mapStrList[key].strValue]
            del params.mapStrList[key].strValue[:]
            params.mapStrList[key].strValue.extend(values)


def _graph(node: pb.DatasetGraph, policy: Redaction) -> None:
    if node.HasField("parameter"):
        _parameters(node.parameter, policy)
    ops = list(node.operations) + ([node.sampler] if node.HasField("sampler") else [])
    for op in ops:
        if op.HasField("operationParam"):
            _parameters(op.operationParam, policy)
    for child in node.children:
        _graph(child, policy)


def redact_event(event: pb.LineageEvent, policy: Redaction) -> pb.LineageEvent:
    """A copy of ``event`` with the policy's fields blurred (the event itself if none)."""
    if not policy:
        return event
    out = pb.LineageEvent()
    out.CopyFrom(event)
    kind = out.WhichOneof("what")
    if kind in ("train_lineage", "train_begin"):
        train = out.train_lineage if kind == "train_lineage" else out.train_begin
        ds, model = train.train_dataset, train.model
        if ds.HasField("train_dataset_path"):
            ds.train_dataset_path = policy.path(ds.train_dataset_path)
        if model.HasField("path"):
            model.path = policy.path(model.path)
    elif kind == "evaluation_lineage":
        vd = out.evaluation_lineage.valid_dataset
        if vd.HasField("valid_dataset_path"):
            vd.valid_dataset_path = policy.path(vd.valid_dataset_path)
    elif kind == "run":
        run = out.run
        for holder in (run, *run.sessions):
            if holder.HasField("hostname"):
                holder.hostname = policy.hostname(holder.hostname)
        command = policy.commandline(list(run.command))
        del run.command[:]
        run.command.extend(command)
        for ckpt in run.checkpoints:
            ckpt.path = policy.path(ckpt.path)
        if run.HasField("error"):
            run.error = policy.text(run.error)
    elif kind == "weights":
        weights = out.weights
        if weights.HasField("checkpoint"):
            weights.checkpoint = policy.path(weights.checkpoint)
        for loaded in weights.loaded:
            loaded.path = policy.path(loaded.path)
    elif kind == "dataset_graph":
        _graph(out.dataset_graph, policy)
    return out


# -- the dict forms (query results) ----------------------------------------------------------
_PATH_KEYS = ("train_dataset_path", "valid_dataset_path", "test_dataset_path", "path")


def _walk(value: Any, key: str, policy: Redaction) -> Any:
    if isinstance(value, dict):
        return {k: _walk(v, k, policy) for k, v in value.items()}
    if isinstance(value, list):
        if key == "command":
            return policy.commandline([str(v) for v in value])
        return [_walk(v, key, policy) for v in value]  # checkpoints, sessions
    if key == "command" and isinstance(value, str):  # the dict form joins it (shlex)
        return shlex.join(policy.commandline(shlex.split(value)))
    if not isinstance(value, str):
        return value
    fix: Callable[[str], str] | None = None
    if key in _PATH_KEYS or key.endswith("_dir") or key == "model_path":
        fix = policy.path
    elif key == "hostname":
        fix = policy.hostname
    elif key == "error":
        fix = policy.text
    return fix(value) if fix else value


def redact_object(obj: dict[str, Any], policy: Redaction) -> dict[str, Any]:
    """A query result object (or ``get_summary_lineage``'s answer) with fields blurred; the
    run's own ``summary_dir`` (relative, "./run1") is its name in the base and is kept."""
    if not policy:
        return obj
    out = _walk(copy.deepcopy(obj), "", policy)
    if "summary_dir" in obj:
        out["summary_dir"] = obj["summary_dir"]
    return out
