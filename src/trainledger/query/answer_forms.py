"""A cached record's answer object as a *form*: its leaves, and a constructor made once for
its shape.

Why: a range query over 100,000 runs hands out 10,010 fresh answer objects, nine dicts and
lists each, sharing nothing with the index's cached records (``semantics.build_object``).
Copied from the record one container at a time that took 40-57 ms, about 4.5 µs an object,
half the query (BENCHMARKS.md, issue 34 item 6). A record's answer is always the same tree of
containers: its form keeps what the tree holds in one tuple, and a constructor written for
that tree's shape builds the answer again in one call that runs no Python loop.

- A dict that holds containers is kept as a *template*: its scalars in place, None where a
  container goes. The constructor copies it (C's ``dict.copy``, which keeps the key order)
  and sets the containers in: ``model_lineage``'s 14 fixed fields are one copy.
- A dict or list that holds no container (a run's metrics, its user-defined values) is
  copied whole with its C ``copy()``: a wide run's 1,500 metrics stay one copy. Scalars are
  shared (immutable).
- The constructor's text is made from the shape alone: each key is written with ``repr``
  (a str's ``repr`` is always a string literal) and run with no builtins, so no record value
  ever becomes code. Keys that are not str, or a shape over ``MAX_TOKENS`` parts or
  ``MAX_DEPTH`` levels deep, have no form, and the answer is built by copying.
- Constructors are kept by shape, at most ``MAX_SHAPES`` (runs of one project share a handful
  of shapes: the settings groups present, the dataset graph's structure); a new shape past
  that has no form.

The words and integers in a form's templates are one instance each across forms (at most
``MAX_SHARED``): copying an answer touches every value it holds, and values scattered over
memory made the copy of ``model_lineage``'s template 2.5 times slower than values held once
(measured over 10,010 records). Floats (mostly a run's own) are left as they are, and so are
the values of flat containers (a run's metrics, the record's own). For the same reason, and to skip
its walk, a dataset graph's part of the form is made once per distinct graph (runs of one
pipeline share it), its templates then one instance across forms (``_graph_form``).

A form is kept exactly as long as its record is (``record_cache.RecordCache``), and, like the
record, is never changed. Its templates cost about 1 kB a record.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Sequence
from operator import itemgetter
from typing import Any

from trainledger.query.fields import LINEAGE_TYPES
from trainledger.query.semantics import SHOWN, Record, build_object, model_parts
from trainledger.values import holds_containers

__all__ = ["Form", "build", "build_page", "form_of"]

Constructor = Callable[[tuple[Any, ...], dict[str, Any]], dict[str, Any]]
#: (constructor, what it builds from: templates, flat containers and scalars)
Form = tuple[Constructor, tuple[Any, ...]]

MAX_SHAPES = 1024
MAX_TOKENS = 2048
MAX_DEPTH = 32
MAX_SHARED = 65_536
MAX_GRAPHS = 4096
MAX_GRAPH_KEY = 8192

# the shape's tokens besides keys: a container with containers opens (its template, or a
# list display) and closes; a leaf is shared or copied; the settings groups end
_DICT, _LIST, _END, _SHARE, _COPY, _GROUPS_END = range(6)
_shown = itemgetter(*SHOWN)
_constructors: dict[tuple[Any, ...], Constructor] = {}
_lock = threading.Lock()
# one instance of each word and integer (``_shared``), and of each dataset graph's form
# (``_graph_form``)
_memo: dict[Any, Any] = {}
_graphs: dict[str, tuple[tuple[Any, ...], tuple[Any, ...]]] = {}


class _NoForm(Exception):
    """The record's shape is one this module leaves to copying."""


def form_of(record: Record) -> Form | None:
    """``record``'s form (its answer with both lineage parts), or None where it has none
    (see the module's docstring)."""
    try:
        model = dict(zip(SHOWN, _shared(_shown(record)), strict=True))
        metric, user_defined, groups = model_parts(record)
        model.update(metric=None, user_defined=None)
        model.update((group, None) for group, _ in groups)
        leaves: list[Any] = [record["summary_dir"], model]
        tokens: list[Any] = [*(group for group, _ in groups), _GROUPS_END]
        for value in (metric, user_defined, *(value for _, value in groups)):
            _walk(value, tokens, leaves, 0)
        graph_tokens, graph_leaves = _graph_form(record.get("dataset_graph") or {})
    except (KeyError, RecursionError, _NoForm):  # (a fixed field absent: an older record's)
        return None
    tokens += graph_tokens
    leaves += graph_leaves
    key = tuple(tokens)
    constructor = _constructors.get(key)
    if constructor is None:
        with _lock:
            if len(_constructors) >= MAX_SHAPES:
                return None
            constructor = _constructors[key] = _constructor(tokens)
    return constructor, tuple(leaves)


def build(form: Form, added_info: dict[str, Any], series: dict[str, Any] | None) -> dict[str, Any]:
    """A fresh answer object from ``form``: what ``semantics.build_object`` builds from the
    record with both lineage parts, ``added_info`` and ``series``."""
    obj = form[0](form[1], added_info)
    if series is not None:
        obj["series"] = series
    return obj


