"""Thin adapters from RunContext to the stores (summary, lineage, checkpoint) and the built-in
monitors. One class per module."""
