from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Iterable as _Iterable, Mapping as _Mapping, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class LineageEvent(_message.Message):
    __slots__ = ("wall_time", "step", "version", "train_lineage", "evaluation_lineage", "dataset_graph", "user_defined_info", "run", "train_begin", "weights")
    WALL_TIME_FIELD_NUMBER: _ClassVar[int]
    STEP_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    TRAIN_LINEAGE_FIELD_NUMBER: _ClassVar[int]
    EVALUATION_LINEAGE_FIELD_NUMBER: _ClassVar[int]
    DATASET_GRAPH_FIELD_NUMBER: _ClassVar[int]
    USER_DEFINED_INFO_FIELD_NUMBER: _ClassVar[int]
    RUN_FIELD_NUMBER: _ClassVar[int]
    TRAIN_BEGIN_FIELD_NUMBER: _ClassVar[int]
    WEIGHTS_FIELD_NUMBER: _ClassVar[int]
    wall_time: float
    step: int
    version: str
    train_lineage: TrainLineage
    evaluation_lineage: EvaluationLineage
    dataset_graph: DatasetGraph
    user_defined_info: UserDefinedInfo
    run: RunInfo
    train_begin: TrainLineage
    weights: WeightsInfo
    def __init__(self, wall_time: _Optional[float] = ..., step: _Optional[int] = ..., version: _Optional[str] = ..., train_lineage: _Optional[_Union[TrainLineage, _Mapping]] = ..., evaluation_lineage: _Optional[_Union[EvaluationLineage, _Mapping]] = ..., dataset_graph: _Optional[_Union[DatasetGraph, _Mapping]] = ..., user_defined_info: _Optional[_Union[UserDefinedInfo, _Mapping]] = ..., run: _Optional[_Union[RunInfo, _Mapping]] = ..., train_begin: _Optional[_Union[TrainLineage, _Mapping]] = ..., weights: _Optional[_Union[WeightsInfo, _Mapping]] = ...) -> None: ...

class UserDefinedInfo(_message.Message):
    __slots__ = ("user_info", "map_dict", "map_int32", "map_str", "map_double")
    class MapDictEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: UserDefinedInfo
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[UserDefinedInfo, _Mapping]] = ...) -> None: ...
    class MapInt32Entry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: int
        def __init__(self, key: _Optional[str] = ..., value: _Optional[int] = ...) -> None: ...
    class MapStrEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    class MapDoubleEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: float
        def __init__(self, key: _Optional[str] = ..., value: _Optional[float] = ...) -> None: ...
    USER_INFO_FIELD_NUMBER: _ClassVar[int]
    MAP_DICT_FIELD_NUMBER: _ClassVar[int]
    MAP_INT32_FIELD_NUMBER: _ClassVar[int]
    MAP_STR_FIELD_NUMBER: _ClassVar[int]
    MAP_DOUBLE_FIELD_NUMBER: _ClassVar[int]
    user_info: _containers.RepeatedCompositeFieldContainer[UserDefinedInfo]
    map_dict: _containers.MessageMap[str, UserDefinedInfo]
    map_int32: _containers.ScalarMap[str, int]
    map_str: _containers.ScalarMap[str, str]
    map_double: _containers.ScalarMap[str, float]
    def __init__(self, user_info: _Optional[_Iterable[_Union[UserDefinedInfo, _Mapping]]] = ..., map_dict: _Optional[_Mapping[str, UserDefinedInfo]] = ..., map_int32: _Optional[_Mapping[str, int]] = ..., map_str: _Optional[_Mapping[str, str]] = ..., map_double: _Optional[_Mapping[str, float]] = ...) -> None: ...

