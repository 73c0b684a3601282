"""``ModelCheckpoint``: save the network and optimizer during training, keep what the config says.

The callback only decides *when* (``policy.should_save``) and gathers *what* (network, optimizer,
epoch/step, append_info); writing is the saver's job (sync, thread or process) and deleting is
the ``CheckpointManager``'s, which runs only after the new file is committed.

``cb_params.latest_ckpt_file`` (absolute) and ``last_save_ckpt_step`` name only complete files:
with an async saver they are published once the background write has committed. Put
``ModelCheckpoint`` before ``TrainLineage`` in the callback list: the lineage callback reads them
at train end, after the final save.

Under torch.distributed: with ``integrated_save=True`` (the default) rank 0 writes the full
state (a DDP network's, unwrapped, so it loads on any world size) and applies retention; the
other ranks write nothing. With ``integrated_save=False`` every rank writes its shard of a
sharded checkpoint directory (``checkpoint/sharded.py``), synchronously, at the same steps
(so ``save_checkpoint_seconds`` is refused there: ranks' clocks would disagree). A barrier at
train end makes sure no rank goes on (or reads a checkpoint) before rank 0 has committed.
Resume from either form with ``load_distributed_checkpoint``.

A non-finite training loss: no checkpoint is taken at or after its step (MindSpore saves
regardless): its parameters were updated from a NaN/inf loss. On the CPU the loss is read at
each save. On a GPU it is read ``LAG`` steps late (``cb_params.loss_readout``,
``run/loss_readout.py``), so a save may happen after the bad step before anyone knows; such a
checkpoint is deleted when its write commits or when training ends, never published, and no
save (breakpoint included) is made once the bad step is known.

Resume: when ``cb_params.initial_epoch > 0`` (or ``resume_from`` is given) the run keeps its
prefix (no ``_N`` suffix), adopts the prefix's files into retention and never deletes the file
it resumed from (the newest file of the prefix, or ``resume_from``).

Identity: with a ``TrainLineage`` (or ``SummaryCollector``) in the same training, each header
carries the run's ``run_uid`` and ``run_dir`` (``cb_params.run_uid``, ``cb_params.lineage_dir``),
so deleting that run may delete the file even when it lies outside the run's directory, and no
other run's deletion ever does (a lineage can copy another run's uid, never its directory).
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from trainledger.callbacks.checkpoint_guard import NonFiniteGuard
from trainledger.checkpoint import (
    CheckpointConfig,
    CheckpointManager,
    SyncSaver,
    build_payload,
    full_state,
    is_fsdp,
    latest_checkpoint,
    make_saver,
    next_free_prefix,
    read_container,
    read_info,
    resume_prefix,
    save_sharded,
    should_save,
    unwrap_network,
)
from trainledger.lineage import is_run_uid
from trainledger.run import Callback, RunContext, barrier, monitored_value, rank_and_world
from trainledger.storage import sweep_temp_files, writable_dir
from trainledger.values import scalar_of

__all__ = ["ModelCheckpoint"]

_log = logging.getLogger(__name__)


class ModelCheckpoint(Callback):
    """Save checkpoints ``<prefix>-<epoch>_<step_in_epoch>.ckpt`` into ``directory``.

    Args:
        prefix: file name prefix (no "/"). If a *new* run finds files of this prefix, it uses
            ``<prefix>_<N>`` with the next free N (MindSpore's rule).
        directory: created if missing; default the working directory.
        config: a ``CheckpointConfig`` (default: every step, keep 5).
        resume_from: the checkpoint this run resumed from; implied by ``initial_epoch > 0``.
    """

    #: tells ``RecModel.online_train`` to commit stream offsets at checkpoints only
    writes_checkpoints = True

    def __init__(
        self,
        prefix: str = "CKP",
        directory: str | os.PathLike[str] | None = None,
        config: CheckpointConfig | None = None,
        *,
        resume_from: str | os.PathLike[str] | None = None,
    ) -> None:
        if not isinstance(prefix, str) or not prefix:
            raise TypeError(f"prefix expected a non-empty str, received: {prefix!r}")
        if "/" in prefix or os.sep in prefix:
            raise ValueError(f"prefix expected a name without '/', received: {prefix!r}")
        if config is None:
            config = CheckpointConfig()
        if not isinstance(config, CheckpointConfig):
            raise TypeError(
                f"config expected a CheckpointConfig, received: {type(config).__name__}"
            )
        self._config = config
        self._base_prefix = prefix
        self._prefix = prefix
        where = writable_dir(directory, "directory") if directory is not None else os.getcwd()
        self._directory = Path(where).absolute()
        self._resume_from = Path(resume_from).absolute() if resume_from is not None else None
        self._latest: str | None = None
        self._manager: CheckpointManager | None = None
        self._saver: Any = None
        self._inflight: tuple[int, float | None] | None = None  # (step, score) being written
        self._cb: Any = None
        self._last_step = 0
        self._last_time = 0.0
        self._pending = False
        self._last_eval: Any = None
        self._rank, self._world = 0, 1
        self._guard = NonFiniteGuard(None)  # this run's files after a NaN/inf loss

    # --- public state -------------------------------------------------------------------
    @property
    def latest_ckpt_file_name(self) -> str | None:
        """Absolute path of the newest complete checkpoint this callback wrote (or None)."""
        return self._latest

    @property
    def prefix(self) -> str:
        """The prefix in use (``<prefix>_<N>`` when earlier files existed)."""
        return self._prefix

    @property
    def directory(self) -> Path:
        return self._directory

    @property
    def manager(self) -> CheckpointManager | None:
        return self._manager

    # --- hooks --------------------------------------------------------------------------
    def on_train_begin(self, run_context: RunContext) -> None:
        cb = run_context.original_args()
        cfg = self._config
        self._rank, self._world = rank_and_world()
        if self._collective(self._network(cb)) and cfg.save_checkpoint_seconds:
            raise ValueError(
                "ModelCheckpoint of a sharded save or an FSDP network expected "
                "save_checkpoint_steps, received: save_checkpoint_seconds="
                f"{cfg.save_checkpoint_seconds} (every rank must save at the same step)"
            )
        self._directory.mkdir(parents=True, exist_ok=True)
        resume = self._resume_from is not None or int(cb.get("initial_epoch") or 0) > 0
        if resume:
            self._prefix = resume_prefix(self._directory, self._base_prefix, self._resume_from)
        else:
            self._prefix = next_free_prefix(self._directory, self._base_prefix)
        policy = cfg.get_checkpoint_policy()
        manager = CheckpointManager(
            self._directory,
            self._prefix,
            policy["keep_checkpoint_max"],
            policy["keep_checkpoint_per_n_minutes"],
            cfg.keep_best_max,
            cfg.mode,
        )
        # temp files of dead writers of this prefix family (a crashed earlier run included)
        swept = sweep_temp_files(self._directory, self._base_prefix)
        if swept:
            _log.info("removed %d stale temp file(s) of %s", len(swept), self._prefix)
        if resume:
            origin = self._resume_from or latest_checkpoint(self._directory, self._prefix)
            if origin is not None and cfg.crc_check:
                read_container(origin, cfg.enc_key, cfg.enc_mode, crc_check=True)
            manager.adopt_existing(self._score_of if cfg.monitor else None, pinned=origin)
        self._manager = manager
        self._last_step = int(cb.get("cur_step_num") or 0)
        self._last_time = time.time()
        self._pending = False
        self._last_eval = cb.get("eval_results")
        self._saver = make_saver(cfg.async_save if not self._sharded else False)
        self._inflight = None
        self._cb = cb
        self._guard = NonFiniteGuard(cb.get("loss_readout"))
        barrier()  # every rank chose the prefix before rank 0 writes a file of it

    def on_train_step_end(self, run_context: RunContext) -> None:
        cb = run_context.original_args()
        cfg = self._config
        step = int(cb.cur_step_num)
        if not should_save(
            step,
            self._last_step,
            time.time(),
            self._last_time,
            cfg.save_checkpoint_steps,
            cfg.save_checkpoint_seconds,
        ):
            return
        if cfg.monitor and self._at_epoch_end(cb):
            self._pending = True  # save at on_train_epoch_end, scored by this epoch's evaluation
            return
        self._save(cb)

    def on_train_epoch_end(self, run_context: RunContext) -> None:
        cb = run_context.original_args()
        if not self._config.monitor or self._manager is None:
            return
        score = self._score(cb)
        evaluation = cb.get("eval_results")
        # a new evaluation that measured the monitor (not a training-loss fallback)
        fresh = (
            isinstance(evaluation, Mapping)
            and self._config.monitor in evaluation
            and evaluation is not self._last_eval
        )
        self._last_eval = evaluation
        step = int(cb.cur_step_num)
        if self._pending or (
            fresh and step > self._last_step and self._manager.would_be_best(score)
        ):
            self._pending = False
            self._save(cb)

    def on_train_end(self, run_context: RunContext) -> None:
        cb = run_context.original_args()
        if self._saver is None:
            return
        if self._guard.readout is not None:
            self._guard.readout.read_all()  # the last steps' losses decide what may be kept
        try:
            if cb.get("exception") is not None:
                if self._config.exception_save:
                    try:
                        self._wait_commit()
                    except Exception as exc:  # the breakpoint matters more now
                        _log.error("background checkpoint save failed: %s", exc)
                    self._save(cb, breakpoint=True, sync=True)
            elif self._pending or int(cb.get("cur_step_num") or 0) > self._last_step:
                self._save(cb)
            self._wait_commit()
            self._drop_after_bad_loss(cb)
            if cb.get("exception") is None:
                barrier()  # rank 0's last checkpoint is complete before any rank goes on
        finally:
            saver, self._saver = self._saver, None
            self._cb = None  # do not keep the run (network, optimizer) alive
            saver.close()

    def __exit__(self, *exc_info: object) -> None:
        if self._saver is not None:  # the run ended without on_train_end
            saver, self._saver = self._saver, None
            try:
                saver.close()
            except Exception as exc:
                _log.error("background checkpoint save failed: %s", exc)

    # --- saving -------------------------------------------------------------------------
    @property
    def _sharded(self) -> bool:
        return self._world > 1 and not self._config.integrated_save

    def _collective(self, network: Any) -> bool:
        """Whether a save needs every rank: a sharded save, or gathering an FSDP state."""
        return self._sharded or (self._world > 1 and is_fsdp(network))

    def _network(self, cb: Any) -> Any:
        cfg = self._config
        network = cfg.saved_network if cfg.saved_network is not None else cb.get("network")
        return network if network is not None else cb.get("train_network")

    def _save(self, cb: Any, breakpoint: bool = False, sync: bool = False) -> None:
        if self._manager is None or self._saver is None:
            raise RuntimeError("ModelCheckpoint saved before on_train_begin")
        bad = self._guard.bad_step(cb)
        if bad is not None and int(cb.get("cur_step_num") or 0) >= bad:
            return  # the parameters were updated from a non-finite loss: never saved
        network = self._network(cb)
        collective = self._collective(network)
        if self._rank != 0 and not collective:
            self._last_step = int(cb.get("cur_step_num") or 0)  # rank 0 writes the full state
            self._last_time = time.time()
            return
        if breakpoint and collective:
            _log.error("no breakpoint checkpoint: saving it needs every rank, and one failed")
            return
        self._wait_commit()  # one save in flight; a background error raises here
        cfg = self._config
        epoch = int(cb.get("cur_epoch_num") or 1)
        step = int(cb.get("cur_step_num") or 0)
        batch_num = int(cb.get("batch_num") or 0)
        in_epoch = step - (epoch - 1) * batch_num if batch_num else step
        if batch_num and not 1 <= in_epoch <= batch_num:
            in_epoch = (step - 1) % batch_num + 1 if step else 0
        path = self._manager.file_path(epoch, in_epoch, breakpoint)
        score = self._score(cb) if cfg.monitor and not breakpoint else None
        append: dict[str, Any] = {}
        for element in cfg.append_info:
            if element == "epoch_num":
                append["epoch_num"] = epoch
            elif element == "step_num":
                append["step_num"] = step
            else:
                append.update(element)
        info: dict[str, Any] = {
            "epoch": epoch,
            "step": step,
            "step_in_epoch": in_epoch,
            "batch_num": batch_num,
            "prefix": self._prefix,
            "breakpoint": breakpoint,
        }
        if score is not None:
            info["monitor"] = {"name": cfg.monitor, "mode": cfg.mode, "value": score}
        if is_run_uid(cb.get("run_uid")):  # TrainLineage's: only the run's own files are deleted
            info["run_uid"] = cb["run_uid"]
            if isinstance(cb.get("lineage_dir"), str):
                info["run_dir"] = cb["lineage_dir"]
        if self._sharded:
            info["append_info"] = append
            save_sharded(path, network, cb.get("optimizer"), info)
            if self._rank == 0:
                self._commit(path, step, score)
            else:
                self._latest = str(path)
            self._last_step, self._last_time = step, time.time()
            return
        if collective:  # FSDP: every rank gathers, rank 0 writes
            model_state, optim_state = full_state(network, cb.get("optimizer"))
            if self._rank != 0:
                self._last_step, self._last_time = step, time.time()
                return
            info["optimizer_keys"] = "names"
            optimizer = _StateOf(optim_state) if optim_state is not None else None
            named, header = build_payload(model_state, optimizer, append, info)
        else:
            named, header = build_payload(
                unwrap_network(network), cb.get("optimizer"), append, info
            )
        if sync or isinstance(self._saver, SyncSaver):
            SyncSaver().save(path, named, header, cfg.enc_key, cfg.enc_mode)
            self._commit(path, step, score)
        else:
            self._saver.save(path, named, header, cfg.enc_key, cfg.enc_mode)
            self._inflight = (step, score)
        self._last_step = step
        self._last_time = time.time()

    def _wait_commit(self) -> None:
        """Wait for the save in flight; commit it, or raise its error."""
        meta, self._inflight = self._inflight, None
        path = self._saver.wait()
        if path is not None and meta is not None:
            self._commit(path, *meta)

    def _drop_after_bad_loss(self, cb: Any) -> None:
        """The guard's deletions; ``latest_ckpt_file`` then names the newest file kept."""
        if self._manager is None:
            return
        if self._guard.drop_after_bad_loss(cb, self._manager):
            newest = self._guard.kept[-1] if self._guard.kept else None
            self._latest = str(newest[1]) if newest else None
            cb.latest_ckpt_file = self._latest
            cb.last_save_ckpt_step = newest[0] if newest else 0

    def _commit(self, path: Path, step: int, score: float | None) -> None:
        """A file is on disk: publish it, track it, then apply retention (never before); a
        file taken at or after a known non-finite loss is deleted instead."""
        bad = self._guard.bad_step(self._cb)
        if bad is not None and step >= bad and self._manager is not None:
            self._manager.remove_ckpoint_file(path)
            return
        self._guard.kept.append((step, path))
        self._latest = str(path)
        if self._cb is not None:  # what lineage callbacks read: only complete files
            self._cb.latest_ckpt_file = str(path)
            self._cb.last_save_ckpt_step = step
        if self._manager is not None:
            self._manager.add(path, score)
            self._manager.apply()

    # --- monitor ------------------------------------------------------------------------
    def _at_epoch_end(self, cb: Any) -> bool:
        batch_num = int(cb.get("batch_num") or 0)
        epoch = int(cb.get("cur_epoch_num") or 1)
        return bool(batch_num) and int(cb.cur_step_num) >= epoch * batch_num

    def _score(self, cb: Any) -> float | None:
        """The monitored value now (``run.monitored_value``: ``"loss"`` is the training
        loss, other names evaluation results)."""
        return monitored_value(self._config.monitor, cb.get("eval_results"), cb.get("net_outputs"))

    def _score_of(self, path: Path) -> float | None:
        monitor = read_info(path, self._config.enc_key, self._config.enc_mode).get("monitor")
        if isinstance(monitor, dict) and monitor.get("name") == self._config.monitor:
            return scalar_of(monitor.get("value"))
        return None


class _StateOf:
    """An optimizer stand-in whose ``state_dict()`` is a gathered state (``build_payload``)."""

    def __init__(self, state: dict[str, Any]) -> None:
        self._state = state

    def state_dict(self) -> dict[str, Any]:
        return self._state
