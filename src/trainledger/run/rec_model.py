"""``RecModel``: a ``Model`` that also trains online, over a stream that never ends.

MindSpore's ``RecModel.online_train`` loops forever, never looks at ``request_stop`` and leaves
most cb_params unset, so SummaryCollector fails inside it. This one reuses ``Model``'s parts
(cb_params builder, phase wrapper, signal handling) and its ``StepLoop`` (device move, train
step, step hooks), so every callback that works in ``Model.train`` works here, and it stops
cleanly:

* ``run_context.request_stop()`` from a callback or another thread (checked every step);
* SIGINT/SIGTERM (main thread): the current step finishes, end hooks run (final checkpoint,
  summaries flushed, lineage "stopped"); a second Ctrl-C aborts. A source marked
  ``interruptible = True`` with a thread-safe ``close()`` (``QueueStream``,
  ``FileTailSource``) is closed on the signal in one process, so a trainer blocked waiting for
  data stops too (under a process group the ranks stop where they agree);
* ``max_steps`` training steps, or ``max_seconds`` seconds (checked after every step, or
  every sink unit in sink mode; a source that blocks waiting for data delays it);
* the end of a one-shot iterator (a generator, a closed ``QueueStream``); with
  ``uneven_streams=True`` under a process group, the first end of any rank's stream.

``cb_params.stop_reason`` tells which: "requested", "signal", "max_steps", "max_seconds", or
"completed" (the stream ended), or "error".

Offsets of a resumable source (``FileTailSource``) are committed as ``run.stream_commits``
says: at checkpoints when a ``ModelCheckpoint`` runs (exactly-once relative to them), else
at every clean stop and every ``commit_interval`` (at-least-once).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from trainledger.errors import DatasetError
from trainledger.run.arguments import check_sink_args
from trainledger.run.batches import dataset_len
from trainledger.run.callback import Callback, CallbackParams, RunContext
from trainledger.run.callback_manager import CallbackManager
from trainledger.run.distributed import any_rank, is_distributed
from trainledger.run.model import Model
from trainledger.run.outputs import loss_of
from trainledger.run.steploop import StepLoop, set_sampler_epoch
from trainledger.run.stream_commits import StreamCommits
from trainledger.run.windowed import WindowedMetrics
from trainledger.values import check_positive_int

__all__ = ["RecModel"]

_END = object()


class RecModel(Model):
    """A ``Model`` with ``online_train`` for unbounded streams (recommendation, CTR models).

    Same constructor as ``Model``. ``metrics`` are evaluated by ``online_train`` over a sliding
    window of recent training batches (see ``online_train``), and by ``eval``/``fit`` as usual.
    """

    def online_train(
        self,
        train_dataset: Iterable[Any],
        callbacks: Callback | Iterable[Callback] | None = None,
        dataset_sink_mode: bool = True,
        sink_size: int = 1,
        *,
        max_steps: int | None = None,
        max_seconds: float | None = None,
        metric_window: int = 1000,
        metric_every: int = 100,
        uneven_streams: bool = False,
    ) -> None:
        """Train on ``train_dataset`` until it ends or a stop condition is met.

        Args:
            train_dataset: any iterable or iterator of batches (as ``Model.train`` takes them).
                A re-iterable (a list, a DataLoader) is iterated again when a pass ends, each
                pass an epoch (``cur_epoch_num``); a pass that yields nothing ends training. A
                one-shot iterator (a generator, ``QueueStream``, ``FileTailSource``) is one
                epoch that lasts until the iterator ends, which ends training normally.
            callbacks: as in ``Model.train``. cb_params carry every field ``Model.train`` sets,
                with ``epoch_num=None`` and ``batch_num`` the length of a pass of a re-iterable
                that has one (MindSpore's ``get_dataset_size()``; in sink mode too, where an
                epoch is still a pass), else None; plus ``max_steps``, ``max_seconds``,
                ``metric_window``, ``window_metrics`` and ``bad_records``.
            dataset_sink_mode, sink_size: checked as MindSpore does, with its error types and
                messages: ``dataset_sink_mode`` a bool; in sink mode ``sink_size`` a positive
                int (any, where MindSpore took only 1), else ignored. In sink mode step hooks
                fire once per ``sink_size`` steps and ``cur_step_num`` advances by the steps
                run (a unit is cut short by the end of a pass or a stop); ``SummaryCollector``
                counts its ``collect_freq`` in these units.
            max_steps: stop after this many training steps (None: no limit).
            max_seconds: stop after the first step (sink unit in sink mode) that ends this
                many seconds after the start (None: no limit; per rank, then agreed).
            metric_window: how many recent training batches the windowed metrics cover.
            metric_every: recompute the windowed metrics every this many steps (and at the
                end of each epoch and of training).
            uneven_streams: under a process group, ranks agree on every batch (one all-reduce
                a step) so that all end the pass when any rank's stream ends.

        Windowed metrics: with ``metrics`` given to the model, each training batch's
        predictions, labels and loss are kept for the last ``metric_window`` batches, and
        the metrics are recomputed over them every ``metric_every`` steps. The results are
        ``cb_params.window_metrics`` (``{name: value}``), also published as
        ``cb_params.eval_results`` so that ``SummaryCollector`` records them as scalars
        (``eval/<name>``, at epoch ends) and ``ModelCheckpoint``'s best-N ``monitor`` can rank
        checkpoints by them; both are ``{}`` until the first computation. Predictions and
        labels come from ``loss_fn``'s two arguments; without ``loss_fn`` only loss metrics
        work, unless ``eval_indexes`` locate (loss, predictions, label) in the outputs.
        """
        check_sink_args(dataset_sink_mode, sink_size)
        self._check_online_args(train_dataset, max_steps, max_seconds, uneven_streams)
        window = self._make_window(metric_window, metric_every)
        sink = dataset_sink_mode
        manager = self._make_manager(callbacks)
        cb_params = self._build_train_params(
            train_dataset=train_dataset,
            epoch_num=None,
            batch_num=None if isinstance(train_dataset, Iterator) else dataset_len(train_dataset),
            list_callback=manager.callbacks,
            dataset_sink_mode=sink,
            sink_size=sink_size,
        )
        cb_params.update(
            _online_fields(train_dataset, max_steps, max_seconds, window, metric_window)
        )
        run_context = _OnlineRunContext(cb_params, train_dataset)
        self._step.prepare()
        self._train_network.train()
        loop = self._online_loop(manager, run_context, window, sink_size, uneven_streams)
        try:
            with self._stop_signals(run_context), manager:
                with self._phase(manager, run_context, "on_train_begin", "on_train_end"):
                    loop.run(train_dataset, max_steps, max_seconds)
                    self._finish_train(cb_params, run_context)
                loop.commits.clean_end()  # only reached without an exception
        finally:
            self._step.capture, self._captured = None, (None, None)

    def _online_loop(
        self,
        manager: CallbackManager,
        run_context: RunContext,
        window: WindowedMetrics | None,
        sink_size: int,
        uneven: bool,
    ) -> _OnlineLoop:
        """The passes and units of one ``online_train`` call, around its ``StepLoop`` (the
        step keeps its predictions and labels for the windowed metrics, until the call ends)."""
        cb_params = run_context.original_args()
        capturing = window is not None and self._loss_fn is not None
        self._step.capture = self._capture if capturing else None
        return _OnlineLoop(
            self._step_loop(manager, run_context),
            self._window_inputs if window is not None else None,
            window,
            sink_size if cb_params["dataset_sink_mode"] else 1,
            StreamCommits(cb_params["train_dataset"], cb_params, manager.callbacks),
            uneven,
        )

    _captured: tuple[Any, Any] = (None, None)

    def _capture(self, y_pred: Any, label: Any) -> None:
        """Keep the step's (predictions, label) for the windowed metrics (``TrainStep.capture``)."""
        self._captured = (y_pred, label)

    def _window_inputs(self, net_outputs: Any) -> tuple[Any, Any, Any]:
        """``(loss, predictions, label)`` of the last step, for the windowed metrics."""
        if self._loss_fn is not None:
            return loss_of(net_outputs), *self._captured
        if self._eval_indexes is not None and isinstance(net_outputs, (tuple, list)):
            i_loss, i_pred, i_label = self._eval_indexes
            return net_outputs[i_loss], net_outputs[i_pred], net_outputs[i_label]
        return loss_of(net_outputs), None, None

    def _check_online_args(
        self,
        train_dataset: Any,
        max_steps: Any,
        max_seconds: Any,
        uneven_streams: Any,
    ) -> None:
        if max_steps is not None:
            check_positive_int("max_steps", max_steps)
        if max_seconds is not None and (
            isinstance(max_seconds, bool)
            or not isinstance(max_seconds, (int, float))
            or not max_seconds > 0
        ):
            raise ValueError(
                f"max_seconds expected a positive number or None, received: {max_seconds!r}"
            )
        if not isinstance(uneven_streams, bool):
            raise TypeError(
                f"uneven_streams expected a bool, received: {type(uneven_streams).__name__}"
            )
        if (
            train_dataset is None
            or isinstance(train_dataset, (str, bytes))
            or not isinstance(train_dataset, Iterable)
        ):
            raise DatasetError(
                "train_dataset expected an iterable or iterator of batches (a generator, a "
                "QueueStream, a FileTailSource, a DataLoader), received: "
                f"{type(train_dataset).__name__}"
            )
        self._check_can_train()

    def _make_window(self, metric_window: int, metric_every: int) -> WindowedMetrics | None:
        """The windowed metrics of ``online_train`` (None without metrics), after checking
        that the steps will give them the predictions and labels they need."""
        if not self._metrics:
            return None
        window = WindowedMetrics(self._metrics, metric_window, metric_every)
        if not window.needs_predictions or self._loss_fn is not None:
            return window
        if self._eval_indexes is None:
            names = [n for n, m in self._metrics.items() if not m.needs_loss]
            raise ValueError(
                f"online_train metrics {names} expected predictions and labels: give RecModel "
                "a loss_fn, or eval_indexes (loss, predictions, label positions in the train "
                "network's outputs), received: neither"
            )
        return window


