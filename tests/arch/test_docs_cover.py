"""The docs keep up with the code: every module is named in ``docs/architecture.md``, and no
source file cites a document outside the repository (its conventions are in
``docs/development.md``)."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "src" / "trainledger"


def test_every_module_is_named_in_the_architecture_page() -> None:
    page = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    modules = [
        p.relative_to(SRC).as_posix()
        for p in sorted(SRC.rglob("*.py"))
        if not p.name.endswith("_pb2.py")
    ]
    assert len(modules) > 150  # (the walk found the package)
    assert [m for m in modules if f"`{m}`" not in page] == []


def test_the_code_cites_only_the_repository() -> None:
    outside = ("DESIGN.md", "../shared", "/work/shared")
    cited = [
        f"{p.relative_to(ROOT)}: {needle}"
        for p in sorted(SRC.rglob("*.py"))
        for needle in outside
        if needle in p.read_text(encoding="utf-8")
    ]
    assert cited == []
