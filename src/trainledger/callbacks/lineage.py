"""``TrainLineage`` and ``EvalLineage``: record what went into a run and what came out.

The callbacks read the run's ``cb_params`` (``run_context.original_args()``), turn the torch
objects into plain values with ``trainledger.lineage.analyzers``, and append ``LineageEvent``
records to the run directory through the process's shared lineage writer, so a training and an
evaluation in the same process (even in the same second) share one file and both survive.

Differences from MindInsight's callbacks, on purpose:

* the run's status is recorded: "running" from ``on_train_begin`` (so a run killed with
  SIGKILL leaves a readable record), "failed" when the error reaches us (the loop sets
  ``cb_params.exception`` before ``on_train_end``, and ``__exit__`` sees escaping errors),
  "stopped" for a requested or signalled stop (or Ctrl-C), else "finished";
* what is known at train begin (hyperparameters, network, train dataset) is written then, in
  an event kind of our own, so a running run shows them; the final train lineage wins;
* a progress snapshot (steps, epochs, checkpoints) is written at each epoch end;
* only rank 0 writes under ``torch.distributed`` (``all_ranks=True`` to change that);
* the summary record may also be a plain directory path.
"""

from __future__ import annotations

import json
import logging
import os
import time
from collections.abc import Mapping
from typing import Any

from trainledger.callbacks.lineage_base import LineageCallback
from trainledger.callbacks.lineage_weights import WeightNotes, begin_events, network_event
from trainledger.callbacks.run_sessions import (
    current_session,
    earlier_sessions,
    recorded_run,
    session_duration,
    session_start,
)
from trainledger.errors import LineageParamTypeError
from trainledger.lineage import (
    Configured,
    DatasetInfo,
    EnvironmentInfo,
    EvalValues,
    RunValues,
    TrainValues,
    analyze_dataset,
    as_int,
    configured,
    dataset_graph_event,
    distributed_info,
    environment_info,
    eval_event,
    file_size,
    loss_function_name,
    network_name,
    optimizer_name,
    run_event,
    run_status,
    run_uid,
    saved_checkpoint_of,
    torch_seed,
    train_begin_event,
    train_event,
)
from trainledger.lineage import lineage_pb2 as pb
from trainledger.run import CallbackParams, RunContext, loss_value
from trainledger.storage import public_path

__all__ = ["TrainLineage", "EvalLineage"]

_log = logging.getLogger("trainledger.lineage")


