"""The callback protocol shared with MindSpore: ``Callback``, ``RunContext`` and ``CallbackParams``.

A callback reads a narrow context (``run_context.original_args()``), never the loop's internals,
so the same callback works in ``Model.train``, ``Model.eval``, ``Model.fit`` and
``RecModel.online_train``.
"""

from __future__ import annotations

from typing import Any

__all__ = ["Callback", "CallbackParams", "RunContext", "HOOKS", "TRAIN_TO_OLD"]

# Every hook the hosts call, in the order of one training run's phases.
HOOKS: tuple[str, ...] = (
    "on_train_begin",
    "on_train_epoch_begin",
    "on_train_step_begin",
    "on_train_step_end",
    "on_train_epoch_end",
    "on_train_end",
    "on_eval_begin",
    "on_eval_epoch_begin",
    "on_eval_step_begin",
    "on_eval_step_end",
    "on_eval_epoch_end",
    "on_eval_end",
)

# New train hook -> the MindSpore 1.x name it falls back to.
TRAIN_TO_OLD: dict[str, str] = {
    "on_train_begin": "begin",
    "on_train_epoch_begin": "epoch_begin",
    "on_train_step_begin": "step_begin",
    "on_train_step_end": "step_end",
    "on_train_epoch_end": "epoch_end",
    "on_train_end": "end",
}


class CallbackParams(dict):  # type: ignore[type-arg]
    """The cb_params object: a dict whose keys are also attributes.

    MindSpore callbacks read ``cb_params.cur_step_num``; a missing key raises
    ``AttributeError`` naming the key (not ``KeyError``), so ``getattr(cb_params, k, default)``
    and ``hasattr`` behave as users expect.
    """

    def __getattr__(self, key: str) -> Any:
        try:
            return self[key]
        except KeyError:
            raise AttributeError(
                f"cb_params has no field {key!r}; available: {', '.join(sorted(self))}"
            ) from None

    def __setattr__(self, key: str, value: Any) -> None:
        self[key] = value

    def __delattr__(self, key: str) -> None:
        try:
            del self[key]
        except KeyError:
            raise AttributeError(f"cb_params has no field {key!r}") from None


class RunContext:
    """What a callback sees of a run: its parameters and a way to ask the loop to stop."""

    def __init__(self, original_args: dict[str, Any]) -> None:
        if not isinstance(original_args, dict):
            raise TypeError(
                "RunContext expects a dict of run parameters (cb_params); "
                f"received {type(original_args).__name__}"
            )
        if not isinstance(original_args, CallbackParams):
            original_args = CallbackParams(original_args)
        self._original_args: CallbackParams = original_args
        #: whether a stop was requested: ``get_stop_requested()``, read directly by the run
        #: package's step loop (``run/steploop.py``): the call costs 40 ns a step more than
        #: the attribute (timeit, Python 3.11), against 0.3-3 µs of the host's whole per-step
        #: cost (BENCHMARKS.md); callbacks use the method (MindSpore's API)
        self._stop_requested = False
        self._stop_reason: str | None = None

    def original_args(self) -> CallbackParams:
        """The run's cb_params; callbacks may read fields and add their own."""
        return self._original_args

    def request_stop(self, reason: str = "requested") -> None:
        """Ask the loop to stop after the current step; end hooks still run.

        ``reason`` is an extension over MindSpore (which takes no argument): the host copies the
        first reason given into ``cb_params.stop_reason`` ("requested" from a callback, "signal"
        from SIGINT/SIGTERM), so lineage can tell an early stop from an interrupted run.
        """
        self._stop_requested = True
        if self._stop_reason is None:
            self._stop_reason = reason

    def get_stop_requested(self) -> bool:
        """Whether a stop was requested."""
        return self._stop_requested

    @property
    def stop_reason(self) -> str | None:
        """The reason of the first stop request, or None when no stop was requested."""
        return self._stop_reason