class TrainLineage(_message.Message):
    __slots__ = ("hyper_parameters", "train_dataset", "algorithm", "model")
    class HyperParameters(_message.Message):
        __slots__ = ("optimizer", "learning_rate", "loss_function", "epoch", "parallel_mode", "device_num", "batch_size", "learning_rate_f64", "optimizer_settings", "scheduler_settings")
        OPTIMIZER_FIELD_NUMBER: _ClassVar[int]
        LEARNING_RATE_FIELD_NUMBER: _ClassVar[int]
        LOSS_FUNCTION_FIELD_NUMBER: _ClassVar[int]
        EPOCH_FIELD_NUMBER: _ClassVar[int]
        PARALLEL_MODE_FIELD_NUMBER: _ClassVar[int]
        DEVICE_NUM_FIELD_NUMBER: _ClassVar[int]
        BATCH_SIZE_FIELD_NUMBER: _ClassVar[int]
        LEARNING_RATE_F64_FIELD_NUMBER: _ClassVar[int]
        OPTIMIZER_SETTINGS_FIELD_NUMBER: _ClassVar[int]
        SCHEDULER_SETTINGS_FIELD_NUMBER: _ClassVar[int]
        optimizer: str
        learning_rate: float
        loss_function: str
        epoch: int
        parallel_mode: str
        device_num: int
        batch_size: int
        learning_rate_f64: float
        optimizer_settings: _containers.RepeatedCompositeFieldContainer[Setting]
        scheduler_settings: _containers.RepeatedCompositeFieldContainer[Setting]
        def __init__(self, optimizer: _Optional[str] = ..., learning_rate: _Optional[float] = ..., loss_function: _Optional[str] = ..., epoch: _Optional[int] = ..., parallel_mode: _Optional[str] = ..., device_num: _Optional[int] = ..., batch_size: _Optional[int] = ..., learning_rate_f64: _Optional[float] = ..., optimizer_settings: _Optional[_Iterable[_Union[Setting, _Mapping]]] = ..., scheduler_settings: _Optional[_Iterable[_Union[Setting, _Mapping]]] = ...) -> None: ...
    class TrainDataset(_message.Message):
        __slots__ = ("train_dataset_path", "train_dataset_size", "fingerprint")
        TRAIN_DATASET_PATH_FIELD_NUMBER: _ClassVar[int]
        TRAIN_DATASET_SIZE_FIELD_NUMBER: _ClassVar[int]
        FINGERPRINT_FIELD_NUMBER: _ClassVar[int]
        train_dataset_path: str
        train_dataset_size: int
        fingerprint: str
        def __init__(self, train_dataset_path: _Optional[str] = ..., train_dataset_size: _Optional[int] = ..., fingerprint: _Optional[str] = ...) -> None: ...
    class Algorithm(_message.Message):
        __slots__ = ("network", "loss", "loss_f64")
        NETWORK_FIELD_NUMBER: _ClassVar[int]
        LOSS_FIELD_NUMBER: _ClassVar[int]
        LOSS_F64_FIELD_NUMBER: _ClassVar[int]
        network: str
        loss: float
        loss_f64: float
        def __init__(self, network: _Optional[str] = ..., loss: _Optional[float] = ..., loss_f64: _Optional[float] = ...) -> None: ...
    class Model(_message.Message):
        __slots__ = ("path", "size")
        PATH_FIELD_NUMBER: _ClassVar[int]
        SIZE_FIELD_NUMBER: _ClassVar[int]
        path: str
        size: int
        def __init__(self, path: _Optional[str] = ..., size: _Optional[int] = ...) -> None: ...
    HYPER_PARAMETERS_FIELD_NUMBER: _ClassVar[int]
    TRAIN_DATASET_FIELD_NUMBER: _ClassVar[int]
    ALGORITHM_FIELD_NUMBER: _ClassVar[int]
    MODEL_FIELD_NUMBER: _ClassVar[int]
    hyper_parameters: TrainLineage.HyperParameters
    train_dataset: TrainLineage.TrainDataset
    algorithm: TrainLineage.Algorithm
    model: TrainLineage.Model
    def __init__(self, hyper_parameters: _Optional[_Union[TrainLineage.HyperParameters, _Mapping]] = ..., train_dataset: _Optional[_Union[TrainLineage.TrainDataset, _Mapping]] = ..., algorithm: _Optional[_Union[TrainLineage.Algorithm, _Mapping]] = ..., model: _Optional[_Union[TrainLineage.Model, _Mapping]] = ...) -> None: ...

