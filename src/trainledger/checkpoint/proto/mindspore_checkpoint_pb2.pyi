from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Iterable as _Iterable, Mapping as _Mapping, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class TensorProto(_message.Message):
    __slots__ = ("dims", "tensor_type", "tensor_content")
    DIMS_FIELD_NUMBER: _ClassVar[int]
    TENSOR_TYPE_FIELD_NUMBER: _ClassVar[int]
    TENSOR_CONTENT_FIELD_NUMBER: _ClassVar[int]
    dims: _containers.RepeatedScalarFieldContainer[int]
    tensor_type: str
    tensor_content: bytes
    def __init__(self, dims: _Optional[_Iterable[int]] = ..., tensor_type: _Optional[str] = ..., tensor_content: _Optional[bytes] = ...) -> None: ...

class MapTensorProto(_message.Message):
    __slots__ = ("tensor",)
    TENSOR_FIELD_NUMBER: _ClassVar[int]
    tensor: _containers.RepeatedCompositeFieldContainer[TensorProto]
    def __init__(self, tensor: _Optional[_Iterable[_Union[TensorProto, _Mapping]]] = ...) -> None: ...

class Checkpoint(_message.Message):
    __slots__ = ("value",)
    class Value(_message.Message):
        __slots__ = ("tag", "tensor", "maptensor")
        TAG_FIELD_NUMBER: _ClassVar[int]
        TENSOR_FIELD_NUMBER: _ClassVar[int]
        MAPTENSOR_FIELD_NUMBER: _ClassVar[int]
        tag: str
        tensor: TensorProto
        maptensor: MapTensorProto
        def __init__(self, tag: _Optional[str] = ..., tensor: _Optional[_Union[TensorProto, _Mapping]] = ..., maptensor: _Optional[_Union[MapTensorProto, _Mapping]] = ...) -> None: ...
    VALUE_FIELD_NUMBER: _ClassVar[int]
    value: _containers.RepeatedCompositeFieldContainer[Checkpoint.Value]
    def __init__(self, value: _Optional[_Iterable[_Union[Checkpoint.Value, _Mapping]]] = ...) -> None: ...
