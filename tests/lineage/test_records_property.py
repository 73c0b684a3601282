"""Property tests: what we pack reads back as packed (user info, graph dicts, floats)."""

from __future__ import annotations

import math
import struct

import numpy as np
from hypothesis import example, given, settings
from hypothesis import strategies as st

from trainledger.lineage.records import (
    dataset_graph_event,
    organize_graph,
    organize_user_info,
    shortest_float32,
    user_defined_event,
)

_keys = st.text(min_size=1, max_size=12)
_scalars = st.one_of(
    st.integers(-(2**31), 2**31 - 1),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=20).filter(lambda s: s != "None"),
)


@settings(max_examples=60, deadline=None)
@given(st.dictionaries(_keys, _scalars, max_size=8))
def test_user_info_roundtrip(info: dict) -> None:
    event = user_defined_event(info)
    assert organize_user_info(event.user_defined_info) == info


_params = st.dictionaries(
    _keys.filter(lambda k: k not in ("children", "operations", "sampler")),
    st.one_of(
        _scalars,
        st.booleans(),
        st.none(),
        st.lists(st.text(min_size=1, max_size=5), min_size=1, max_size=3),
    ),
    max_size=5,
)
_graphs = st.recursive(
    _params.map(lambda p: {**p, "children": []}),
    lambda kids: st.tuples(_params, st.lists(kids, min_size=1, max_size=3)).map(
        lambda t: {**t[0], "children": t[1]}
    ),
    max_leaves=6,
)


@settings(max_examples=60, deadline=None)
@given(_graphs)
def test_graph_roundtrip(graph: dict) -> None:
    assert organize_graph(dataset_graph_event(graph).dataset_graph) == graph


@settings(max_examples=200, deadline=None)
@given(st.floats(width=32, allow_nan=False, allow_infinity=False))
def test_shortest_float32_is_the_same_float32(value: float) -> None:
    shown = shortest_float32(value)
    assert struct.unpack("<f", struct.pack("<f", shown))[0] == value
    assert len(repr(shown)) <= max(len(repr(value)), 12)


@settings(max_examples=1000, deadline=None)
@given(st.floats(width=32, allow_nan=False, allow_infinity=False))
@example(1e-45)  # the smallest subnormal: "1e-45", not 1.4013e-45
@example(3.4028234663852886e38)  # the largest float32
@example(0.019999999552965164)  # float32(0.02)
def test_shortest_float32_is_numpys_shortest_repr(value: float) -> None:
    """numpy prints a float32 as the shortest decimal that reads back as it (Dragon4)."""
    expected = float(str(np.float32(value)))
    shown = shortest_float32(value)
    assert shown == expected
    assert math.copysign(1.0, shown) == math.copysign(1.0, value)


@given(st.floats())
def test_shortest_float32_leaves_other_doubles_alone(value: float) -> None:
    try:
        is_f32 = struct.unpack("<f", struct.pack("<f", value))[0] == value
    except OverflowError:
        is_f32 = False
    if not is_f32 or not math.isfinite(value):
        shown = shortest_float32(value)
        assert shown is value or (math.isnan(shown) and math.isnan(value))