def build_page(
    page: list[tuple[tuple[Record, Form | None], dict[str, Any]]],
    parts: Sequence[str],
    series: dict[str, Any] | None,
) -> list[dict[str, Any]]:
    """The answer objects of a page of ((record, form), added_info): from the forms where
    there are and both lineage parts are asked, else copied (``semantics.build_object``);
    ``series``: summary_dir -> the series values to add, or None."""
    if len(parts) == len(LINEAGE_TYPES) and series is None:  # (the common case: one call each)
        return [
            form[0](form[1], added) if form is not None else build_object(r, parts, None, added)
            for (r, form), added in page
        ]
    whole = len(parts) == len(LINEAGE_TYPES)
    return [
        build(form, added, series and series[r["summary_dir"]])
        if whole and form is not None
        else build_object(r, parts, series and series[r["summary_dir"]], added)
        for (r, form), added in page
    ]


def _walk(value: Any, tokens: list[Any], leaves: list[Any], depth: int) -> None:
    """Append a container's shape to ``tokens`` and what it holds to ``leaves``."""
    if depth > MAX_DEPTH or len(tokens) > MAX_TOKENS:
        raise _NoForm
    is_dict = type(value) is dict
    if not holds_containers(value.values() if is_dict else value):
        tokens.append(_COPY)
        leaves.append(value)
        return
    if is_dict:
        tokens.append(_DICT)
        template = dict(zip(value, _shared(value.values()), strict=True))
        leaves.append(template)
        for key, item in value.items():
            if type(key) is not str:
                raise _NoForm
            if type(item) is dict or type(item) is list:
                template[key] = None
                tokens.append(key)
                _walk(item, tokens, leaves, depth + 1)
    else:
        tokens.append(_LIST)
        for item in value:
            if type(item) is dict or type(item) is list:
                _walk(item, tokens, leaves, depth + 1)
            else:
                tokens.append(_SHARE)
                leaves += _shared((item,))
    tokens.append(_END)


def _graph_form(graph: Any) -> tuple[tuple[Any, ...], tuple[Any, ...]]:
    """A dataset graph's tokens and leaves, made once per distinct graph (at most
    ``MAX_GRAPHS``; runs of one pipeline share it, and then its templates too: forms never
    change theirs). The key is the graph's ``repr``, which tells apart what equality would
    merge in a JSON value (1, 1.0 and True; 0.0 and -0.0) and keeps the key order; a graph
    whose ``repr`` is over ``MAX_GRAPH_KEY`` characters is walked each time."""
    key = repr(graph)
    found = _graphs.get(key)
    if found is None:
        tokens: list[Any] = []
        leaves: list[Any] = []
        _walk(graph, tokens, leaves, 0)
        found = (tuple(tokens), tuple(leaves))
        if len(key) <= MAX_GRAPH_KEY and len(_graphs) < MAX_GRAPHS:
            _graphs[key] = found
    return found


def _shared(values: Iterable[Any]) -> list[Any]:
    """``values`` with each word and integer replaced by its one instance across forms (at
    most ``MAX_SHARED`` of them; floats and the rest as they are). One memo serves both
    kinds: a word never equals an integer, and no float or bool is looked up."""
    memo = _memo
    if len(memo) >= MAX_SHARED:
        return [memo.get(v, v) if type(v) is str or type(v) is int else v for v in values]
    return [memo.setdefault(v, v) if type(v) is str or type(v) is int else v for v in values]


def _constructor(tokens: list[Any]) -> Constructor:
    """The constructor of a shape: a function of the form's tuple ``v`` and ``added_info``."""
    groups = tokens[: tokens.index(_GROUPS_END)]
    writer = _Writer(tokens)
    writer.pos = len(groups) + 1
    names = ["metric", "user_defined", *groups]
    parts = [writer.node() for _ in names]
    graph = writer.node()
    writer.lines.insert(0, "m = v[1].copy()")
    writer.lines += [f"m[{name!r}] = {part}" for name, part in zip(names, parts, strict=True)]
    text = "\n    ".join(
        [
            "def make(v, a):",
            *writer.lines,
            f"return {{'summary_dir': v[0], 'model_lineage': m, 'dataset_graph': {graph}, "
            "'added_info': a}",
        ]
    )
    namespace: dict[str, Any] = {"__builtins__": {}}
    exec(text, namespace)  # noqa: S102 (keys are repr'd literals, see the module's docstring)
    return namespace["make"]  # type: ignore[no-any-return]


class _Writer:
    """Writes a shape's tokens as the constructor's statements, node by node."""

    def __init__(self, tokens: list[Any]) -> None:
        self.tokens = tokens
        self.pos = 0
        self.leaf = 2  # (0: summary_dir, 1: model_lineage's template)
        self.lines: list[str] = []

    def node(self) -> str:
        """The expression of the node at ``pos`` (its statements added to ``lines``)."""
        token = self.tokens[self.pos]
        self.pos += 1
        if token == _SHARE or token == _COPY:
            self.leaf += 1
            return f"v[{self.leaf - 1}]" + (".copy()" if token == _COPY else "")
        if token == _LIST:
            items = []
            while self.tokens[self.pos] != _END:
                items.append(self.node())
            self.pos += 1
            return f"[{', '.join(items)}]"
        name = f"d{len(self.lines)}"
        self.lines.append(f"{name} = v[{self.leaf}].copy()")
        self.leaf += 1
        while self.tokens[self.pos] != _END:
            key = self.tokens[self.pos]
            self.pos += 1
            value = self.node()
            self.lines.append(f"{name}[{key!r}] = {value}")
        self.pos += 1
        return name