class EvaluationLineage(_message.Message):
    __slots__ = ("metric", "valid_dataset")
    class ValidDataset(_message.Message):
        __slots__ = ("valid_dataset_path", "valid_dataset_size", "fingerprint")
        VALID_DATASET_PATH_FIELD_NUMBER: _ClassVar[int]
        VALID_DATASET_SIZE_FIELD_NUMBER: _ClassVar[int]
        FINGERPRINT_FIELD_NUMBER: _ClassVar[int]
        valid_dataset_path: str
        valid_dataset_size: int
        fingerprint: str
        def __init__(self, valid_dataset_path: _Optional[str] = ..., valid_dataset_size: _Optional[int] = ..., fingerprint: _Optional[str] = ...) -> None: ...
    METRIC_FIELD_NUMBER: _ClassVar[int]
    VALID_DATASET_FIELD_NUMBER: _ClassVar[int]
    metric: str
    valid_dataset: EvaluationLineage.ValidDataset
    def __init__(self, metric: _Optional[str] = ..., valid_dataset: _Optional[_Union[EvaluationLineage.ValidDataset, _Mapping]] = ...) -> None: ...

class DatasetGraph(_message.Message):
    __slots__ = ("children", "parameter", "operations", "sampler")
    CHILDREN_FIELD_NUMBER: _ClassVar[int]
    PARAMETER_FIELD_NUMBER: _ClassVar[int]
    OPERATIONS_FIELD_NUMBER: _ClassVar[int]
    SAMPLER_FIELD_NUMBER: _ClassVar[int]
    children: _containers.RepeatedCompositeFieldContainer[DatasetGraph]
    parameter: OperationParameter
    operations: _containers.RepeatedCompositeFieldContainer[Operation]
    sampler: Operation
    def __init__(self, children: _Optional[_Iterable[_Union[DatasetGraph, _Mapping]]] = ..., parameter: _Optional[_Union[OperationParameter, _Mapping]] = ..., operations: _Optional[_Iterable[_Union[Operation, _Mapping]]] = ..., sampler: _Optional[_Union[Operation, _Mapping]] = ...) -> None: ...

class Operation(_message.Message):
    __slots__ = ("operationParam", "size", "weights")
    OPERATIONPARAM_FIELD_NUMBER: _ClassVar[int]
    SIZE_FIELD_NUMBER: _ClassVar[int]
    WEIGHTS_FIELD_NUMBER: _ClassVar[int]
    operationParam: OperationParameter
    size: _containers.RepeatedScalarFieldContainer[int]
    weights: _containers.RepeatedScalarFieldContainer[float]
    def __init__(self, operationParam: _Optional[_Union[OperationParameter, _Mapping]] = ..., size: _Optional[_Iterable[int]] = ..., weights: _Optional[_Iterable[float]] = ...) -> None: ...

class OperationParameter(_message.Message):
    __slots__ = ("mapStr", "mapStrList", "mapBool", "mapInt", "mapDouble")
    class MapStrEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    class MapStrListEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: StrList
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[StrList, _Mapping]] = ...) -> None: ...
    class MapBoolEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: bool
        def __init__(self, key: _Optional[str] = ..., value: bool = ...) -> None: ...
    class MapIntEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: int
        def __init__(self, key: _Optional[str] = ..., value: _Optional[int] = ...) -> None: ...
    class MapDoubleEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: float
        def __init__(self, key: _Optional[str] = ..., value: _Optional[float] = ...) -> None: ...
    MAPSTR_FIELD_NUMBER: _ClassVar[int]
    MAPSTRLIST_FIELD_NUMBER: _ClassVar[int]
    MAPBOOL_FIELD_NUMBER: _ClassVar[int]
    MAPINT_FIELD_NUMBER: _ClassVar[int]
    MAPDOUBLE_FIELD_NUMBER: _ClassVar[int]
    mapStr: _containers.ScalarMap[str, str]
    mapStrList: _containers.MessageMap[str, StrList]
    mapBool: _containers.ScalarMap[str, bool]
    mapInt: _containers.ScalarMap[str, int]
    mapDouble: _containers.ScalarMap[str, float]
    def __init__(self, mapStr: _Optional[_Mapping[str, str]] = ..., mapStrList: _Optional[_Mapping[str, StrList]] = ..., mapBool: _Optional[_Mapping[str, bool]] = ..., mapInt: _Optional[_Mapping[str, int]] = ..., mapDouble: _Optional[_Mapping[str, float]] = ...) -> None: ...