class _OnlineRunContext(RunContext):
    """A RunContext that also closes a waiting source on SIGINT/SIGTERM.

    Why: a trainer blocked in ``next(source)`` (no data arriving) would never reach the check
    after the step; closing the source makes the wait end promptly. Not under a process group,
    where the ranks stop at the step they agree on, each with its source open.
    """

    def __init__(self, cb_params: CallbackParams, source: Any) -> None:
        super().__init__(cb_params)
        self._source = source

    def request_stop(self, reason: str = "requested") -> None:
        super().request_stop(reason)
        # under a process group the ranks stop together where they agree: a source closed on
        # one rank would end its stream at another step than the others' (DDP would then wait)
        interruptible = getattr(self._source, "interruptible", False) is True
        if reason == "signal" and interruptible and not is_distributed():
            self._source.close()


class _OnlineLoop:
    """The passes/units of one ``online_train`` call, around its ``StepLoop``."""

    def __init__(
        self,
        steps: StepLoop,
        window_inputs: Callable[[Any], tuple[Any, Any, Any]] | None,
        window: WindowedMetrics | None,
        unit: int,
        commits: StreamCommits,
        uneven: bool,
    ) -> None:
        self.steps = steps
        self.commits = commits
        self.manager = steps.manager
        self.run_context = steps.run_context
        self.cb_params = steps.cb_params
        self.window_inputs = window_inputs
        self.window = window
        self.unit = unit
        self.sink = steps.cb_params["dataset_sink_mode"]
        self.distributed = steps.distributed
        self.agreed = uneven and steps.distributed  # on every batch (_AgreedBatches)

    def run(self, dataset: Iterable[Any], max_steps: int | None, max_seconds: float | None) -> None:
        cb_params, run_context = self.cb_params, self.run_context
        one_shot = isinstance(dataset, Iterator)
        deadline = None if max_seconds is None else time.monotonic() + max_seconds
        self.max_steps, self.deadline = max_steps, deadline
        while True:
            if self._stop_now():  # e.g. a stop requested in on_train_begin
                return
            set_sampler_epoch(dataset, cb_params.cur_epoch_num)  # the coming pass, 0-based
            it = iter(dataset)
            if self.agreed:
                it = _AgreedBatches(it, self.commits)
            first = next(it, _END)
            if first is _END:
                cb_params.bad_records = _bad_records(dataset)
                return  # an empty pass: the stream (or the data) has ended
            cb_params.cur_epoch_num += 1
            with self.manager.phase(run_context, "on_train_epoch_begin", "on_train_epoch_end"):
                ended = self._epoch(first, it)
                self._refresh_window(force=True)
                cb_params.bad_records = _bad_records(dataset)
            if not ended or one_shot or self._stop_now():
                return

    def _epoch(self, first: Any, it: Iterator[Any]) -> bool:
        """Units until the pass ends (True) or a stop condition holds (False)."""
        cb_params, loop = self.cb_params, self.steps
        step, stop_requested = loop.step, loop.stop_requested
        window, window_inputs, sink = self.window, self.window_inputs, self.sink
        source = cb_params["train_dataset"]
        counts_bad = _bad_records(source) is not None
        max_steps, unit = self.max_steps, self.unit
        after_step = self.commits.after_step
        limited = max_steps is not None or self.deadline is not None
        batch = first
        # item access, not attributes: CallbackParams.__getattr__ is Python-level, and this
        # loop's own cost is what the overhead benchmark measures
        while True:
            limit = unit
            if max_steps is not None:
                limit = min(unit, max_steps - cb_params["cur_step_num"])
            if not sink:
                cb_params["cur_step_num"] += 1
            loop.step_begin()
            steps = 0
            while True:
                out = step(batch)
                steps += 1
                if window is not None and window_inputs is not None:
                    window.add(*window_inputs(out))
                if steps >= limit or stop_requested():
                    batch = None
                    break
                batch = next(it, _END)
                if batch is _END:
                    break
            if sink:
                cb_params["cur_step_num"] += steps
            if window is not None:
                self._refresh_window(force=False)
            if counts_bad:
                cb_params["bad_records"] = _bad_records(source)
            loop.step_end()
            after_step()
            if batch is _END:
                return True
            if stop_requested() or (limited and self._should_stop()):
                return False
            batch = next(it, _END)
            if batch is _END:
                return True

    def _should_stop(self) -> bool:
        """Whether to stop after this unit. Under a process group only what every rank sees
        at the same step stops it here (``max_steps``): a rank's own request or deadline is
        a stop request that takes effect when the ranks agree (``StepLoop.stop_requested``,
        ``_stop_now``), so no rank leaves a collective waiting."""
        run_context = self.run_context
        if self.max_steps is not None and self.cb_params.cur_step_num >= self.max_steps:
            run_context.request_stop("max_steps")  # the first request's reason is kept
            return True
        if self.deadline is not None and time.monotonic() >= self.deadline:
            run_context.request_stop("max_seconds")
        return not self.distributed and run_context.get_stop_requested()

    def _stop_now(self) -> bool:
        """``_should_stop`` at a pass boundary, where the ranks also agree (one collective)."""
        return self._should_stop() or (self.distributed and self.steps.epoch_stop())

    def _refresh_window(self, force: bool) -> None:
        window = self.window
        if window is None or not (force or window.due(self.cb_params.cur_step_num)):
            return
        results = window.compute()
        if results:
            self.cb_params.window_metrics = dict(results)
            self.cb_params.eval_results = dict(results)


