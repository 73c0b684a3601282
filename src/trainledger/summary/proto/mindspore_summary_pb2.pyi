from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Iterable as _Iterable, Mapping as _Mapping, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class DataType(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    DT_UNDEFINED: _ClassVar[DataType]
    DT_BOOL: _ClassVar[DataType]
    DT_INT8: _ClassVar[DataType]
    DT_INT16: _ClassVar[DataType]
    DT_INT32: _ClassVar[DataType]
    DT_INT64: _ClassVar[DataType]
    DT_UINT8: _ClassVar[DataType]
    DT_UINT16: _ClassVar[DataType]
    DT_UINT32: _ClassVar[DataType]
    DT_UINT64: _ClassVar[DataType]
    DT_FLOAT16: _ClassVar[DataType]
    DT_FLOAT32: _ClassVar[DataType]
    DT_FLOAT64: _ClassVar[DataType]
    DT_STRING: _ClassVar[DataType]
    DT_TENSOR: _ClassVar[DataType]
    DT_GRAPH: _ClassVar[DataType]
    DT_TUPLE: _ClassVar[DataType]
    DT_LIST: _ClassVar[DataType]
    DT_DICT: _ClassVar[DataType]
    DT_NONE: _ClassVar[DataType]
    DT_COMPLEX64: _ClassVar[DataType]
    DT_COMPLEX128: _ClassVar[DataType]
    DT_BFLOAT16: _ClassVar[DataType]
DT_UNDEFINED: DataType
DT_BOOL: DataType
DT_INT8: DataType
DT_INT16: DataType
DT_INT32: DataType
DT_INT64: DataType
DT_UINT8: DataType
DT_UINT16: DataType
DT_UINT32: DataType
DT_UINT64: DataType
DT_FLOAT16: DataType
DT_FLOAT32: DataType
DT_FLOAT64: DataType
DT_STRING: DataType
DT_TENSOR: DataType
DT_GRAPH: DataType
DT_TUPLE: DataType
DT_LIST: DataType
DT_DICT: DataType
DT_NONE: DataType
DT_COMPLEX64: DataType
DT_COMPLEX128: DataType
DT_BFLOAT16: DataType

class TensorShapeProto(_message.Message):
    __slots__ = ("dim",)
    class Dimension(_message.Message):
        __slots__ = ("size", "name")
        SIZE_FIELD_NUMBER: _ClassVar[int]
        NAME_FIELD_NUMBER: _ClassVar[int]
        size: int
        name: str
        def __init__(self, size: _Optional[int] = ..., name: _Optional[str] = ...) -> None: ...
    DIM_FIELD_NUMBER: _ClassVar[int]
    dim: _containers.RepeatedCompositeFieldContainer[TensorShapeProto.Dimension]
    def __init__(self, dim: _Optional[_Iterable[_Union[TensorShapeProto.Dimension, _Mapping]]] = ...) -> None: ...

class TypeProto(_message.Message):
    __slots__ = ("data_type", "tensor_type", "sequence_type")
    class Tensor(_message.Message):
        __slots__ = ("elem_type", "shape")
        ELEM_TYPE_FIELD_NUMBER: _ClassVar[int]
        SHAPE_FIELD_NUMBER: _ClassVar[int]
        elem_type: DataType
        shape: TensorShapeProto
        def __init__(self, elem_type: _Optional[_Union[DataType, str]] = ..., shape: _Optional[_Union[TensorShapeProto, _Mapping]] = ...) -> None: ...
    class Sequence(_message.Message):
        __slots__ = ("elem_types",)
        ELEM_TYPES_FIELD_NUMBER: _ClassVar[int]
        elem_types: _containers.RepeatedCompositeFieldContainer[TypeProto]
        def __init__(self, elem_types: _Optional[_Iterable[_Union[TypeProto, _Mapping]]] = ...) -> None: ...
    DATA_TYPE_FIELD_NUMBER: _ClassVar[int]
    TENSOR_TYPE_FIELD_NUMBER: _ClassVar[int]
    SEQUENCE_TYPE_FIELD_NUMBER: _ClassVar[int]
    data_type: DataType
    tensor_type: TypeProto.Tensor
    sequence_type: TypeProto.Sequence
    def __init__(self, data_type: _Optional[_Union[DataType, str]] = ..., tensor_type: _Optional[_Union[TypeProto.Tensor, _Mapping]] = ..., sequence_type: _Optional[_Union[TypeProto.Sequence, _Mapping]] = ...) -> None: ...

class ParameterProto(_message.Message):
    __slots__ = ("name", "type")
    NAME_FIELD_NUMBER: _ClassVar[int]
    TYPE_FIELD_NUMBER: _ClassVar[int]
    name: str
    type: TypeProto
    def __init__(self, name: _Optional[str] = ..., type: _Optional[_Union[TypeProto, _Mapping]] = ...) -> None: ...

class OutputProto(_message.Message):
    __slots__ = ("name", "type")
    NAME_FIELD_NUMBER: _ClassVar[int]
    TYPE_FIELD_NUMBER: _ClassVar[int]
    name: str
    type: TypeProto
    def __init__(self, name: _Optional[str] = ..., type: _Optional[_Union[TypeProto, _Mapping]] = ...) -> None: ...

class InputProto(_message.Message):
    __slots__ = ("name", "type")
    class EdgeType(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        DATA_EDGE: _ClassVar[InputProto.EdgeType]
        CONTROL_EDGE: _ClassVar[InputProto.EdgeType]
    DATA_EDGE: InputProto.EdgeType
    CONTROL_EDGE: InputProto.EdgeType
    NAME_FIELD_NUMBER: _ClassVar[int]
    TYPE_FIELD_NUMBER: _ClassVar[int]
    name: str
    type: InputProto.EdgeType
    def __init__(self, name: _Optional[str] = ..., type: _Optional[_Union[InputProto.EdgeType, str]] = ...) -> None: ...

class AttributeProto(_message.Message):
    __slots__ = ("name", "value")
    NAME_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    name: str
    value: ValueProto
    def __init__(self, name: _Optional[str] = ..., value: _Optional[_Union[ValueProto, _Mapping]] = ...) -> None: ...

class NamedValueProto(_message.Message):
    __slots__ = ("key", "value")
    KEY_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    key: str
    value: ValueProto
    def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[ValueProto, _Mapping]] = ...) -> None: ...

