"""``CallbackManager``: enters the callbacks, fans hooks out, and keeps end hooks paired.

Error policy (docs/development.md, convention 8), chosen so that writers always flush:

* A callback that raises ``Exception`` in a hook becomes a ``CallbackError`` naming the
  callback class and the hook, raised ``from`` the original error.
* Before it propagates, the matching ``*_end`` hooks of the *other* callbacks still run: a
  failure in ``on_train_step_end`` gives the others ``on_train_epoch_end`` and ``on_train_end``
  (``on_train_step_end`` is given only when the step itself completed: a step that failed has
  no outputs to report). The callback that failed gets no more hooks. When an end hook
  (``call_all``) fails, the callbacks after it in the list still get that same end hook.
* Before those error-path end hooks run, ``cb_params.exception`` is set to the error and
  ``cb_params.stop_reason`` to ``"error"``, so lineage can record a failed run and a checkpoint
  callback can save on exception.
* Errors raised by end hooks on the error path do not replace the original error: they are
  logged and attached to it as notes (Python >= 3.11).
* ``KeyboardInterrupt`` and ``SystemExit`` are never wrapped (callers catch them by type), but
  they take the same error path, so a second Ctrl-C still lets writers finish.

The end of a run uploads what it wrote (``storage.flush_mirrors``): when ``train``/``fit``/
``eval`` return, a run written to ``s3://`` is in the store. The upload runs after every
callback's end hooks; when it fails, ``ObjectStoreError`` is raised (logged instead when the
run is already failing). Under torchrun each rank uploads what it wrote itself (rank 0: the
summaries, lineage and checkpoints; every rank: its shard of a sharded checkpoint), and a
collective run (training) ends with a barrier, so no rank's ``fit()`` returns before every
rank's upload is done.

Speed: a hook that no callback overrides (neither the new name nor, for train hooks, the old
name it falls back to) is skipped entirely, so an empty manager costs one dict lookup per call.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Iterator
from contextlib import ExitStack, contextmanager
from types import TracebackType
from typing import Any, NoReturn

from trainledger.errors import CallbackError, ObjectStoreError
from trainledger.run.callback import HOOKS, TRAIN_TO_OLD, Callback, RunContext
from trainledger.run.distributed import barrier
from trainledger.storage import flush_mirrors

__all__ = ["CallbackManager", "as_callback_list", "finish_uploads", "hook_function"]

_log = logging.getLogger("trainledger.run")

HookFn = Callable[[RunContext], Any]


def hook_function(callback: Callback, hook: str) -> HookFn | None:
    """The function to call for ``hook`` on ``callback``, or None when it would do nothing.

    A train hook left at ``Callback``'s default resolves to the old name it falls back to (one
    call instead of two); a hook set as an instance attribute (``LambdaCallback``) counts as an
    override.
    """
    fn = getattr(callback, hook)
    if getattr(fn, "__func__", None) is not getattr(Callback, hook):
        return fn  # type: ignore[no-any-return]
    old = TRAIN_TO_OLD.get(hook)
    if old is None:
        return None
    old_fn = getattr(callback, old)
    if getattr(old_fn, "__func__", None) is getattr(Callback, old):
        return None
    return old_fn  # type: ignore[no-any-return]


class CallbackManager:
    """Runs a list of callbacks as one: ``with manager: manager.call("on_train_begin", rc)``.

    ``callbacks`` may be None, one ``Callback`` or an iterable of them; anything else is a
    ``TypeError`` naming the position and the type received.
    """

    def __init__(
        self, callbacks: Callback | Iterable[Callback] | None = None, collective: bool = False
    ) -> None:
        self._collective = collective
        self._callbacks: list[Callback] = as_callback_list(callbacks)
        self._live = [cb for cb in self._callbacks if cb.rank_active]  # see Callback
        self._active: dict[str, list[tuple[Callback, HookFn]]] = {}
        for hook in HOOKS:
            pairs = []
            for cb in self._live:
                fn = hook_function(cb, hook)
                if fn is not None:
                    pairs.append((cb, fn))
            self._active[hook] = pairs
        self._failed: set[int] = set()
        self._stack: ExitStack | None = None
        # some callback reads the step fields between hooks: keep them current (Callback)
        self.watches_steps = any(cb.watches_steps for cb in self._live)

    @property
    def callbacks(self) -> list[Callback]:
        """The callbacks, in the order their hooks are called."""
        return list(self._callbacks)

    def has(self, hook: str) -> bool:
        """Whether any callback does something in ``hook`` (lets loops skip whole phases)."""
        return bool(self._active[hook])

    # --- context management --------------------------------------------------------------
    def __enter__(self) -> CallbackManager:
        self._failed = set()
        stack = ExitStack()
        try:
            for cb in self._live:
                stack.enter_context(cb)  # type: ignore[arg-type]
        except BaseException:
            stack.close()
            raise
        self._stack = stack
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        """Exit every callback (last entered first). Errors are never suppressed, even if a
        callback's ``__exit__`` returns True: a run that failed must not look complete."""
        stack, self._stack = self._stack, None
        try:
            if stack is not None:
                stack.__exit__(exc_type, exc, tb)
        except BaseException:
            finish_uploads(ok=False, collective=False)
            raise
        finish_uploads(ok=exc is None, collective=self._collective)

    # --- fan-out -------------------------------------------------------------------------
    def call(self, hook: str, run_context: RunContext) -> None:
        """Call ``hook`` on every callback in order; the first failure stops the fan-out."""
        for cb, fn in self._active[hook]:
            try:
                fn(run_context)
            except Exception as exc:
                self._failed.add(id(cb))
                raise CallbackError(type(cb).__name__, hook, exc) from exc

    def call_all(self, hook: str, run_context: RunContext) -> None:
        """Call ``hook`` on every callback that has not failed, even after one raises; then
        raise the first failure. Used for end hooks, so one broken writer does not stop the
        others from flushing."""
        first = self._call_each(hook, self._active[hook], run_context, None)
        if first is not None:
            raise first

    def functions(self, hook: str) -> tuple[HookFn, ...]:
        """The functions ``call_all`` would call for ``hook``, for a step loop that calls them
        itself (one Python frame less per step). On an exception from one of them, the loop
        hands it to ``failed_in``, which finishes the hook as ``call_all`` does."""
        return tuple(fn for cb, fn in self._active[hook] if id(cb) not in self._failed)

    def step_end_schedule(self) -> tuple[tuple[HookFn, ...], tuple[Callback, ...]]:
        """For a loop that reads each step's loss itself: the ``on_train_step_end`` functions
        of the callbacks that need every step (a subset of ``functions``, in the same order),
        and the callbacks that name the steps they need (``Callback.next_step_end``)."""
        pairs = [p for p in self._active["on_train_step_end"] if id(p[0]) not in self._failed]
        named = [cb.next_step_end is not None for cb, _ in pairs]
        every = tuple(fn for (_, fn), skip in zip(pairs, named, strict=True) if not skip)
        return every, tuple(cb for (cb, _), skip in zip(pairs, named, strict=True) if skip)

    def failed_in(
        self, hook: str, failed: HookFn, exc: Exception, run_context: RunContext
    ) -> NoReturn:
        """``failed`` (from ``functions(hook)``) raised ``exc``: the callbacks after it still
        get ``hook``, then the ``CallbackError`` naming the callback is raised."""
        pairs = self._active[hook]
        index = next(i for i, (_, fn) in enumerate(pairs) if fn is failed)
        cb = pairs[index][0]
        self._failed.add(id(cb))
        first = CallbackError(type(cb).__name__, hook, exc)
        first.__cause__ = exc
        raise self._call_each(hook, pairs[index + 1 :], run_context, first) or first

    def _call_each(
        self,
        hook: str,
        pairs: list[tuple[Callback, HookFn]],
        run_context: RunContext,
        first: CallbackError | None,
    ) -> CallbackError | None:
        """Call each pair whose callback has not failed; returns ``first`` or the first new
        failure, with later failures attached to it as notes."""
        for cb, fn in pairs:
            if id(cb) in self._failed:
                continue
            try:
                fn(run_context)
            except Exception as exc:
                self._failed.add(id(cb))
                if first is None:
                    first = CallbackError(type(cb).__name__, hook, exc)
                    first.__cause__ = exc
                else:
                    _note(first, f"also {type(cb).__name__}.{hook} raised {exc!r}")
        return first

    @contextmanager
    def phase(self, run_context: RunContext, begin: str, end: str) -> Iterator[None]:
        """Run ``begin``, the body, then ``end``; ``end`` runs even when the body fails.

        This is the one wrapper every run- and epoch-level phase goes through (fastai's
        ``_with_events``). If a callback fails in ``begin``, the callbacks that already ran
        ``begin`` get ``end``. On failure the error propagates after the end hooks ran.
        """
        entered: list[tuple[Callback, HookFn]] = []
        for cb, fn in self._active[begin]:
            try:
                fn(run_context)
            except Exception as exc:
                self._failed.add(id(cb))
                error = CallbackError(type(cb).__name__, begin, exc)
                error.__cause__ = exc
                self._end_on_error(run_context, end, error, only=entered)
                raise error from exc
            except BaseException as exc:
                self._end_on_error(run_context, end, exc, only=entered)
                raise
            entered.append((cb, fn))
        try:
            yield
        except BaseException as exc:
            self._end_on_error(run_context, end, exc, only=None)
            raise
        self.call_all(end, run_context)

    def _end_on_error(
        self,
        run_context: RunContext,
        end: str,
        error: BaseException,
        only: list[tuple[Callback, HookFn]] | None,
    ) -> None:
        """Give the non-failed callbacks their ``end`` hook while ``error`` propagates."""
        cb_params = run_context.original_args()
        if cb_params.get("exception") is None:
            cb_params["exception"] = error
            cb_params["stop_reason"] = "error"
        began = None if only is None else {id(cb) for cb, _ in only}
        for cb, fn in self._active[end]:
            if id(cb) in self._failed or (began is not None and id(cb) not in began):
                continue
            try:
                fn(run_context)
            except Exception as exc:
                self._failed.add(id(cb))
                message = f"while handling it, {type(cb).__name__}.{end} raised {exc!r}"
                _log.error("%s", message, exc_info=exc)
                _note(error, message)


