"""``RunRecorder``: trainledger's lineage and summaries for a loop trainledger does not run.

Every integration (``track``, Lightning, Transformers) feeds one recorder with what its host
knows; the recorder keeps a ``cb_params`` of the fields ``Model`` would set and drives the very
``TrainLineage`` / ``EvalLineage`` callbacks the native loop uses. So a run recorded through an
integration has the same lineage fields, computed by the same code, as a native run, and a fix
to the lineage callbacks reaches every host at once.

Scalars go to a ``SummaryRecord`` on the run directory (TensorBoard event files), opened on the
first value so a run that logs nothing gets no event file. TensorBoard's HParams dashboard gets
the run's hyper-parameters (user fields plus lineage's optimizer, learning rate, network, loss
function, batch size, epochs) when it starts and its status when it ends; its metric values are
the last points of the run's scalars (``eval/<metric>``).
"""

from __future__ import annotations

import json
import math
import numbers
import os
from collections.abc import Mapping
from typing import Any

from trainledger.callbacks import EvalLineage, HParamsSession, TrainLineage
from trainledger.lineage import distributed_info
from trainledger.run import CallbackParams, RunContext, finish_uploads
from trainledger.storage import writable_dir
from trainledger.summary import SummaryRecord
from trainledger.values import scalar_of

__all__ = ["RunRecorder", "flat_hparams"]

_INT32_MAX = 2**31 - 1


def flat_hparams(hparams: Mapping[str, Any] | None, prefix: str = "") -> dict[str, Any]:
    """Hyper-parameters as lineage's ``user_defined`` accepts them: a flat str -> int/float/str.

    Nested mappings are flattened with "." (``{"opt": {"lr": 1}}`` -> ``opt.lr``), bools become
    0/1, ints beyond int32 become floats, None is left out, and anything else (lists, enums,
    classes) is kept as its JSON text or ``str()``, so no value is lost and none raises.
    """
    out: dict[str, Any] = {}
    for key, value in (hparams or {}).items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            out.update(flat_hparams(value, f"{name}."))
        elif value is None:
            continue
        elif isinstance(value, bool):
            out[name] = int(value)
        elif isinstance(value, numbers.Integral):
            out[name] = int(value) if abs(int(value)) <= _INT32_MAX else float(value)
        elif isinstance(value, numbers.Real):
            out[name] = float(value)
        elif isinstance(value, str):
            out[name] = value
        else:
            enum_value = getattr(value, "value", None)
            if isinstance(enum_value, str):
                out[name] = enum_value
                continue
            try:
                out[name] = json.dumps(value)
            except (TypeError, ValueError):
                out[name] = str(value)
    return out