class ValueProto(_message.Message):
    __slots__ = ("dtype", "bool_val", "int_val", "uint_val", "float_val", "double_val", "str_val", "tensor_val", "values", "dict_val", "type_val")
    DTYPE_FIELD_NUMBER: _ClassVar[int]
    BOOL_VAL_FIELD_NUMBER: _ClassVar[int]
    INT_VAL_FIELD_NUMBER: _ClassVar[int]
    UINT_VAL_FIELD_NUMBER: _ClassVar[int]
    FLOAT_VAL_FIELD_NUMBER: _ClassVar[int]
    DOUBLE_VAL_FIELD_NUMBER: _ClassVar[int]
    STR_VAL_FIELD_NUMBER: _ClassVar[int]
    TENSOR_VAL_FIELD_NUMBER: _ClassVar[int]
    VALUES_FIELD_NUMBER: _ClassVar[int]
    DICT_VAL_FIELD_NUMBER: _ClassVar[int]
    TYPE_VAL_FIELD_NUMBER: _ClassVar[int]
    dtype: DataType
    bool_val: bool
    int_val: int
    uint_val: int
    float_val: float
    double_val: float
    str_val: str
    tensor_val: TensorProto
    values: _containers.RepeatedCompositeFieldContainer[ValueProto]
    dict_val: _containers.RepeatedCompositeFieldContainer[NamedValueProto]
    type_val: TypeProto
    def __init__(self, dtype: _Optional[_Union[DataType, str]] = ..., bool_val: bool = ..., int_val: _Optional[int] = ..., uint_val: _Optional[int] = ..., float_val: _Optional[float] = ..., double_val: _Optional[float] = ..., str_val: _Optional[str] = ..., tensor_val: _Optional[_Union[TensorProto, _Mapping]] = ..., values: _Optional[_Iterable[_Union[ValueProto, _Mapping]]] = ..., dict_val: _Optional[_Iterable[_Union[NamedValueProto, _Mapping]]] = ..., type_val: _Optional[_Union[TypeProto, _Mapping]] = ...) -> None: ...

