"""The package version: one place, read by the facade, the lineage environment record, the CLI,
the web UI and the build (``pyproject.toml``)."""

__all__ = ["__version__"]

__version__ = "0.1.0"
