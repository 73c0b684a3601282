"""Lineage queries: condition validation, filter/sort/page in SQL and in Python, the index."""
