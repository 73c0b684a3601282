"""Read a base directory the way TensorBoard's HParams dashboard does, with TensorBoard's own
plugin code: its event multiplexer, data provider and the hparams plugin's request handlers."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from google.protobuf import json_format
from tensorboard import context
from tensorboard.backend.event_processing import data_provider, plugin_event_multiplexer
from tensorboard.plugins import base_plugin
from tensorboard.plugins.hparams import (
    api_pb2,
    backend_context,
    get_experiment,
    list_session_groups,
)


def _context(base: Path) -> backend_context.Context:
    mux = plugin_event_multiplexer.EventMultiplexer()
    mux.AddRunsFromDirectory(str(base))
    mux.Reload()
    provider = data_provider.MultiplexerDataProvider(mux, str(base))
    return backend_context.Context(
        base_plugin.TBContext(logdir=str(base), multiplexer=mux, data_provider=provider)
    )


def experiment(base: Path) -> dict[str, Any]:
    """The dashboard's experiment: ``{"hparams": {name: type}, "metrics": [tags]}``."""
    ctx = _context(base)
    exp = get_experiment.Handler(
        context.RequestContext(), ctx, "", api_pb2.GetExperimentRequest()
    ).run()
    hparams = {h.name: api_pb2.DataType.Name(h.type) for h in exp.hparam_infos}
    return {"hparams": hparams, "metrics": sorted(m.name.tag for m in exp.metric_infos)}


def sessions(base: Path) -> dict[str, dict[str, Any]]:
    """Each session's hparams, metric values (by tag) and status, by run name."""
    ctx = _context(base)
    exp = get_experiment.Handler(
        context.RequestContext(), ctx, "", api_pb2.GetExperimentRequest()
    ).run()
    request = api_pb2.ListSessionGroupsRequest(
        start_index=0, slice_size=100, allowed_statuses=list(api_pb2.Status.values())
    )
    for info in exp.metric_infos:
        request.col_params.add(metric=info.name)
    for info in exp.hparam_infos:
        request.col_params.add(hparam=info.name)
    response = list_session_groups.Handler(context.RequestContext(), ctx, "", request).run()
    out = {}
    for group in response.session_groups:
        for session in group.sessions:
            hparams = json.loads(json_format.MessageToJson(group))["hparams"]
            out[session.name] = {
                "hparams": hparams,
                "metrics": {m.name.tag: m.value for m in session.metric_values},
                "status": api_pb2.Status.Name(session.status),
            }
    return out


def value_tags(event_file: Path) -> set[str]:
    """The tags of every summary value in one event file, read by TensorBoard's loader."""
    from tensorboard.backend.event_processing import event_file_loader

    tags = set()
    for event in event_file_loader.EventFileLoader(str(event_file)).Load():
        tags |= {value.tag for value in event.summary.value}
    return tags
