"""The layer rules and size limits of docs/architecture.md hold for every import in src/."""

from __future__ import annotations

from tests.arch.layers import import_cycles, layer_violations, size_violations


def test_every_import_follows_the_layer_rules() -> None:
    assert [str(v) for v in layer_violations()] == []


def test_no_module_or_function_is_over_the_size_limits() -> None:
    assert [str(v) for v in size_violations()] == []


def test_no_modules_import_each_other() -> None:
    """A circle of imports (``query/backend.py`` and the databases it opened, before) makes
    import order matter and hides which idea depends on which."""
    assert import_cycles() == []
