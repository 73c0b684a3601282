"""``SummaryCollector``: MindSpore's automatic summary callback, writing TensorBoard files.

It collects at the first step and then every ``collect_freq`` steps (sink epochs in sink mode),
never twice for one step: the mean of the first network output as ``loss/auto``, the learning
rate (``optimizer.param_groups[0]["lr"]``) as ``learning_rate/auto``, weight histograms
(``<param>/auto``) and the input images (``input_data/auto``), plus the network structure once.
Lineage never goes into the TensorBoard files: the lineage switches (``collect_train_lineage``,
``collect_eval_lineage``, ``collect_dataset_graph``, ``custom_lineage_data``) drive a
``TrainLineage`` / ``EvalLineage`` (``trainledger.callbacks.lineage``) on ``summary_dir``, so
lineage is written by the one lineage writer, exactly as those callbacks write it.

Differences from MindSpore, per-step cost, resumed runs: ``docs/summary_collector.md``. Values
staged with ``collector.add_value(plugin, name, value)`` (MindSpore's summary operators) are
written at the next collected step; ``tensor`` values only at the steps of the tensor rule
(``collect_tensor_freq``; by default at most 20 steps over the run).
"""

from __future__ import annotations

import logging
import os
from typing import Any

from trainledger.callbacks.collected_values import (
    StagedValues,
    add_device_stats,
    add_histograms,
    add_input_images,
    add_metric,
    record_staged,
)
from trainledger.callbacks.graph_capture import first_batch_graph
from trainledger.callbacks.hparams_session import HParamsSession
from trainledger.callbacks.landscape_collect import landscape_saver
from trainledger.callbacks.summary_lineage import collector_lineage
from trainledger.callbacks.summary_options import (
    TENSOR_STEP_LIMIT,
    is_not_tensor_plugin,
    is_tensor_plugin,
    process_custom_lineage_data,
    process_specified_data,
    rank_summary_dir,
    tensor_range,
)
from trainledger.callbacks.summary_rows import ScalarRows
from trainledger.callbacks.tensor_buckets import DeviceBuckets
from trainledger.run import Callback, CallbackParams, RunContext
from trainledger.summary import SummaryRecord, process_export_options
from trainledger.values import check_positive_int

__all__ = ["SummaryCollector"]

logger = logging.getLogger("trainledger.summary")