class StrList(_message.Message):
    __slots__ = ("strValue",)
    STRVALUE_FIELD_NUMBER: _ClassVar[int]
    strValue: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, strValue: _Optional[_Iterable[str]] = ...) -> None: ...

class Setting(_message.Message):
    __slots__ = ("name", "number", "integer", "text")
    NAME_FIELD_NUMBER: _ClassVar[int]
    NUMBER_FIELD_NUMBER: _ClassVar[int]
    INTEGER_FIELD_NUMBER: _ClassVar[int]
    TEXT_FIELD_NUMBER: _ClassVar[int]
    name: str
    number: float
    integer: int
    text: str
    def __init__(self, name: _Optional[str] = ..., number: _Optional[float] = ..., integer: _Optional[int] = ..., text: _Optional[str] = ...) -> None: ...

class Checkpoint(_message.Message):
    __slots__ = ("path", "size", "step")
    PATH_FIELD_NUMBER: _ClassVar[int]
    SIZE_FIELD_NUMBER: _ClassVar[int]
    STEP_FIELD_NUMBER: _ClassVar[int]
    path: str
    size: int
    step: int
    def __init__(self, path: _Optional[str] = ..., size: _Optional[int] = ..., step: _Optional[int] = ...) -> None: ...

class WeightsInfo(_message.Message):
    __slots__ = ("initial", "loaded", "checkpoint", "step", "checkpoint_tensors", "evaluated")
    INITIAL_FIELD_NUMBER: _ClassVar[int]
    LOADED_FIELD_NUMBER: _ClassVar[int]
    CHECKPOINT_FIELD_NUMBER: _ClassVar[int]
    STEP_FIELD_NUMBER: _ClassVar[int]
    CHECKPOINT_TENSORS_FIELD_NUMBER: _ClassVar[int]
    EVALUATED_FIELD_NUMBER: _ClassVar[int]
    initial: TensorDigests
    loaded: _containers.RepeatedCompositeFieldContainer[LoadedWeights]
    checkpoint: str
    step: int
    checkpoint_tensors: TensorDigests
    evaluated: TensorDigests
    def __init__(self, initial: _Optional[_Union[TensorDigests, _Mapping]] = ..., loaded: _Optional[_Iterable[_Union[LoadedWeights, _Mapping]]] = ..., checkpoint: _Optional[str] = ..., step: _Optional[int] = ..., checkpoint_tensors: _Optional[_Union[TensorDigests, _Mapping]] = ..., evaluated: _Optional[_Union[TensorDigests, _Mapping]] = ...) -> None: ...

class TensorDigests(_message.Message):
    __slots__ = ("crc32c", "kind", "constant", "name")
    CRC32C_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    CONSTANT_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    crc32c: bytes
    kind: _containers.RepeatedScalarFieldContainer[str]
    constant: bytes
    name: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, crc32c: _Optional[bytes] = ..., kind: _Optional[_Iterable[str]] = ..., constant: _Optional[bytes] = ..., name: _Optional[_Iterable[str]] = ...) -> None: ...

class LoadedWeights(_message.Message):
    __slots__ = ("path", "tensors", "time")
    PATH_FIELD_NUMBER: _ClassVar[int]
    TENSORS_FIELD_NUMBER: _ClassVar[int]
    TIME_FIELD_NUMBER: _ClassVar[int]
    path: str
    tensors: TensorDigests
    time: float
    def __init__(self, path: _Optional[str] = ..., tensors: _Optional[_Union[TensorDigests, _Mapping]] = ..., time: _Optional[float] = ...) -> None: ...

