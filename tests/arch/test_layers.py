"""The layer rules and size limits of docs/architecture.md hold for every import in src/."""

from __future__ import annotations

from tests.arch.layers import layer_violations, size_violations


def test_every_import_follows_the_layer_rules() -> None:
    assert [str(v) for v in layer_violations()] == []


def test_no_module_or_function_is_over_the_size_limits() -> None:
    assert [str(v) for v in size_violations()] == []