class SummaryCollector(Callback):
    """Collects loss, learning rate, histograms, input images and the graph into
    TensorBoard event files under ``summary_dir``, and lineage through the lineage writer.

    Args follow MindSpore's ``SummaryCollector`` (see the module docstring for the
    differences). Errors in arguments are raised here, naming the argument or key.
    ``num_process`` is accepted and checked (MindSpore sized a pool of encoding processes
    with it), then unused: one background thread per ``SummaryRecord`` writes, whatever it is.
    Under torch.distributed only rank 0 collects (``all_ranks``: each, into ``rank_<n>/``).
    """

    # the run the per-step fast path serves; None while off (ineligible, or values staged)
    _fast_context: RunContext | None

    def __init__(
        self,
        summary_dir: str | os.PathLike[str],
        collect_freq: int = 10,
        num_process: int = 32,
        collect_specified_data: dict[str, Any] | None = None,
        keep_default_action: bool = True,
        custom_lineage_data: dict[str, int | float | str] | None = None,
        collect_tensor_freq: int | None = None,
        max_file_size: int | None = None,
        export_options: dict[str, Any] | None = None,
        *,
        all_ranks: bool = False,
    ) -> None:
        if not isinstance(summary_dir, (str, os.PathLike)):
            raise TypeError(
                f"summary_dir expected a str or path, received: {type(summary_dir).__name__}"
            )
        check_positive_int("collect_freq", collect_freq)
        check_positive_int("num_process", num_process)
        check_positive_int("collect_tensor_freq", collect_tensor_freq, allow_none=True)
        check_positive_int("max_file_size", max_file_size, allow_none=True)
        self._export_options = process_export_options(export_options)
        self._specified = process_specified_data(collect_specified_data, keep_default_action)
        self._custom_lineage_data = process_custom_lineage_data(custom_lineage_data)
        self._summary_dir, self.rank_active = rank_summary_dir(summary_dir, all_ranks)
        self._collect_freq = collect_freq
        self._num_process = num_process
        self._collect_tensor_freq = collect_tensor_freq
        self._max_file_size = max_file_size
        custom = self._custom_lineage_data or None  # the lineage: callbacks/summary_lineage.py
        self._lineage = collector_lineage(self._summary_dir, self._specified, custom)
        self._hparams = next((c for c in self._lineage if isinstance(c, HParamsSession)), None)
        self._landscape = landscape_saver(self._summary_dir, self._specified)  # or None
        self._record: SummaryRecord | None = None
        self._entered = False
        self._training = False
        self._reset_run_state()

    # --- public ---------------------------------------------------------------------------
    @property
    def summary_dir(self) -> str:
        return self._summary_dir

    @property
    def summary_record(self) -> SummaryRecord | None:
        """The open SummaryRecord (None outside a run)."""
        return self._record

    @property
    def collect_specified_data(self) -> dict[str, Any]:
        """The effective switches after defaults and ``keep_default_action``."""
        return dict(self._specified)

    @property
    def custom_lineage_data(self) -> dict[str, int | float | str]:
        return dict(self._custom_lineage_data)

    def add_value(self, plugin: str, name: str, value: Any) -> None:
        """Stage a value for the next collected step (MindSpore's summary operators)."""
        if self._pending is not None:  # not into the pending collection: into the next one
            self._later.append((plugin, name, value))
        else:
            self._ensure_record().add_value(plugin, name, value)
        self._fast_context = None  # the next collection takes the general path, which writes it

    # --- context --------------------------------------------------------------------------
    def __enter__(self) -> SummaryCollector:
        self._entered = True
        self._ensure_record()
        for child in self._lineage:
            child.__enter__()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._entered = False
        try:
            for child in self._lineage:
                child.__exit__(*exc_info)
        finally:
            self._close_record(exc_info[1] if len(exc_info) > 1 else None)

    def _ensure_record(self) -> SummaryRecord:
        if self._record is None or self._record.closed:
            self._record = SummaryRecord(
                self._summary_dir,
                max_file_size=self._max_file_size,
                raise_exception=False,
                export_options=self._export_options,
            )
            self._reset_run_state()
        return self._record

    def _close_record(self, exception: object = None) -> None:
        self._finish_pending(wait=True)
        record, self._record = self._record, None
        if record is not None:
            try:
                self._rows.flush(record)
            finally:
                record.close()
        if self._hparams is not None:  # after the scalar file (see HParamsSession)
            self._hparams.finish(exception)

    def _reset_run_state(self) -> None:
        self._first_step = True
        self._last_step: int | None = None
        self._graph_saved = False
        self._tensor_steps: range | None = None
        self._tensor_count = 0
        self._metric_ok = True
        self._sink = False
        self._sink_units = 0  # step-end calls in sink mode: the unit of an unbounded run
        self._lr_group: dict[str, Any] | None = None
        self._fast_eligible = False  # steps the fast path serves: see on_train_step_end
        self._due_general = True  # due steps take the general path (more than metrics)
        self._fast_context = None
        self._fast_params: CallbackParams = CallbackParams()
        self._rows = ScalarRows()  # the fast path's buffered rows (callbacks/summary_rows.py)
        self._tensor_type: Any = None  # type of the first step's scalar loss (torch.Tensor)
        self._read_now = False  # that loss was a CPU float: read with .item() at each step
        self._buckets: DeviceBuckets | None = None  # histograms counted on the device
        # a collection whose device values are still on their way to the host (_collect)
        self._pending: tuple[StagedValues, int, Any, bool] | None = None
        self._later: list[tuple[str, str, Any]] = []  # add_value()s made meanwhile
        self._flush_next = False  # the first collection is flushed once written

    # --- hooks ----------------------------------------------------------------------------
    def on_train_begin(self, run_context: RunContext) -> None:
        params = run_context.original_args()
        self._check_callbacks(params)
        record = self._ensure_record()
        record.set_mode("train")
        if params.get("initial_epoch"):  # a resumed run: SummaryRecord.mark_resumed
            record.mark_resumed()
        self._training = True
        self._sink = bool(params.get("dataset_sink_mode", False))
        self._forward("on_train_begin", run_context)

    def on_train_step_end(self, run_context: RunContext) -> None:
        if self._landscape is not None:  # weight snapshots (callbacks/landscape_collect.py)
            self._landscape.step_end(run_context)
        if run_context is self._fast_context:
            # The common per-step case, inline (it runs between torch ops, with cold caches,
            # where every Python call and torch getter costs): a step that is not due, or a
            # due one of a metric-only collection; no tensor step, nothing staged (add_value
            # turns this path off until a collection). Anything else (a due step with
            # histograms, images or device stats) takes the general path.
            params = self._fast_params  # this run's cb_params, without original_args()'s call
            try:
                step, outputs = params["cur_step_num"], params["net_outputs"]
                lr = self._lr_group["lr"]  # type: ignore[index]
            except (KeyError, TypeError):
                step = outputs = lr = None
            if (
                type(step) is int
                and step != self._last_step
                and type(lr) is float
                and type(outputs) is self._tensor_type
            ):
                # (a tensor step writes staged tensors only; nothing is staged here)
                if step % self._collect_freq:
                    return  # nothing due
                if not self._due_general:  # metric-only: the loss and lr as one row
                    if self._read_now:  # a CPU float loss: a plain load, cheaper than keeping
                        try:
                            loss = outputs.item()
                        except RuntimeError:  # not one number: the general path's mean
                            loss = None
                    else:
                        loss = self._rows.defer(outputs)
                    if loss is not None:
                        self._rows.add(step, loss, lr, self._record)  # type: ignore[arg-type]
                        self._last_step = step
                        return
        self._general_step(run_context)

    def _general_step(self, run_context: RunContext) -> None:
        """Every case of a step's collection (the first step, tensor steps, histograms, input
        images, staged values, sink mode)."""
        params = run_context.original_args()
        record = self._record
        if record is None or params.get("mode", "train") != "train":
            return
        if self._pending is not None:
            self._finish_pending(wait=False)
        self._sink_units += 1
        self._rows.flush(record)
        step = params["cur_step_num"]
        if type(step) is not int:
            step = int(step)
        if not self._graph_saved:
            self._graph_saved = True
            if self._specified.get("collect_graph"):
                graph = first_batch_graph(params)  # callbacks/graph_capture.py
                if graph is not None:  # written with the first collection, just below
                    record.add_value("graph", "train_network/auto", graph)
        if step == self._last_step:
            return  # never twice for the same step
        if self._first_step:
            self._first_step = False
            outputs: Any = params.get("net_outputs")
            if getattr(outputs, "ndim", None) == 0 and hasattr(outputs, "detach"):
                self._tensor_type = type(outputs)  # the fast path's loss type (torch.Tensor)
                # a CPU float loss is read at once (as a number even if its dtype changes
                # later); elsewhere .item() would sync the device
                self._read_now = outputs.is_cpu and outputs.is_floating_point()
                self._rows.hold(outputs)
            self._tensor_steps = tensor_range(
                params, self._sink, self._collect_freq, self._collect_tensor_freq
            )
            self._flush_next = True  # visible within moments of being written
            self._collect(params, record, step, plugin_filter=None)
            self._tensor_count += 1
            specified = self._specified
            self._fast_eligible = not self._sink and self._tensor_steps is not None
            self._due_general = (
                not specified.get("collect_metric")
                or bool(specified.get("collect_input_data"))
                or bool(specified.get("collect_device_stats"))
                or "histogram_regular" in specified
            )
            self._use_fast_path(run_context, params, record)
            return
        if not self._sink:
            current = step
        elif params.get("epoch_num") is not None:
            current = int(params["cur_epoch_num"])  # Model.train: a sink epoch is the unit
        else:  # online_train: an epoch is a whole pass over the stream, so count sink units
            current = self._sink_units
        regular = current % self._collect_freq == 0
        steps = self._tensor_steps
        tensor = current in steps if steps is not None else self._is_tensor_step(current)
        if regular and tensor:
            self._collect(params, record, step, plugin_filter=None)
        elif tensor:
            self._finish_pending(wait=True)
            record.record(step, plugin_filter=is_tensor_plugin)
            self._last_step = step
        elif regular:
            self._collect(params, record, step, plugin_filter=is_not_tensor_plugin)
        if tensor:
            self._tensor_count += 1
        self._use_fast_path(run_context, params, record)

    def _use_fast_path(
        self, run_context: RunContext, params: CallbackParams, record: SummaryRecord
    ) -> None:
        """Let the next steps of this run take the fast path, when it can serve them."""
        fast = self._fast_eligible and not record.staged and self._pending is None
        self._fast_context = run_context if fast else None
        self._fast_params = params
        self._rows.restart_clock()

    def on_train_epoch_end(self, run_context: RunContext) -> None:
        params = run_context.original_args()
        record = self._record
        if record is None:
            return
        self._finish_pending(wait=True)
        self._rows.flush(record)
        step = int(params.get("cur_step_num") or 0)
        for name, value in (params.get("eval_results") or {}).items():
            try:  # a direct write: values staged for the next collection stay staged
                record.add_scalar(f"eval/{name}", value, step)
            except (TypeError, ValueError):
                continue  # a non-scalar metric (e.g. a confusion matrix) has no curve
        record.flush(fsync=False, wait=False)  # readers see the epoch; fsynced at train end
        self._forward("on_train_epoch_end", run_context)
        if self._landscape is not None:
            self._landscape.epoch_end(run_context)

    def on_train_end(self, run_context: RunContext) -> None:
        self._training = False
        self._forward("on_train_end", run_context)
        if self._landscape is not None:  # train_metadata.json
            self._landscape.train_end(run_context)
        record = self._record
        if record is None:
            return
        self._finish_pending(wait=True)
        self._rows.flush(record)
        if self._entered:  # closed as the run's callbacks exit, right after the others' ends:
            record.flush(fsync=False)  # readers see every value now, and the fsync runs on
            record.flush(wait=False)  # the writer thread meanwhile (close() waits for it)
        else:
            record.flush()
            self._close_record()

    def on_eval_begin(self, run_context: RunContext) -> None:
        params = run_context.original_args()
        self._finish_pending(wait=True)  # a training collection goes in before eval's values
        if not self._training:
            self._check_callbacks(params)
            self._ensure_record().set_mode("eval")

    def on_eval_end(self, run_context: RunContext) -> None:
        self._forward("on_eval_end", run_context)
        record = self._record
        if record is None:
            return
        if not self._training:
            record.flush()
            if not self._entered:
                self._close_record()

    # --- collection -----------------------------------------------------------------------
    def _check_callbacks(self, params: CallbackParams) -> None:
        callbacks = params.get("list_callback") or []
        count = sum(isinstance(cb, SummaryCollector) for cb in callbacks)
        if count > 1:
            raise ValueError(
                f"expected at most one SummaryCollector in the callback list, received: {count}"
            )

    def _is_tensor_step(self, current: int) -> bool:
        if self._tensor_steps is not None:
            return current in self._tensor_steps
        freq = self._collect_tensor_freq or self._collect_freq
        limit = None if self._collect_tensor_freq else TENSOR_STEP_LIMIT
        return current % freq == 0 and (limit is None or self._tensor_count < limit)

    def _collect(
        self, params: CallbackParams, record: SummaryRecord, step: int, plugin_filter: Any
    ) -> None:
        """Stage the step's values and start their copy to the host; write them now when
        they are there (CPU values), else at a later step, when the copy has arrived: the
        training thread never waits for the device at a record (run/host_copy.py)."""
        self._finish_pending(wait=True)  # collections are written in step order
        specified = self._specified
        staged = StagedValues()  # the device values reach the host in one copy
        images = bool(specified.get("collect_input_data"))
        if images:
            images = add_input_images(params, staged)
        if specified.get("collect_metric"):
            self._metric_ok, self._lr_group = add_metric(
                params, staged, self._metric_ok, self._lr_group
            )
        if specified.get("collect_device_stats"):
            specified["collect_device_stats"] = add_device_stats(params, staged)
        if "histogram_regular" in specified:
            if self._buckets is None:
                self._buckets = DeviceBuckets(record.histogram_bins)
            add_histograms(params, staged, specified.get("histogram_regular"), self._buckets)
        staged.start()
        self._last_step = step
        self._pending = (staged, step, plugin_filter, images)
        if staged.ready():
            self._finish_pending(wait=True)

    def _finish_pending(self, wait: bool) -> None:
        """Write the pending collection once its copy has arrived (at once when ``wait``)."""
        pending, record = self._pending, self._record
        if pending is None or record is None or not (wait or pending[0].ready()):
            return
        self._pending = None
        staged, step, plugin_filter, images = pending
        if not record_staged(staged, record) or not images:
            self._specified["collect_input_data"] = False
        record.record(step, plugin_filter=plugin_filter)
        later, self._later = self._later, []
        for plugin, name, value in later:
            record.add_value(plugin, name, value)
        if self._flush_next:
            self._flush_next = False
            record.flush(fsync=False, wait=False)

    # --- lineage ------------------------------------------------------------------------
    def _forward(self, hook: str, run_context: RunContext) -> None:
        for child in self._lineage:
            getattr(child, hook)(run_context)
