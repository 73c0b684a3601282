"""Streaming data sources for online training (queue-backed stream, file tail)."""
