"""The package's layer rules and size limits, read from the source with ``ast``.

Kept apart from the test so the same facts can be printed while refactoring
(``python -m tests.arch.layers``).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src" / "trainledger"

#: Leaves any package may import: they import nothing else of ours.
GROUND = {"errors", "lazy", "storage", "values", "version"}

#: package -> the other packages it may import (besides the ground).
MAY_IMPORT: dict[str, set[str]] = {
    "storage": set(),
    "run": set(),
    "summary": set(),
    "checkpoint": set(),
    "data": set(),
    "lineage": {"summary"},
    "query": {"lineage", "summary", "checkpoint"},
    "callbacks": {"run", "summary", "checkpoint", "lineage", "data"},
    "integrations": {"callbacks", "run", "summary", "checkpoint", "lineage"},
    "server": {"query", "summary", "lineage", "checkpoint"},
    "": {"*"},  # the facade re-exports the public names
    "__main__": {"cli"},  # python -m trainledger
    "metrics": {"run"},  # trainledger.metrics is an alias of trainledger.run.metrics
    "cli": {"*"},
    "demos": {"*"},
}

MAX_MODULE_LINES = 450
MAX_FUNCTION_LINES = 80


@dataclass(frozen=True)
class Violation:
    path: str
    line: int
    what: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.what}"


def modules() -> Iterator[Path]:
    for path in sorted(SRC.rglob("*.py")):
        if not path.name.endswith("_pb2.py"):
            yield path


def package_of(path: Path) -> str:
    """The top-level package (or root module stem) a source file belongs to."""
    parts = path.relative_to(SRC).parts
    if len(parts) == 1:
        return "" if parts[0] == "__init__.py" else parts[0][:-3]
    return parts[0]


def module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(["trainledger", *parts])


def public_names(package: str) -> set[str]:
    """The literal ``__all__`` of ``trainledger/<package>/__init__.py`` (or a root module)."""
    init = SRC / package / "__init__.py"
    if not init.exists():
        init = SRC / f"{package}.py"
    if not init.exists():
        return set()
    for node in ast.parse(init.read_text()).body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets
        ):
            value = node.value
            if isinstance(value, (ast.List, ast.Tuple)):
                return {e.value for e in value.elts if isinstance(e, ast.Constant)}
    return set()


def _resolve(path: Path, node: ast.ImportFrom) -> str:
    if node.level == 0:
        return node.module or ""
    base = module_name(path).split(".")
    if path.name != "__init__.py":
        base = base[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def imports(path: Path) -> Iterator[tuple[int, str, list[str]]]:
    """Every ``trainledger`` import in a file, module-level or not: (line, module, names)."""
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "trainledger":
                    yield node.lineno, alias.name, []
        elif isinstance(node, ast.ImportFrom):
            target = _resolve(path, node)
            if target.split(".")[0] == "trainledger":
                yield node.lineno, target, [a.name for a in node.names]


def layer_violations() -> list[Violation]:
    found: list[Violation] = []
    for path in modules():
        own = package_of(path)
        rel = str(path.relative_to(SRC.parent))
        for line, target, names in imports(path):
            parts = target.split(".")
            if len(parts) == 1:
                found.append(Violation(rel, line, "imports the top-level facade"))
                continue
            other = parts[1]
            if other == own or other in GROUND - {"storage"}:
                continue
            allowed = MAY_IMPORT.get(own, set())
            if other != "storage" and "*" not in allowed and other not in allowed:
                found.append(Violation(rel, line, f"{own or 'trainledger'} may not import {other}"))
                continue
            if len(parts) > 2 or not names:
                found.append(
                    Violation(rel, line, f"reaches into {target} (import from trainledger.{other})")
                )
                continue
            public = public_names(other)
            hidden = [n for n in names if n not in public]
            if hidden:
                found.append(
                    Violation(rel, line, f"{', '.join(hidden)} not in trainledger.{other}.__all__")
                )
    return found


def size_violations() -> list[Violation]:
    found: list[Violation] = []
    for path in modules():
        rel = str(path.relative_to(SRC.parent))
        text = path.read_text()
        lines = len(text.splitlines())
        if lines > MAX_MODULE_LINES:
            found.append(Violation(rel, 1, f"module has {lines} lines (> {MAX_MODULE_LINES})"))
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                length = (node.end_lineno or node.lineno) - node.lineno + 1
                if length > MAX_FUNCTION_LINES:
                    found.append(
                        Violation(
                            rel,
                            node.lineno,
                            f"{node.name} has {length} lines (> {MAX_FUNCTION_LINES})",
                        )
                    )
    return found


def import_cycles() -> list[list[str]]:
    """Groups of modules that import each other, directly or round a circle (module-level or
    in a function; a package's ``__init__`` re-exports are left out: they import on use)."""
    paths = {module_name(p): p for p in modules() if p.name != "__init__.py"}
    graph: dict[str, set[str]] = {}
    for name, path in paths.items():
        deps = set()
        for _, target, names in imports(path):
            for imported in [f"{target}.{n}" for n in names] or [target]:
                found = imported if imported in paths else target
                if found in paths and found != name:
                    deps.add(found)
        graph[name] = deps
    return [sorted(c) for c in _components(graph) if len(c) > 1]


def _components(graph: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's strongly connected components, iteratively (no recursion limit)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                group = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.append(member)
                    if member == node:
                        break
                out.append(group)
    return out


if __name__ == "__main__":
    for v in layer_violations() + size_violations():
        print(v)
    for cycle in import_cycles():
        print("import cycle:", " -> ".join(cycle))