class NodeProto(_message.Message):
    __slots__ = ("input", "name", "op_type", "scope", "attribute", "output_type", "output_i", "full_name", "instance_name")
    INPUT_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    OP_TYPE_FIELD_NUMBER: _ClassVar[int]
    SCOPE_FIELD_NUMBER: _ClassVar[int]
    ATTRIBUTE_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_TYPE_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_I_FIELD_NUMBER: _ClassVar[int]
    FULL_NAME_FIELD_NUMBER: _ClassVar[int]
    INSTANCE_NAME_FIELD_NUMBER: _ClassVar[int]
    input: _containers.RepeatedCompositeFieldContainer[InputProto]
    name: str
    op_type: str
    scope: str
    attribute: _containers.RepeatedCompositeFieldContainer[AttributeProto]
    output_type: TypeProto
    output_i: int
    full_name: str
    instance_name: str
    def __init__(self, input: _Optional[_Iterable[_Union[InputProto, _Mapping]]] = ..., name: _Optional[str] = ..., op_type: _Optional[str] = ..., scope: _Optional[str] = ..., attribute: _Optional[_Iterable[_Union[AttributeProto, _Mapping]]] = ..., output_type: _Optional[_Union[TypeProto, _Mapping]] = ..., output_i: _Optional[int] = ..., full_name: _Optional[str] = ..., instance_name: _Optional[str] = ...) -> None: ...

class GraphProto(_message.Message):
    __slots__ = ("node", "name", "parameters", "outputs")
    NODE_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    PARAMETERS_FIELD_NUMBER: _ClassVar[int]
    OUTPUTS_FIELD_NUMBER: _ClassVar[int]
    node: _containers.RepeatedCompositeFieldContainer[NodeProto]
    name: str
    parameters: _containers.RepeatedCompositeFieldContainer[ParameterProto]
    outputs: _containers.RepeatedCompositeFieldContainer[OutputProto]
    def __init__(self, node: _Optional[_Iterable[_Union[NodeProto, _Mapping]]] = ..., name: _Optional[str] = ..., parameters: _Optional[_Iterable[_Union[ParameterProto, _Mapping]]] = ..., outputs: _Optional[_Iterable[_Union[OutputProto, _Mapping]]] = ...) -> None: ...

class TensorProto(_message.Message):
    __slots__ = ("dims", "data_type", "float_data", "int32_data", "int64_data", "double_data", "uint64_data", "raw_data")
    DIMS_FIELD_NUMBER: _ClassVar[int]
    DATA_TYPE_FIELD_NUMBER: _ClassVar[int]
    FLOAT_DATA_FIELD_NUMBER: _ClassVar[int]
    INT32_DATA_FIELD_NUMBER: _ClassVar[int]
    INT64_DATA_FIELD_NUMBER: _ClassVar[int]
    DOUBLE_DATA_FIELD_NUMBER: _ClassVar[int]
    UINT64_DATA_FIELD_NUMBER: _ClassVar[int]
    RAW_DATA_FIELD_NUMBER: _ClassVar[int]
    dims: _containers.RepeatedScalarFieldContainer[int]
    data_type: DataType
    float_data: _containers.RepeatedScalarFieldContainer[float]
    int32_data: _containers.RepeatedScalarFieldContainer[int]
    int64_data: _containers.RepeatedScalarFieldContainer[int]
    double_data: _containers.RepeatedScalarFieldContainer[float]
    uint64_data: _containers.RepeatedScalarFieldContainer[int]
    raw_data: bytes
    def __init__(self, dims: _Optional[_Iterable[int]] = ..., data_type: _Optional[_Union[DataType, str]] = ..., float_data: _Optional[_Iterable[float]] = ..., int32_data: _Optional[_Iterable[int]] = ..., int64_data: _Optional[_Iterable[int]] = ..., double_data: _Optional[_Iterable[float]] = ..., uint64_data: _Optional[_Iterable[int]] = ..., raw_data: _Optional[bytes] = ...) -> None: ...

