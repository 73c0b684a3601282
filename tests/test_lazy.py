"""Public names whose optional dependency is missing say which extra to install.

Each case runs in a subprocess in which the dependency cannot be imported (``sys.modules[name]
= None`` makes ``import name`` raise ``ModuleNotFoundError`` exactly as a missing package does),
so the test process keeps its own torch and pandas.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest


def _run(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=120
    )


@pytest.mark.parametrize(
    ("blocked", "statement", "name", "extra"),
    [
        ("torch", "from trainledger import Model", "trainledger.Model", "torch"),
        ("torch", "import trainledger; trainledger.RecModel", "trainledger.RecModel", "torch"),
        ("torch", "from trainledger.run import Model", "trainledger.run.Model", "torch"),
        ("pandas", "from trainledger import lineage_table", "trainledger.lineage_table", "pandas"),
    ],
)
def test_missing_optional_dependency_names_the_extra(
    blocked: str, statement: str, name: str, extra: str
) -> None:
    result = _run(
        f"""
        import sys
        sys.modules[{blocked!r}] = None
        from trainledger.errors import MissingExtraError
        try:
            {statement}
        except ImportError as exc:
            assert isinstance(exc, MissingExtraError), type(exc)
            assert isinstance(exc, ModuleNotFoundError)
            assert exc.name == {blocked!r}, exc.name
            print(exc)
        else:
            raise SystemExit("imported without " + {blocked!r})
        """
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == (
        f"{name} needs {blocked}, which is not installed: pip install 'trainledger[{extra}]'"
    )


def test_the_original_error_is_chained() -> None:
    result = _run(
        """
        import sys
        sys.modules["torch"] = None
        try:
            from trainledger import Model
        except ImportError as exc:
            cause = exc.__cause__
            print(type(cause).__name__, cause.name)
        """
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["ModuleNotFoundError", "torch"]


def test_names_without_optional_dependencies_still_import() -> None:
    """The query API and metrics need neither torch nor pandas."""
    result = _run(
        """
        import sys
        sys.modules["torch"] = None
        sys.modules["pandas"] = None
        from trainledger import filter_summary_lineage, get_summary_lineage, metrics
        import trainledger.metrics
        print(trainledger.metrics.Accuracy.__name__)
        """
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "Accuracy"


def test_a_missing_non_optional_module_is_not_blamed_on_an_extra() -> None:
    from trainledger.lazy import lazy_exports

    getattr_, _ = lazy_exports("pkg", {"thing": "trainledger_no_such_module"}, {})
    with pytest.raises(ModuleNotFoundError) as info:
        getattr_("thing")
    assert "trainledger[" not in str(info.value)
    assert info.value.name == "trainledger_no_such_module"


def test_metrics_alias_is_the_run_metrics_module() -> None:
    import trainledger
    import trainledger.metrics
    import trainledger.run.metrics

    assert trainledger.metrics is trainledger.run.metrics
    from trainledger.metrics import Accuracy

    metric = Accuracy()
    metric.update([[0.1, 0.9], [0.8, 0.2]], [1, 1])
    assert metric.eval() == 0.5