class TrainLineage(LineageCallback):
    """Collect the lineage of a training run into its run directory.

    Args:
        summary_record: a ``SummaryRecord`` (its ``log_dir`` is used) or a directory path
            (created if missing).
        raise_exception: raise when an argument is bad or collecting fails (``True``), or log
            the error and let training go on (``False``, the default, as MindInsight); with a
            bad ``summary_record`` the callback then records nothing, with a bad
            ``user_defined_info`` it records everything else.
        user_defined_info: flat dict of str -> int/float/str recorded with the lineage.
        all_ranks: under torch.distributed, let every rank write (default: rank 0 only).

    ``begin``/``on_train_begin`` records user info, the train dataset graph, a "running"
    status, and what is known of the training already (optimizer and its settings, initial
    learning rate, loss function, epochs, parallel mode, device count, batch size, network,
    train dataset path and size) in our ``train_begin`` event, which a running run is read
    with and which MindInsight skips; ``end``/``on_train_end`` records optimizer, loss
    function, network (the backbone's class when the network wraps one), learning rate,
    epochs, steps, parallel mode, device count, the real batch size, train dataset path and
    size in samples, final loss, the latest checkpoint (``{"ckpt": path}``) and its size, and
    the final status. Every record is fsynced when its phase ends.

    The loss function is ``loss_fn``, else found in the network's module tree (a
    ``WithLossCell``-style wrapper holding it as a submodule), as MindInsight searches cells.

    Raises (only with ``raise_exception=True``):
        LineageParamTypeError / LineageParamValueError: bad arguments, at construction.
        LineageError: collection failed.
    """

    def __init__(
        self,
        summary_record: Any,
        raise_exception: bool = False,
        user_defined_info: Mapping[str, Any] | None = None,
        *,
        all_ranks: bool = False,
    ) -> None:
        super().__init__(summary_record, raise_exception, user_defined_info, all_ranks=all_ranks)
        self._reset()

    def _reset(self) -> None:
        self._began = False
        self._ended = False
        self._start: float | None = None
        self._first_step: int | None = None
        self._earlier: list[dict[str, Any]] = []
        self._configured: Configured | None = None  # read at train begin
        self._dataset: DatasetInfo | None = None
        self._env: EnvironmentInfo | None = None
        self._seed: int | None = None
        self._checkpoints: dict[str, int | None] = {}  # path -> the global step it holds
        self._last: CallbackParams | None = None
        self._recorded_ckpt: str | None = None
        self._uid: str | None = None
        self._weights = WeightNotes()  # checkpoints whose digests are recorded

    # --- hooks (old names; on_train_* fall back to them) ----------------------------------
    def begin(self, run_context: RunContext) -> None:
        """Record the start of training (status "running")."""
        self._guarded("begin", self._begin, run_context)

    def epoch_end(self, run_context: RunContext) -> None:
        """Record progress: steps, epochs and checkpoints so far."""
        self._guarded("epoch_end", self._epoch_end, run_context)

    def end(self, run_context: RunContext) -> None:
        """Record the train lineage and the final status."""
        self._guarded("end", self._end, run_context)

    def __exit__(self, *exc_info: object) -> None:
        """A run that began and is leaving with an error that skipped ``end`` is "failed"."""
        exc = exc_info[1] if len(exc_info) > 1 else None
        if not isinstance(exc, BaseException):
            exc = None
        params = self._last
        if not self._began or params is None:
            return None
        if not self._ended and exc is not None:
            try:
                if self._writes():
                    self._write([run_event(self._run_values(params, run_status(exc, None), exc))])
            except Exception as err:  # never mask the error that is propagating
                _log.error("TrainLineage could not record the failed run: %s", err)
            self._ended = True
        elif self._ended and saved_checkpoint_of(params) != self._recorded_ckpt:
            # A ModelCheckpoint after us in the list saved its final file in its own
            # on_train_end, after ours: record that checkpoint, once the run is over.
            self._guarded("__exit__", self._rewrite_end, RunContext(params))
        return None

    def _rewrite_end(self, params: CallbackParams) -> None:
        if not self._writes():
            return
        self._note_checkpoint(params)
        exception = params.get("exception")
        status = run_status(exception, params.get("stop_reason"))
        values = self._train_values(params)
        weights = self._weights.checkpoint_events(self._checkpoints)
        self._write(
            [*weights, train_event(values), run_event(self._run_values(params, status, exception))]
        )

    # --- bodies ---------------------------------------------------------------------------
    def _prepare(self, params: CallbackParams) -> None:
        self._reset()
        self._began = True
        self._last = params
        self._start = time.time()
        self._configured = configured(params.get("optimizer"), params.get("lr_scheduler"))
        self._dataset = analyze_dataset(params.get("train_dataset"))
        self._env = environment_info()
        seed = params.get("seed")
        self._seed = int(seed) if isinstance(seed, int) else torch_seed()
        self._first_step = (as_int(params.get("cur_step_num")) or 0) + 1  # callbacks/run_sessions
        host = self._env.hostname
        self._earlier = earlier_sessions(self._log_dir, host) if params.get("initial_epoch") else []
        # the run's identity, shared with ModelCheckpoint (it writes it in each header), and
        # the checkpoints its earlier processes saved: one run, one list
        recorded = recorded_run(self._log_dir)
        self._uid = params["run_uid"] = run_uid(recorded.get("uid"), params.get("run_uid"))
        if self._log_dir:  # where the run lives: a delete checks the header names it too
            params["lineage_dir"] = os.path.realpath(self._log_dir)
        for entry in recorded.get("checkpoints") or ():
            if isinstance(entry, dict) and isinstance(entry.get("path"), str):
                self._checkpoints[entry["path"]] = as_int(entry.get("step"))

    def _begin(self, params: CallbackParams) -> None:
        self._prepare(params)
        if not self._writes():
            return
        events = self._user_events()
        if self._dataset is not None and self._dataset.graph:
            events.append(dataset_graph_event(self._dataset.graph))
        # what is known now, so a running run has its hyperparameters (lineage/records.py)
        events.append(train_begin_event(self._train_values(params, final=False)))
        events.append(run_event(self._run_values(params, "running")))
        # the weights it starts from, for its family (callbacks/lineage_weights.py)
        events += begin_events(params)
        self._write(events)

    def _epoch_end(self, params: CallbackParams) -> None:
        if not self._began or not self._writes():
            return
        self._last = params
        self._note_checkpoint(params)
        events = self._weights.checkpoint_events(self._checkpoints)
        self._write([*events, run_event(self._run_values(params, "running"))])

    def _end(self, params: CallbackParams) -> None:
        events: list[pb.LineageEvent] = []
        if not self._began:  # a host that never called begin: record everything now
            self._prepare(params)
            if self._dataset is not None and self._dataset.graph:
                events.append(dataset_graph_event(self._dataset.graph))
        self._last = params
        self._ended = True
        if not self._writes():
            return
        self._note_checkpoint(params)
        exception = params.get("exception")
        status = run_status(exception, params.get("stop_reason"))
        events = self._user_events() + events + self._weights.checkpoint_events(self._checkpoints)
        events.append(train_event(self._train_values(params)))
        events.append(run_event(self._run_values(params, status, exception)))
        self._write(events)

    # --- values ---------------------------------------------------------------------------
    def _note_checkpoint(self, params: CallbackParams) -> None:
        path = saved_checkpoint_of(params)
        if path:
            path = os.path.abspath(path)
            # the global step ModelCheckpoint saved it at, published with latest_ckpt_file
            # (0, cb_params' default, is "none": its saves follow a step)
            step = (
                as_int(params.get("last_save_ckpt_step"))
                if params.get("latest_ckpt_file")
                else None
            )
            self._checkpoints[path] = step if step else self._checkpoints.get(path)

    def _train_values(self, params: CallbackParams, *, final: bool = True) -> TrainValues:
        """The train lineage: at the end (``final``), or what is known at train begin (no
        loss, no checkpoint: the ``train_begin`` event)."""
        ds = self._dataset or DatasetInfo()
        network = params.get("network") or params.get("train_network")
        rank_info = distributed_info()
        model_path: str | None = None
        model_size: int | None = 0  # no checkpoint: size 0, as MindSpore and MindInsight
        ckpt = None
        if final:
            ckpt = self._recorded_ckpt = saved_checkpoint_of(params)
        else:
            model_size = None  # not known yet, rather than "no checkpoint"
        if ckpt:
            ckpt = os.path.abspath(ckpt)
            model_path = json.dumps({"ckpt": public_path(ckpt)})  # s3:// when uploaded
            model_size = file_size(ckpt)
        batch_size = ds.batch_size
        if batch_size is None and isinstance(params.get("batch_size"), int):
            batch_size = params.get("batch_size")
        setup = self._configured
        if setup is None or setup.learning_rate is None:  # no optimizer when training began
            setup = configured(params.get("optimizer"), params.get("lr_scheduler"))
        return TrainValues(
            optimizer=optimizer_name(params.get("optimizer")),
            learning_rate=setup.learning_rate,
            optimizer_settings=setup.optimizer,
            scheduler_settings=setup.scheduler,
            loss_function=loss_function_name(params.get("loss_fn"), network),
            epoch=as_int(params.get("epoch_num")),
            parallel_mode=params.get("parallel_mode") or rank_info[2],
            device_num=as_int(params.get("device_number")) or rank_info[1],
            batch_size=batch_size,
            train_dataset_path=ds.path,
            train_dataset_size=ds.size,
            train_dataset_fingerprint=ds.fingerprint,
            network=network_name(network),
            loss=loss_value(params.get("net_outputs")) if final else None,
            model_path=model_path,
            model_size=model_size,
            step=as_int(params.get("cur_step_num")),
        )

    def _run_values(
        self, params: CallbackParams, status: str, exception: BaseException | None = None
    ) -> RunValues:
        env = self._env
        now = time.time()
        final = status != "running"
        error = None
        if exception is not None:
            error = f"{type(exception).__name__}: {exception}"[:2000]
        elif status == "stopped":
            error = str(params.get("stop_reason"))
        checkpoints = [(p, file_size(p), step) for p, step in self._checkpoints.items()]
        if final:
            checkpoints = [c for c in checkpoints if c[1] is not None]
        checkpoints = [(public_path(p), s, st) for p, s, st in checkpoints]  # s3:// when uploaded
        steps = (self._first_step, as_int(params.get("cur_step_num")))
        host = env.hostname if env else None
        sessions = [
            *self._earlier,
            current_session(self._start, now if final else None, steps, host),
        ]
        return RunValues(
            status=status,
            start_time=session_start(sessions, self._start),
            end_time=now if final else None,
            duration=session_duration(sessions) if final else None,
            sessions=sessions,
            total_steps=as_int(params.get("cur_step_num")),
            epochs_done=as_int(params.get("cur_epoch_num")),
            hostname=env.hostname if env else None,
            pid=env.pid if env else None,
            rank=distributed_info()[0],
            command=env.command if env else (),
            python_version=env.python_version if env else None,
            torch_version=env.torch_version if env else None,
            trainledger_version=env.trainledger_version if env else None,
            git_commit=env.git_commit if env else None,
            git_dirty=env.git_dirty if env else None,
            seed=self._seed,
            dataset_fingerprint=self._dataset.fingerprint if self._dataset else None,
            checkpoints=checkpoints,
            error=error,
            bad_records=as_int(params.get("bad_records")),
            uid=self._uid,
        )