def _note(error: BaseException, message: str) -> None:
    add_note = getattr(error, "add_note", None)
    if add_note is not None:  # Python >= 3.11
        add_note(message)


def as_callback_list(callbacks: Callback | Iterable[Callback] | None) -> list[Callback]:
    if callbacks is None:
        return []
    if isinstance(callbacks, Callback):
        return [callbacks]
    if isinstance(callbacks, (str, bytes)) or not isinstance(callbacks, Iterable):
        raise TypeError(
            "callbacks expected a Callback or a list of Callback instances, "
            f"received: {type(callbacks).__name__}"
        )
    result = list(callbacks)
    for i, cb in enumerate(result):
        if not isinstance(cb, Callback):
            raise TypeError(
                f"callbacks[{i}] expected a trainledger.Callback instance, "
                f"received: {type(cb).__name__} ({cb!r:.80})"
            )
    return result


def finish_uploads(ok: bool, collective: bool = False) -> None:
    """Put what the run wrote into the object store before the run returns (module doc):
    ``ObjectStoreError`` when that fails and ``ok`` (logged when the run failed already);
    ``collective``: then wait for every rank."""
    try:
        flush_mirrors()
    except ObjectStoreError as error:
        if not ok:
            _log.error("%s", error)
            return
        if collective:
            barrier()
        raise
    if ok and collective:
        barrier()
