"""Callback, RunContext and CallbackParams: the protocol itself."""

from __future__ import annotations

import pytest

from trainledger.run.callback import HOOKS, TRAIN_TO_OLD, Callback, CallbackParams, RunContext


def test_run_context_requires_a_dict() -> None:
    with pytest.raises(TypeError, match="expects a dict of run parameters.*received list"):
        RunContext([])  # type: ignore[arg-type]
    rc = RunContext({"a": 1})
    assert isinstance(rc.original_args(), CallbackParams)
    assert rc.original_args().a == 1


def test_missing_attribute_names_the_key() -> None:
    params = CallbackParams(cur_step_num=3)
    with pytest.raises(AttributeError, match="'net_outputs'"):
        _ = params.net_outputs
    assert getattr(params, "net_outputs", None) is None
    params.net_outputs = 5
    assert params["net_outputs"] == 5
    del params.net_outputs
    assert not hasattr(params, "net_outputs")


def test_request_stop_keeps_first_reason() -> None:
    rc = RunContext({})
    assert not rc.get_stop_requested() and rc.stop_reason is None
    rc.request_stop()
    rc.request_stop("signal")
    assert rc.get_stop_requested() and rc.stop_reason == "requested"


def test_train_hooks_fall_back_to_old_names_eval_hooks_do_not() -> None:
    called: list[str] = []

    class Old(Callback):
        pass

    for old in TRAIN_TO_OLD.values():
        setattr(Old, old, lambda self, rc, _n=old: called.append(_n))
    cb = Old()
    rc = RunContext({})
    for hook in HOOKS:
        getattr(cb, hook)(rc)
    assert called == list(TRAIN_TO_OLD.values())


def test_callback_is_a_context_manager() -> None:
    cb = Callback()
    with cb as entered:
        assert entered is cb