class _AgreedBatches:
    """A rank's batches while every rank has one: the ranks agree on each (one all-reduce),
    and all end the pass at the first rank whose stream has ended. A batch another rank read
    meanwhile is not trained, nor acknowledged to a resumable source."""

    def __init__(self, it: Iterator[Any], commits: StreamCommits) -> None:
        self._it, self._commits = it, commits

    def __iter__(self) -> _AgreedBatches:
        return self

    def __next__(self) -> Any:
        marks = self._commits.marks()
        batch = next(self._it, _END)
        if any_rank(batch is _END):
            if batch is not _END:
                self._commits.unread(marks)
            raise StopIteration
        return batch


def _online_fields(
    source: Any,
    max_steps: int | None,
    max_seconds: float | None,
    window: WindowedMetrics | None,
    metric_window: int,
) -> dict[str, Any]:
    """The cb_params fields ``online_train`` adds to those of ``Model.train``."""
    return {
        "max_steps": max_steps,
        "max_seconds": max_seconds,
        "metric_window": metric_window if window is not None else None,
        "window_metrics": {},
        "eval_results": {},
        "bad_records": _bad_records(source),
    }


def _bad_records(source: Any) -> int | None:
    """The source's count of skipped bad records, when it keeps one (trainledger.data)."""
    value = getattr(source, "bad_records", None)
    return value if isinstance(value, int) else None