class EvalLineage(LineageCallback):
    """Collect the lineage of an evaluation into the run directory.

    Args: as ``TrainLineage``. At the end of an evaluation (``on_eval_end``, or the old name
    ``end`` called by a host directly) it records the metrics (JSON), the validation dataset's
    path and size in samples, the step count and the user info. Training hooks do nothing, so
    one instance can sit in ``fit``'s callback list.
    """

    def __init__(
        self,
        summary_record: Any,
        raise_exception: bool = False,
        user_defined_info: Mapping[str, Any] | None = None,
        *,
        all_ranks: bool = False,
    ) -> None:
        super().__init__(summary_record, raise_exception, user_defined_info, all_ranks=all_ranks)
        self._dataset_cache: tuple[int, DatasetInfo] | None = None

    def on_train_begin(self, run_context: RunContext) -> None:
        """Nothing: evaluation lineage is written when an evaluation ends."""

    def on_train_end(self, run_context: RunContext) -> None:
        """Nothing (the old-name fallback would otherwise record an evaluation here)."""

    def on_eval_end(self, run_context: RunContext) -> None:
        self.end(run_context)

    def end(self, run_context: RunContext) -> None:
        """Record the evaluation lineage."""
        self._guarded("end", self._end, run_context)

    def _valid_dataset(self, params: CallbackParams) -> DatasetInfo:
        dataset = params.get("valid_dataset")
        if dataset is None:
            dataset = params.get("eval_dataset")
        if dataset is None:
            return DatasetInfo()
        cached = self._dataset_cache
        if cached is not None and cached[0] == id(dataset):
            return cached[1]
        info = analyze_dataset(dataset)
        self._dataset_cache = (id(dataset), info)
        return info

    def _end(self, params: CallbackParams) -> None:
        if not self._writes():
            return
        metrics = params.get("metrics")
        if not metrics:
            metrics = params.get("eval_results") or {}
        if not isinstance(metrics, Mapping):
            raise LineageParamTypeError(
                f"cb_params.metrics expected a dict, received: {type(metrics).__name__}"
            )
        ds = self._valid_dataset(params)
        values = EvalValues(
            metrics=metrics,
            valid_dataset_path=ds.path,
            valid_dataset_size=ds.size,
            valid_dataset_fingerprint=ds.fingerprint,
            step=as_int(params.get("cur_step_num")),
        )
        # what an evaluation on its own evaluated, for its family (inside a training, the
        # run's own checkpoints say it: no copy of the weights at each evaluation)
        inside_training = params.get("train_network") is not None
        network = params.get("network") or params.get("eval_network")
        weights = [] if inside_training else network_event(network, evaluated=True)
        self._write(self._user_events() + [eval_event(values), *weights])