class RunInfo(_message.Message):
    __slots__ = ("status", "start_time", "end_time", "duration", "total_steps", "epochs_done", "hostname", "pid", "rank", "command", "python_version", "torch_version", "trainledger_version", "git_commit", "git_dirty", "seed", "dataset_fingerprint", "checkpoints", "error", "bad_records", "sessions", "uid")
    STATUS_FIELD_NUMBER: _ClassVar[int]
    START_TIME_FIELD_NUMBER: _ClassVar[int]
    END_TIME_FIELD_NUMBER: _ClassVar[int]
    DURATION_FIELD_NUMBER: _ClassVar[int]
    TOTAL_STEPS_FIELD_NUMBER: _ClassVar[int]
    EPOCHS_DONE_FIELD_NUMBER: _ClassVar[int]
    HOSTNAME_FIELD_NUMBER: _ClassVar[int]
    PID_FIELD_NUMBER: _ClassVar[int]
    RANK_FIELD_NUMBER: _ClassVar[int]
    COMMAND_FIELD_NUMBER: _ClassVar[int]
    PYTHON_VERSION_FIELD_NUMBER: _ClassVar[int]
    TORCH_VERSION_FIELD_NUMBER: _ClassVar[int]
    TRAINLEDGER_VERSION_FIELD_NUMBER: _ClassVar[int]
    GIT_COMMIT_FIELD_NUMBER: _ClassVar[int]
    GIT_DIRTY_FIELD_NUMBER: _ClassVar[int]
    SEED_FIELD_NUMBER: _ClassVar[int]
    DATASET_FINGERPRINT_FIELD_NUMBER: _ClassVar[int]
    CHECKPOINTS_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    BAD_RECORDS_FIELD_NUMBER: _ClassVar[int]
    SESSIONS_FIELD_NUMBER: _ClassVar[int]
    UID_FIELD_NUMBER: _ClassVar[int]
    status: str
    start_time: float
    end_time: float
    duration: float
    total_steps: int
    epochs_done: int
    hostname: str
    pid: int
    rank: int
    command: _containers.RepeatedScalarFieldContainer[str]
    python_version: str
    torch_version: str
    trainledger_version: str
    git_commit: str
    git_dirty: bool
    seed: int
    dataset_fingerprint: str
    checkpoints: _containers.RepeatedCompositeFieldContainer[Checkpoint]
    error: str
    bad_records: int
    sessions: _containers.RepeatedCompositeFieldContainer[RunSession]
    uid: str
    def __init__(self, status: _Optional[str] = ..., start_time: _Optional[float] = ..., end_time: _Optional[float] = ..., duration: _Optional[float] = ..., total_steps: _Optional[int] = ..., epochs_done: _Optional[int] = ..., hostname: _Optional[str] = ..., pid: _Optional[int] = ..., rank: _Optional[int] = ..., command: _Optional[_Iterable[str]] = ..., python_version: _Optional[str] = ..., torch_version: _Optional[str] = ..., trainledger_version: _Optional[str] = ..., git_commit: _Optional[str] = ..., git_dirty: bool = ..., seed: _Optional[int] = ..., dataset_fingerprint: _Optional[str] = ..., checkpoints: _Optional[_Iterable[_Union[Checkpoint, _Mapping]]] = ..., error: _Optional[str] = ..., bad_records: _Optional[int] = ..., sessions: _Optional[_Iterable[_Union[RunSession, _Mapping]]] = ..., uid: _Optional[str] = ...) -> None: ...

class RunSession(_message.Message):
    __slots__ = ("start_time", "end_time", "first_step", "last_step", "hostname", "pid")
    START_TIME_FIELD_NUMBER: _ClassVar[int]
    END_TIME_FIELD_NUMBER: _ClassVar[int]
    FIRST_STEP_FIELD_NUMBER: _ClassVar[int]
    LAST_STEP_FIELD_NUMBER: _ClassVar[int]
    HOSTNAME_FIELD_NUMBER: _ClassVar[int]
    PID_FIELD_NUMBER: _ClassVar[int]
    start_time: float
    end_time: float
    first_step: int
    last_step: int
    hostname: str
    pid: int
    def __init__(self, start_time: _Optional[float] = ..., end_time: _Optional[float] = ..., first_step: _Optional[int] = ..., last_step: _Optional[int] = ..., hostname: _Optional[str] = ..., pid: _Optional[int] = ...) -> None: ...
