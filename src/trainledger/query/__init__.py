"""Lineage queries: condition validation, filter/sort/page in SQL and in Python, the index.

Public entry points: ``api.get_summary_lineage``, ``api.filter_summary_lineage``,
``table.lineage_table``, ``index.LineageIndex`` (a reusable index with ``query``,
``refresh``, ``set_annotation``, ``get_annotations``) and ``where.parse_where`` (the
``FIELD OP VALUE`` compiler). Nothing here imports torch.
"""