class Summary(_message.Message):
    __slots__ = ("value",)
    class Image(_message.Message):
        __slots__ = ("height", "width", "colorspace", "encoded_image")
        HEIGHT_FIELD_NUMBER: _ClassVar[int]
        WIDTH_FIELD_NUMBER: _ClassVar[int]
        COLORSPACE_FIELD_NUMBER: _ClassVar[int]
        ENCODED_IMAGE_FIELD_NUMBER: _ClassVar[int]
        height: int
        width: int
        colorspace: int
        encoded_image: bytes
        def __init__(self, height: _Optional[int] = ..., width: _Optional[int] = ..., colorspace: _Optional[int] = ..., encoded_image: _Optional[bytes] = ...) -> None: ...
    class Histogram(_message.Message):
        __slots__ = ("buckets", "nan_count", "pos_inf_count", "neg_inf_count", "max", "min", "sum", "count")
        class bucket(_message.Message):
            __slots__ = ("left", "width", "count")
            LEFT_FIELD_NUMBER: _ClassVar[int]
            WIDTH_FIELD_NUMBER: _ClassVar[int]
            COUNT_FIELD_NUMBER: _ClassVar[int]
            left: float
            width: float
            count: int
            def __init__(self, left: _Optional[float] = ..., width: _Optional[float] = ..., count: _Optional[int] = ...) -> None: ...
        BUCKETS_FIELD_NUMBER: _ClassVar[int]
        NAN_COUNT_FIELD_NUMBER: _ClassVar[int]
        POS_INF_COUNT_FIELD_NUMBER: _ClassVar[int]
        NEG_INF_COUNT_FIELD_NUMBER: _ClassVar[int]
        MAX_FIELD_NUMBER: _ClassVar[int]
        MIN_FIELD_NUMBER: _ClassVar[int]
        SUM_FIELD_NUMBER: _ClassVar[int]
        COUNT_FIELD_NUMBER: _ClassVar[int]
        buckets: _containers.RepeatedCompositeFieldContainer[Summary.Histogram.bucket]
        nan_count: int
        pos_inf_count: int
        neg_inf_count: int
        max: float
        min: float
        sum: float
        count: int
        def __init__(self, buckets: _Optional[_Iterable[_Union[Summary.Histogram.bucket, _Mapping]]] = ..., nan_count: _Optional[int] = ..., pos_inf_count: _Optional[int] = ..., neg_inf_count: _Optional[int] = ..., max: _Optional[float] = ..., min: _Optional[float] = ..., sum: _Optional[float] = ..., count: _Optional[int] = ...) -> None: ...
    class Value(_message.Message):
        __slots__ = ("tag", "scalar_value", "image", "tensor", "histogram", "loss_landscape")
        TAG_FIELD_NUMBER: _ClassVar[int]
        SCALAR_VALUE_FIELD_NUMBER: _ClassVar[int]
        IMAGE_FIELD_NUMBER: _ClassVar[int]
        TENSOR_FIELD_NUMBER: _ClassVar[int]
        HISTOGRAM_FIELD_NUMBER: _ClassVar[int]
        LOSS_LANDSCAPE_FIELD_NUMBER: _ClassVar[int]
        tag: str
        scalar_value: float
        image: Summary.Image
        tensor: TensorProto
        histogram: Summary.Histogram
        loss_landscape: bytes
        def __init__(self, tag: _Optional[str] = ..., scalar_value: _Optional[float] = ..., image: _Optional[_Union[Summary.Image, _Mapping]] = ..., tensor: _Optional[_Union[TensorProto, _Mapping]] = ..., histogram: _Optional[_Union[Summary.Histogram, _Mapping]] = ..., loss_landscape: _Optional[bytes] = ...) -> None: ...
    VALUE_FIELD_NUMBER: _ClassVar[int]
    value: _containers.RepeatedCompositeFieldContainer[Summary.Value]
    def __init__(self, value: _Optional[_Iterable[_Union[Summary.Value, _Mapping]]] = ...) -> None: ...

class Event(_message.Message):
    __slots__ = ("wall_time", "step", "version", "graph_def", "summary")
    WALL_TIME_FIELD_NUMBER: _ClassVar[int]
    STEP_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    GRAPH_DEF_FIELD_NUMBER: _ClassVar[int]
    SUMMARY_FIELD_NUMBER: _ClassVar[int]
    wall_time: float
    step: int
    version: str
    graph_def: GraphProto
    summary: Summary
    def __init__(self, wall_time: _Optional[float] = ..., step: _Optional[int] = ..., version: _Optional[str] = ..., graph_def: _Optional[_Union[GraphProto, _Mapping]] = ..., summary: _Optional[_Union[Summary, _Mapping]] = ...) -> None: ...
