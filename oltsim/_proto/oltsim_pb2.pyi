from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class Empty(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class VersionDetails(_message.Message):
    __slots__ = ("version", "python_version", "grpc_version", "protobuf_version", "twisted_version")
    VERSION_FIELD_NUMBER: _ClassVar[int]
    PYTHON_VERSION_FIELD_NUMBER: _ClassVar[int]
    GRPC_VERSION_FIELD_NUMBER: _ClassVar[int]
    PROTOBUF_VERSION_FIELD_NUMBER: _ClassVar[int]
    TWISTED_VERSION_FIELD_NUMBER: _ClassVar[int]
    version: str
    python_version: str
    grpc_version: str
    protobuf_version: str
    twisted_version: str
    def __init__(self, version: _Optional[str] = ..., python_version: _Optional[str] = ..., grpc_version: _Optional[str] = ..., protobuf_version: _Optional[str] = ..., twisted_version: _Optional[str] = ...) -> None: ...

class EventFilter(_message.Message):
    __slots__ = ("types", "onu_serial")
    TYPES_FIELD_NUMBER: _ClassVar[int]
    ONU_SERIAL_FIELD_NUMBER: _ClassVar[int]
    types: _containers.RepeatedScalarFieldContainer[str]
    onu_serial: str
    def __init__(self, types: _Optional[_Iterable[str]] = ..., onu_serial: _Optional[str] = ...) -> None: ...

class Event(_message.Message):
    __slots__ = ("type", "time", "olt_id", "pon_id", "onu_id", "onu_serial", "uni_id", "details", "sequence", "dropped")
    class DetailsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    TYPE_FIELD_NUMBER: _ClassVar[int]
    TIME_FIELD_NUMBER: _ClassVar[int]
    OLT_ID_FIELD_NUMBER: _ClassVar[int]
    PON_ID_FIELD_NUMBER: _ClassVar[int]
    ONU_ID_FIELD_NUMBER: _ClassVar[int]
    ONU_SERIAL_FIELD_NUMBER: _ClassVar[int]
    UNI_ID_FIELD_NUMBER: _ClassVar[int]
    DETAILS_FIELD_NUMBER: _ClassVar[int]
    SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    DROPPED_FIELD_NUMBER: _ClassVar[int]
    type: str
    time: float
    olt_id: int
    pon_id: int
    onu_id: int
    onu_serial: str
    uni_id: int
    details: _containers.ScalarMap[str, str]
    sequence: int
    dropped: int
    def __init__(self, type: _Optional[str] = ..., time: _Optional[float] = ..., olt_id: _Optional[int] = ..., pon_id: _Optional[int] = ..., onu_id: _Optional[int] = ..., onu_serial: _Optional[str] = ..., uni_id: _Optional[int] = ..., details: _Optional[_Mapping[str, str]] = ..., sequence: _Optional[int] = ..., dropped: _Optional[int] = ...) -> None: ...

class AlarmFilter(_message.Message):
    __slots__ = ("onu_serial",)
    ONU_SERIAL_FIELD_NUMBER: _ClassVar[int]
    onu_serial: str
    def __init__(self, onu_serial: _Optional[str] = ...) -> None: ...

class ActiveAlarm(_message.Message):
    __slots__ = ("kind", "type", "onu_serial", "pon_id", "port_id", "since")
    KIND_FIELD_NUMBER: _ClassVar[int]
    TYPE_FIELD_NUMBER: _ClassVar[int]
    ONU_SERIAL_FIELD_NUMBER: _ClassVar[int]
    PON_ID_FIELD_NUMBER: _ClassVar[int]
    PORT_ID_FIELD_NUMBER: _ClassVar[int]
    SINCE_FIELD_NUMBER: _ClassVar[int]
    kind: str
    type: str
    onu_serial: str
    pon_id: int
    port_id: int
    since: float
    def __init__(self, kind: _Optional[str] = ..., type: _Optional[str] = ..., onu_serial: _Optional[str] = ..., pon_id: _Optional[int] = ..., port_id: _Optional[int] = ..., since: _Optional[float] = ...) -> None: ...

class AlarmRecord(_message.Message):
    __slots__ = ("kind", "type", "onu_serial", "pon_id", "port_id", "status", "at")
    KIND_FIELD_NUMBER: _ClassVar[int]
    TYPE_FIELD_NUMBER: _ClassVar[int]
    ONU_SERIAL_FIELD_NUMBER: _ClassVar[int]
    PON_ID_FIELD_NUMBER: _ClassVar[int]
    PORT_ID_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    AT_FIELD_NUMBER: _ClassVar[int]
    kind: str
    type: str
    onu_serial: str
    pon_id: int
    port_id: int
    status: str
    at: float
    def __init__(self, kind: _Optional[str] = ..., type: _Optional[str] = ..., onu_serial: _Optional[str] = ..., pon_id: _Optional[int] = ..., port_id: _Optional[int] = ..., status: _Optional[str] = ..., at: _Optional[float] = ...) -> None: ...

class Alarms(_message.Message):
    __slots__ = ("active", "history")
    ACTIVE_FIELD_NUMBER: _ClassVar[int]
    HISTORY_FIELD_NUMBER: _ClassVar[int]
    active: _containers.RepeatedCompositeFieldContainer[ActiveAlarm]
    history: _containers.RepeatedCompositeFieldContainer[AlarmRecord]
    def __init__(self, active: _Optional[_Iterable[_Union[ActiveAlarm, _Mapping]]] = ..., history: _Optional[_Iterable[_Union[AlarmRecord, _Mapping]]] = ...) -> None: ...

class ScenarioRequest(_message.Message):
    __slots__ = ("text", "source")
    TEXT_FIELD_NUMBER: _ClassVar[int]
    SOURCE_FIELD_NUMBER: _ClassVar[int]
    text: str
    source: str
    def __init__(self, text: _Optional[str] = ..., source: _Optional[str] = ...) -> None: ...

class ScenarioStep(_message.Message):
    __slots__ = ("step", "action", "targets", "started_at", "ends_at")
    STEP_FIELD_NUMBER: _ClassVar[int]
    ACTION_FIELD_NUMBER: _ClassVar[int]
    TARGETS_FIELD_NUMBER: _ClassVar[int]
    STARTED_AT_FIELD_NUMBER: _ClassVar[int]
    ENDS_AT_FIELD_NUMBER: _ClassVar[int]
    step: str
    action: str
    targets: _containers.RepeatedScalarFieldContainer[str]
    started_at: float
    ends_at: float
    def __init__(self, step: _Optional[str] = ..., action: _Optional[str] = ..., targets: _Optional[_Iterable[str]] = ..., started_at: _Optional[float] = ..., ends_at: _Optional[float] = ...) -> None: ...

class ScenarioStatus(_message.Message):
    __slots__ = ("state", "name", "source", "seed", "started_at", "elapsed", "steps_total", "steps_started", "steps_ended", "refusals", "current", "error")
    STATE_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    SOURCE_FIELD_NUMBER: _ClassVar[int]
    SEED_FIELD_NUMBER: _ClassVar[int]
    STARTED_AT_FIELD_NUMBER: _ClassVar[int]
    ELAPSED_FIELD_NUMBER: _ClassVar[int]
    STEPS_TOTAL_FIELD_NUMBER: _ClassVar[int]
    STEPS_STARTED_FIELD_NUMBER: _ClassVar[int]
    STEPS_ENDED_FIELD_NUMBER: _ClassVar[int]
    REFUSALS_FIELD_NUMBER: _ClassVar[int]
    CURRENT_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    state: str
    name: str
    source: str
    seed: str
    started_at: float
    elapsed: float
    steps_total: int
    steps_started: int
    steps_ended: int
    refusals: int
    current: _containers.RepeatedCompositeFieldContainer[ScenarioStep]
    error: str
    def __init__(self, state: _Optional[str] = ..., name: _Optional[str] = ..., source: _Optional[str] = ..., seed: _Optional[str] = ..., started_at: _Optional[float] = ..., elapsed: _Optional[float] = ..., steps_total: _Optional[int] = ..., steps_started: _Optional[int] = ..., steps_ended: _Optional[int] = ..., refusals: _Optional[int] = ..., current: _Optional[_Iterable[_Union[ScenarioStep, _Mapping]]] = ..., error: _Optional[str] = ...) -> None: ...

class CaptureRequest(_message.Message):
    __slots__ = ("onu_serials", "pon_id", "omci", "packets", "since", "duration", "count")
    ONU_SERIALS_FIELD_NUMBER: _ClassVar[int]
    PON_ID_FIELD_NUMBER: _ClassVar[int]
    OMCI_FIELD_NUMBER: _ClassVar[int]
    PACKETS_FIELD_NUMBER: _ClassVar[int]
    SINCE_FIELD_NUMBER: _ClassVar[int]
    DURATION_FIELD_NUMBER: _ClassVar[int]
    COUNT_FIELD_NUMBER: _ClassVar[int]
    onu_serials: _containers.RepeatedScalarFieldContainer[str]
    pon_id: int
    omci: bool
    packets: bool
    since: str
    duration: str
    count: int
    def __init__(self, onu_serials: _Optional[_Iterable[str]] = ..., pon_id: _Optional[int] = ..., omci: _Optional[bool] = ..., packets: _Optional[bool] = ..., since: _Optional[str] = ..., duration: _Optional[str] = ..., count: _Optional[int] = ...) -> None: ...

class CaptureCoverage(_message.Message):
    __slots__ = ("wrapped", "size", "oldest", "onu_oldest", "now")
    class OnuOldestEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: float
        def __init__(self, key: _Optional[str] = ..., value: _Optional[float] = ...) -> None: ...
    WRAPPED_FIELD_NUMBER: _ClassVar[int]
    SIZE_FIELD_NUMBER: _ClassVar[int]
    OLDEST_FIELD_NUMBER: _ClassVar[int]
    ONU_OLDEST_FIELD_NUMBER: _ClassVar[int]
    NOW_FIELD_NUMBER: _ClassVar[int]
    wrapped: bool
    size: int
    oldest: float
    onu_oldest: _containers.ScalarMap[str, float]
    now: float
    def __init__(self, wrapped: _Optional[bool] = ..., size: _Optional[int] = ..., oldest: _Optional[float] = ..., onu_oldest: _Optional[_Mapping[str, float]] = ..., now: _Optional[float] = ...) -> None: ...

class CaptureChunk(_message.Message):
    __slots__ = ("data", "dropped", "coverage")
    DATA_FIELD_NUMBER: _ClassVar[int]
    DROPPED_FIELD_NUMBER: _ClassVar[int]
    COVERAGE_FIELD_NUMBER: _ClassVar[int]
    data: bytes
    dropped: int
    coverage: CaptureCoverage
    def __init__(self, data: _Optional[bytes] = ..., dropped: _Optional[int] = ..., coverage: _Optional[_Union[CaptureCoverage, _Mapping]] = ...) -> None: ...

class DataPlaneCounters(_message.Message):
    __slots__ = ("json",)
    JSON_FIELD_NUMBER: _ClassVar[int]
    json: str
    def __init__(self, json: _Optional[str] = ...) -> None: ...