class Callback:
    """Base class of callbacks; every hook does nothing by default.

    Hooks are named ``on_<train|eval>_<begin|end>`` and
    ``on_<train|eval>_<epoch|step>_<begin|end>``.
    Each train hook calls its MindSpore 1.x counterpart by default (``on_train_begin`` ->
    ``begin``, ``on_train_epoch_begin`` -> ``epoch_begin``, ``on_train_step_begin`` ->
    ``step_begin``, ``on_train_step_end`` -> ``step_end``, ``on_train_epoch_end`` ->
    ``epoch_end``, ``on_train_end`` -> ``end``), so a callback written with the old names works
    unchanged. Eval hooks do not fall back: an old-style callback would otherwise count eval
    steps as training steps inside ``fit``.

    A callback is a context manager: the host enters every callback before the run and exits it
    after, even when the run fails, so resources are released.

    ``rank_active`` (an extension): a callback that sets it False (e.g. a ``SummaryCollector``
    on a rank other than 0 under torch.distributed) is neither entered nor called.

    ``watches_steps`` (an extension): a callback that reads cb_params' step fields
    (``cur_step_num``, ``net_outputs``, ``train_dataset_element``) while steps run, outside its
    hooks (``ProgressBar``'s drawing thread), sets it True: the loop then keeps them current at
    every step, as it does when some callback has a step hook. Without either, the loop writes
    them once, at the epoch's end.

    ``next_step_end`` (an extension): see the property.
    """

    rank_active: bool = True
    watches_steps: bool = False

    @property
    def next_step_end(self) -> float | None:
        """None (the default): call ``on_train_step_end`` at every step.

        A callback whose step hook, at most steps, only checks that the loss is a finite float
        (``LossMonitor``: it prints every N steps) returns the ``cur_step_num`` at which it next
        needs the hook (``math.inf``: never). A loop that reads each step's loss itself
        (``Model``'s inline CPU step, where a Python call costs a microsecond of a small step)
        then skips the hook at the other steps whose loss is a finite float; other loops call
        it at every step. Read once before the run's steps and after each call of the hook.
        """
        return None

    def __enter__(self) -> Callback:
        return self

    def __exit__(self, *exc_info: object) -> None:
        return None

    # --- MindSpore 1.x names -------------------------------------------------------------
    def begin(self, run_context: RunContext) -> None:
        """Called once before training."""

    def epoch_begin(self, run_context: RunContext) -> None:
        """Called before each training epoch."""

    def step_begin(self, run_context: RunContext) -> None:
        """Called before each training step (or sink unit)."""

    def step_end(self, run_context: RunContext) -> None:
        """Called after each training step (or sink unit)."""

    def epoch_end(self, run_context: RunContext) -> None:
        """Called after each training epoch."""

    def end(self, run_context: RunContext) -> None:
        """Called once after training."""

    # --- train hooks ---------------------------------------------------------------------
    def on_train_begin(self, run_context: RunContext) -> None:
        self.begin(run_context)

    def on_train_epoch_begin(self, run_context: RunContext) -> None:
        self.epoch_begin(run_context)

    def on_train_step_begin(self, run_context: RunContext) -> None:
        self.step_begin(run_context)

    def on_train_step_end(self, run_context: RunContext) -> None:
        self.step_end(run_context)

    def on_train_epoch_end(self, run_context: RunContext) -> None:
        self.epoch_end(run_context)

    def on_train_end(self, run_context: RunContext) -> None:
        self.end(run_context)

    # --- eval hooks ----------------------------------------------------------------------
    def on_eval_begin(self, run_context: RunContext) -> None:
        """Called once before evaluation."""

    def on_eval_epoch_begin(self, run_context: RunContext) -> None:
        """Called before the evaluation pass."""

    def on_eval_step_begin(self, run_context: RunContext) -> None:
        """Called before each evaluation step."""

    def on_eval_step_end(self, run_context: RunContext) -> None:
        """Called after each evaluation step."""

    def on_eval_epoch_end(self, run_context: RunContext) -> None:
        """Called after the evaluation pass."""

    def on_eval_end(self, run_context: RunContext) -> None:
        """Called once after evaluation."""
