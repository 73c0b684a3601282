"""Every package names its public names three times, on purpose (``_EXPORTS`` for the lazy
import, ``__all__`` and the ``TYPE_CHECKING`` imports for type checkers, which cannot read a
computed list): the three must agree, and each name must come from the module ``_EXPORTS``
says."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src" / "trainledger"
PACKAGES = sorted(p for p in SRC.rglob("__init__.py") if "_EXPORTS" in p.read_text())


def _three(path: Path) -> tuple[dict[str, str], list[str], dict[str, str]]:
    """(_EXPORTS, __all__, {name: module} of the TYPE_CHECKING imports) of one ``__init__``;
    a name imported at once (``__version__``) counts as in ``_EXPORTS`` and typed."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    exports: dict[str, str] = {}
    names: list[str] = []
    typed: dict[str, str] = {}
    eager: dict[str, str] = {}
    for node in tree.body:
        if isinstance(node, (ast.Assign, ast.AnnAssign)):
            target = node.targets[0] if isinstance(node, ast.Assign) else node.target
            if isinstance(target, ast.Name) and target.id == "_EXPORTS":
                exports = ast.literal_eval(node.value)  # type: ignore[arg-type]
            elif isinstance(target, ast.Name) and target.id == "__all__":
                names = ast.literal_eval(node.value)  # type: ignore[arg-type]
        elif isinstance(node, ast.ImportFrom) and node.module and node.module != "__future__":
            for alias in node.names:
                eager[alias.asname or alias.name] = node.module
        elif isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for sub in ast.walk(node):
                if isinstance(sub, ast.ImportFrom) and sub.module:
                    for alias in sub.names:
                        typed[alias.asname or alias.name] = sub.module
    public = {n: m for n, m in eager.items() if n in names}
    return {**exports, **public}, names, {**typed, **public}


def test_the_packages_were_found() -> None:
    assert len(PACKAGES) >= 9


@pytest.mark.parametrize("path", PACKAGES, ids=lambda p: str(p.relative_to(SRC).parent))
def test_the_three_lists_agree(path: Path) -> None:
    exports, names, typed = _three(path)
    assert sorted(names) == sorted(set(names)), "a name twice in __all__"
    assert set(exports) == set(names), "_EXPORTS and __all__ differ"
    assert set(typed) == set(names), "the TYPE_CHECKING imports and __all__ differ"
    wrong = {
        n: (exports[n], typed[n])
        for n in names
        if exports[n] not in (typed[n], f"{typed[n]}.{n}")  # (a submodule: ``import metrics``)
    }
    assert wrong == {}, "a name imported from another module than _EXPORTS says"
