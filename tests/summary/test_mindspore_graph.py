"""MindSpore operator attributes as the graph view shows them (``mindspore_graph.value_text``)."""

from __future__ import annotations

import pytest

from trainledger.summary.mindspore_graph import value_text
from trainledger.summary.proto import mindspore_summary_pb2 as ms


def _int(n: int) -> ms.ValueProto:
    return ms.ValueProto(dtype=ms.DT_INT64, int_val=n)


def _str(text: str) -> ms.ValueProto:
    return ms.ValueProto(dtype=ms.DT_STRING, str_val=text)


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (ms.ValueProto(dtype=ms.DT_TUPLE, values=[_int(3), _int(3)]), "(3, 3)"),
        (ms.ValueProto(dtype=ms.DT_TUPLE, values=[_int(1)]), "(1,)"),
        (ms.ValueProto(dtype=ms.DT_LIST, values=[_str("x"), _str("w")]), "['x', 'w']"),
        (_str("NCHW"), "NCHW"),  # bare at the top level
        (ms.ValueProto(dtype=ms.DT_BOOL, bool_val=False), "False"),
        (ms.ValueProto(dtype=ms.DT_FLOAT32, float_val=1.0), "1.0"),
        (ms.ValueProto(dtype=ms.DT_NONE), "None"),
        (
            ms.ValueProto(dtype=ms.DT_DICT, dict_val=[ms.NamedValueProto(key="a", value=_int(1))]),
            "{'a': 1}",
        ),
        (
            ms.ValueProto(
                dtype=ms.DT_TENSOR,
                tensor_val=ms.TensorProto(dims=[2, 3], data_type=ms.DT_FLOAT32),
            ),
            "Tensor([2, 3], DT_FLOAT32)",
        ),
        (ms.ValueProto(type_val=ms.TypeProto(data_type=ms.DT_FLOAT16)), "DT_FLOAT16"),
    ],
)
def test_value_text(value: ms.ValueProto, text: str) -> None:
    assert value_text(value) == text
