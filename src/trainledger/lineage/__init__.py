"""Lineage records, torch analyzers, the lineage file writer and reader.

* ``proto/``      the schema: MindInsight's ``LineageEvent`` field numbers + extensions >= 100
* ``naming``      file names; creating a file with a unique, increasing ``<unix_ts>``
* ``records``     plain values -> events, and events -> MindInsight's dicts (pure)
* ``writer``      the process's append-only, fsynced writer per run directory
* ``reader``      ``read_lineage(run_dir)``: ``get_summary_lineage``'s dict (no torch needed)
* ``analyzers``   torch objects -> plain values (dataset walk, backbone, optimizer, env)

The callbacks that use them are ``trainledger.callbacks.lineage.TrainLineage/EvalLineage``.
Submodules are imported on demand so the reader works without torch.
"""
