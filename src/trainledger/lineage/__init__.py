"""Lineage records, torch analyzers, the lineage file writer and reader."""
