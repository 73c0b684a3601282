from google.protobuf import struct_pb2 as _struct_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Iterable as _Iterable, Mapping as _Mapping, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class DataType(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    DATA_TYPE_UNSET: _ClassVar[DataType]
    DATA_TYPE_STRING: _ClassVar[DataType]
    DATA_TYPE_BOOL: _ClassVar[DataType]
    DATA_TYPE_FLOAT64: _ClassVar[DataType]

class DatasetType(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    DATASET_UNKNOWN: _ClassVar[DatasetType]
    DATASET_TRAINING: _ClassVar[DatasetType]
    DATASET_VALIDATION: _ClassVar[DatasetType]

class Status(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    STATUS_UNKNOWN: _ClassVar[Status]
    STATUS_SUCCESS: _ClassVar[Status]
    STATUS_FAILURE: _ClassVar[Status]
    STATUS_RUNNING: _ClassVar[Status]
DATA_TYPE_UNSET: DataType
DATA_TYPE_STRING: DataType
DATA_TYPE_BOOL: DataType
DATA_TYPE_FLOAT64: DataType
DATASET_UNKNOWN: DatasetType
DATASET_TRAINING: DatasetType
DATASET_VALIDATION: DatasetType
STATUS_UNKNOWN: Status
STATUS_SUCCESS: Status
STATUS_FAILURE: Status
STATUS_RUNNING: Status

class HParamInfo(_message.Message):
    __slots__ = ("name", "display_name", "description", "type", "domain_discrete", "differs")
    NAME_FIELD_NUMBER: _ClassVar[int]
    DISPLAY_NAME_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    TYPE_FIELD_NUMBER: _ClassVar[int]
    DOMAIN_DISCRETE_FIELD_NUMBER: _ClassVar[int]
    DIFFERS_FIELD_NUMBER: _ClassVar[int]
    name: str
    display_name: str
    description: str
    type: DataType
    domain_discrete: _struct_pb2.ListValue
    differs: bool
    def __init__(self, name: _Optional[str] = ..., display_name: _Optional[str] = ..., description: _Optional[str] = ..., type: _Optional[_Union[DataType, str]] = ..., domain_discrete: _Optional[_Union[_struct_pb2.ListValue, _Mapping]] = ..., differs: bool = ...) -> None: ...

class MetricName(_message.Message):
    __slots__ = ("group", "tag")
    GROUP_FIELD_NUMBER: _ClassVar[int]
    TAG_FIELD_NUMBER: _ClassVar[int]
    group: str
    tag: str
    def __init__(self, group: _Optional[str] = ..., tag: _Optional[str] = ...) -> None: ...

class MetricInfo(_message.Message):
    __slots__ = ("name", "display_name", "description", "dataset_type")
    NAME_FIELD_NUMBER: _ClassVar[int]
    DISPLAY_NAME_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    DATASET_TYPE_FIELD_NUMBER: _ClassVar[int]
    name: MetricName
    display_name: str
    description: str
    dataset_type: DatasetType
    def __init__(self, name: _Optional[_Union[MetricName, _Mapping]] = ..., display_name: _Optional[str] = ..., description: _Optional[str] = ..., dataset_type: _Optional[_Union[DatasetType, str]] = ...) -> None: ...

class Experiment(_message.Message):
    __slots__ = ("name", "description", "user", "time_created_secs", "hparam_infos", "metric_infos")
    NAME_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    USER_FIELD_NUMBER: _ClassVar[int]
    TIME_CREATED_SECS_FIELD_NUMBER: _ClassVar[int]
    HPARAM_INFOS_FIELD_NUMBER: _ClassVar[int]
    METRIC_INFOS_FIELD_NUMBER: _ClassVar[int]
    name: str
    description: str
    user: str
    time_created_secs: float
    hparam_infos: _containers.RepeatedCompositeFieldContainer[HParamInfo]
    metric_infos: _containers.RepeatedCompositeFieldContainer[MetricInfo]
    def __init__(self, name: _Optional[str] = ..., description: _Optional[str] = ..., user: _Optional[str] = ..., time_created_secs: _Optional[float] = ..., hparam_infos: _Optional[_Iterable[_Union[HParamInfo, _Mapping]]] = ..., metric_infos: _Optional[_Iterable[_Union[MetricInfo, _Mapping]]] = ...) -> None: ...

class SessionStartInfo(_message.Message):
    __slots__ = ("hparams", "model_uri", "monitor_url", "group_name", "start_time_secs")
    class HparamsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: _struct_pb2.Value
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[_struct_pb2.Value, _Mapping]] = ...) -> None: ...
    HPARAMS_FIELD_NUMBER: _ClassVar[int]
    MODEL_URI_FIELD_NUMBER: _ClassVar[int]
    MONITOR_URL_FIELD_NUMBER: _ClassVar[int]
    GROUP_NAME_FIELD_NUMBER: _ClassVar[int]
    START_TIME_SECS_FIELD_NUMBER: _ClassVar[int]
    hparams: _containers.MessageMap[str, _struct_pb2.Value]
    model_uri: str
    monitor_url: str
    group_name: str
    start_time_secs: float
    def __init__(self, hparams: _Optional[_Mapping[str, _struct_pb2.Value]] = ..., model_uri: _Optional[str] = ..., monitor_url: _Optional[str] = ..., group_name: _Optional[str] = ..., start_time_secs: _Optional[float] = ...) -> None: ...

class SessionEndInfo(_message.Message):
    __slots__ = ("status", "end_time_secs")
    STATUS_FIELD_NUMBER: _ClassVar[int]
    END_TIME_SECS_FIELD_NUMBER: _ClassVar[int]
    status: Status
    end_time_secs: float
    def __init__(self, status: _Optional[_Union[Status, str]] = ..., end_time_secs: _Optional[float] = ...) -> None: ...

class HParamsPluginData(_message.Message):
    __slots__ = ("version", "experiment", "session_start_info", "session_end_info")
    VERSION_FIELD_NUMBER: _ClassVar[int]
    EXPERIMENT_FIELD_NUMBER: _ClassVar[int]
    SESSION_START_INFO_FIELD_NUMBER: _ClassVar[int]
    SESSION_END_INFO_FIELD_NUMBER: _ClassVar[int]
    version: int
    experiment: Experiment
    session_start_info: SessionStartInfo
    session_end_info: SessionEndInfo
    def __init__(self, version: _Optional[int] = ..., experiment: _Optional[_Union[Experiment, _Mapping]] = ..., session_start_info: _Optional[_Union[SessionStartInfo, _Mapping]] = ..., session_end_info: _Optional[_Union[SessionEndInfo, _Mapping]] = ...) -> None: ...