class RunRecorder:
    """The lineage and summaries of one run, fed by a host's own hooks.

    Args:
        run_dir: the run directory (created if missing).
        user_defined_info: flat hyper-parameters and user fields (see ``flat_hparams``).
        raise_exception: raise when recording fails, or log and let training go on (default).
        write: False on ranks that must not write (the host decides; default: rank 0 only).

    The host sets fields with ``update(**fields)`` (the cb_params names of ``Model``:
    ``network``, ``optimizer``, ``loss_fn``, ``lr_scheduler``, ``epoch_num``, ``train_dataset``,
    ``batch_size``, ``seed``, ``cur_step_num``, ``cur_epoch_num``, ``net_outputs`` ...) and calls
    ``begin``, ``scalars``, ``evaluation``, ``checkpoint``, ``epoch_end`` and ``end``.
    """

    def __init__(
        self,
        run_dir: str | os.PathLike[str],
        *,
        user_defined_info: Mapping[str, Any] | None = None,
        raise_exception: bool = False,
        write: bool | None = None,
    ) -> None:
        self.run_dir = os.path.abspath(writable_dir(run_dir, "run_dir"))
        self.writes = distributed_info()[0] == 0 if write is None else bool(write)
        self.params = CallbackParams(
            network=None,
            optimizer=None,
            loss_fn=None,
            lr_scheduler=None,
            epoch_num=None,
            cur_epoch_num=0,
            cur_step_num=0,
            batch_num=None,
            net_outputs=None,
            train_dataset=None,
            valid_dataset=None,
            list_callback=[],
            mode="train",
            latest_ckpt_file=None,
            metrics={},
            exception=None,
            stop_reason=None,
        )
        self._context = RunContext(self.params)
        info = flat_hparams(user_defined_info)
        self._train = TrainLineage(self.run_dir, raise_exception, info, all_ranks=True)
        self._eval = EvalLineage(self.run_dir, raise_exception, all_ranks=True)
        self._session = HParamsSession(self.run_dir, info, live=True)
        self._summary: SummaryRecord | None = None
        self._final_metrics: dict[str, float] = {}
        self.began = False
        self.ended = False

    # --- fields ---------------------------------------------------------------------------
    def update(self, **fields: Any) -> None:
        """Set cb_params fields (None values leave a field as it was)."""
        self.params.update({k: v for k, v in fields.items() if v is not None})

    def add_user_info(self, info: Mapping[str, Any]) -> None:
        """More hyper-parameters / user fields, written with the next lineage record."""
        flat = flat_hparams(info)
        if flat:
            self._session.user_hparams.update(flat)
            self._train.update_user_defined_info(flat)

    @property
    def final_metrics(self) -> dict[str, float]:
        """The last value of each evaluation metric recorded so far."""
        return dict(self._final_metrics)

    # --- events ---------------------------------------------------------------------------
    def begin(self) -> None:
        """The run starts: status "running", the train dataset graph, the initial lr."""
        if self.began:
            return
        self.began = True
        if self.writes:
            self._train.on_train_begin(self._context)
            self._session.on_train_begin(self._context)

    def scalars(self, step: int, values: Mapping[str, Any]) -> None:
        """Write ``{tag: number}`` as TensorBoard scalars at ``step``; non-numbers are skipped.

        A "loss" value also becomes the run's latest loss (lineage's ``algorithm.loss``).
        """
        rows: list[tuple[str, float]] = []
        for key, raw in values.items():
            value = scalar_of(raw)
            if value is not None:
                rows.append((str(key), value))
        if not rows:
            return
        self.params["cur_step_num"] = max(int(step), int(self.params.get("cur_step_num") or 0))
        for tag, value in rows:
            if tag == "loss" and math.isfinite(value):
                self.params["net_outputs"] = value
        if not self.writes:
            return
        if self._summary is None:
            self._summary = SummaryRecord(self.run_dir)
        self._summary.record_scalars(int(step), rows)

    def evaluation(self, metrics: Mapping[str, Any], step: int | None = None) -> None:
        """Record evaluation metrics into lineage (and as ``eval/<name>`` scalars)."""
        clean: dict[str, float] = {}
        for key, raw in metrics.items():
            value = scalar_of(raw)
            if value is not None:
                clean[str(key)] = value
        if not clean:
            return
        self._final_metrics.update(clean)
        if step is not None:
            self.params["cur_step_num"] = int(step)
        self.params["metrics"] = clean
        if self.writes:
            self._eval.on_eval_end(self._context)
            self.scalars(
                int(self.params["cur_step_num"]), {f"eval/{k}": v for k, v in clean.items()}
            )

    def checkpoint(self, path: str | os.PathLike[str], step: int | None = None) -> None:
        """A checkpoint file the host wrote; the newest becomes the lineage's model path.
        ``step``: the global step its weights are of, where the host knows it (a best-model
        file written earlier is not of the current step)."""
        self.params["latest_ckpt_file"] = os.path.abspath(os.fspath(path))
        self.params["last_save_ckpt_step"] = int(step) if step is not None else 0

    def epoch_end(self, epochs_done: int | None = None) -> None:
        """A progress snapshot (steps, epochs, checkpoints so far)."""
        if epochs_done is not None:
            self.params["cur_epoch_num"] = int(epochs_done)
        if self.writes and self.began:
            self._train.on_train_epoch_end(self._context)

    def end(self, exception: BaseException | None = None, stop_reason: str | None = None) -> None:
        """The run ends: train lineage and the final status ("failed" with an exception,
        "stopped" for Ctrl-C or a requested stop, else "finished"); closes the summaries and,
        for a run in ``s3://``, uploads it (``ObjectStoreError`` when that fails). Each rank
        uploads what it wrote; no barrier: the trainers end their ranks themselves."""
        if self.ended:
            return
        self.ended = True
        self.params["exception"] = exception
        self.params["stop_reason"] = stop_reason or ("error" if exception else "completed")
        try:
            if self.writes:
                if not self.began:
                    self.begin()
                self._train.on_train_end(self._context)
                self._train.__exit__(None, exception, None)
        finally:
            self.close()
        if self.writes:  # after the summary file is closed (see HParamsSession)
            self._session.on_train_end(self._context)
            self._session.finish()
        finish_uploads(ok=exception is None)

    def close(self) -> None:
        """Flush and close the summaries (idempotent)."""
        summary, self._summary = self._summary, None
        if summary is not None:
            summary.close()
