from voltha_protos import openolt_pb2 as _openolt_pb2
from voltha_protos import tech_profile_pb2 as _tech_profile_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class OLTInfo(_message.Message):
    __slots__ = ("olt_id", "olt_serial", "olt_ip", "olt_state", "olt_vendor")
    OLT_ID_FIELD_NUMBER: _ClassVar[int]
    OLT_SERIAL_FIELD_NUMBER: _ClassVar[int]
    OLT_IP_FIELD_NUMBER: _ClassVar[int]
    OLT_STATE_FIELD_NUMBER: _ClassVar[int]
    OLT_VENDOR_FIELD_NUMBER: _ClassVar[int]
    olt_id: int
    olt_serial: str
    olt_ip: str
    olt_state: str
    olt_vendor: str
    def __init__(self, olt_id: _Optional[int] = ..., olt_serial: _Optional[str] = ..., olt_ip: _Optional[str] = ..., olt_state: _Optional[str] = ..., olt_vendor: _Optional[str] = ...) -> None: ...

class ONUInfo(_message.Message):
    __slots__ = ("onu_id", "pon_port_id", "onu_serial", "oper_state", "onu_state", "gemports", "tconts")
    ONU_ID_FIELD_NUMBER: _ClassVar[int]
    PON_PORT_ID_FIELD_NUMBER: _ClassVar[int]
    ONU_SERIAL_FIELD_NUMBER: _ClassVar[int]
    OPER_STATE_FIELD_NUMBER: _ClassVar[int]
    ONU_STATE_FIELD_NUMBER: _ClassVar[int]
    GEMPORTS_FIELD_NUMBER: _ClassVar[int]
    TCONTS_FIELD_NUMBER: _ClassVar[int]
    onu_id: int
    pon_port_id: int
    onu_serial: str
    oper_state: str
    onu_state: str
    gemports: _containers.RepeatedScalarFieldContainer[int]
    tconts: Tconts
    def __init__(self, onu_id: _Optional[int] = ..., pon_port_id: _Optional[int] = ..., onu_serial: _Optional[str] = ..., oper_state: _Optional[str] = ..., onu_state: _Optional[str] = ..., gemports: _Optional[_Iterable[int]] = ..., tconts: _Optional[_Union[Tconts, _Mapping]] = ...) -> None: ...

class ONUs(_message.Message):
    __slots__ = ("onus",)
    ONUS_FIELD_NUMBER: _ClassVar[int]
    onus: _containers.RepeatedCompositeFieldContainer[ONUInfo]
    def __init__(self, onus: _Optional[_Iterable[_Union[ONUInfo, _Mapping]]] = ...) -> None: ...

class ONURequest(_message.Message):
    __slots__ = ("onu", "onus_batch")
    ONU_FIELD_NUMBER: _ClassVar[int]
    ONUS_BATCH_FIELD_NUMBER: _ClassVar[int]
    onu: ONUInfo
    onus_batch: ONUs
    def __init__(self, onu: _Optional[_Union[ONUInfo, _Mapping]] = ..., onus_batch: _Optional[_Union[ONUs, _Mapping]] = ...) -> None: ...

class PortInfo(_message.Message):
    __slots__ = ("port_type", "port_id", "pon_port_max_onus", "pon_port_active_onus", "port_state", "alarm_state")
    PORT_TYPE_FIELD_NUMBER: _ClassVar[int]
    PORT_ID_FIELD_NUMBER: _ClassVar[int]
    PON_PORT_MAX_ONUS_FIELD_NUMBER: _ClassVar[int]
    PON_PORT_ACTIVE_ONUS_FIELD_NUMBER: _ClassVar[int]
    PORT_STATE_FIELD_NUMBER: _ClassVar[int]
    ALARM_STATE_FIELD_NUMBER: _ClassVar[int]
    port_type: str
    port_id: int
    pon_port_max_onus: int
    pon_port_active_onus: int
    port_state: str
    alarm_state: str
    def __init__(self, port_type: _Optional[str] = ..., port_id: _Optional[int] = ..., pon_port_max_onus: _Optional[int] = ..., pon_port_active_onus: _Optional[int] = ..., port_state: _Optional[str] = ..., alarm_state: _Optional[str] = ...) -> None: ...

class Ports(_message.Message):
    __slots__ = ("ports",)
    PORTS_FIELD_NUMBER: _ClassVar[int]
    ports: _containers.RepeatedCompositeFieldContainer[PortInfo]
    def __init__(self, ports: _Optional[_Iterable[_Union[PortInfo, _Mapping]]] = ...) -> None: ...

class OLTStatusResponse(_message.Message):
    __slots__ = ("olt", "ports")
    OLT_FIELD_NUMBER: _ClassVar[int]
    PORTS_FIELD_NUMBER: _ClassVar[int]
    olt: OLTInfo
    ports: _containers.RepeatedCompositeFieldContainer[PortInfo]
    def __init__(self, olt: _Optional[_Union[OLTInfo, _Mapping]] = ..., ports: _Optional[_Iterable[_Union[PortInfo, _Mapping]]] = ...) -> None: ...

class BBSimResponse(_message.Message):
    __slots__ = ("status_msg",)
    STATUS_MSG_FIELD_NUMBER: _ClassVar[int]
    status_msg: str
    def __init__(self, status_msg: _Optional[str] = ...) -> None: ...

class ONUAlarmRequest(_message.Message):
    __slots__ = ("onu_serial", "alarm_type", "status")
    ONU_SERIAL_FIELD_NUMBER: _ClassVar[int]
    ALARM_TYPE_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    onu_serial: str
    alarm_type: str
    status: str
    def __init__(self, onu_serial: _Optional[str] = ..., alarm_type: _Optional[str] = ..., status: _Optional[str] = ...) -> None: ...

class OLTAlarmRequest(_message.Message):
    __slots__ = ("port_id", "port_type", "status")
    PORT_ID_FIELD_NUMBER: _ClassVar[int]
    PORT_TYPE_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    port_id: int
    port_type: str
    status: str
    def __init__(self, port_id: _Optional[int] = ..., port_type: _Optional[str] = ..., status: _Optional[str] = ...) -> None: ...

class DeviceAction(_message.Message):
    __slots__ = ("device_type", "serial_number", "action")
    DEVICE_TYPE_FIELD_NUMBER: _ClassVar[int]
    SERIAL_NUMBER_FIELD_NUMBER: _ClassVar[int]
    ACTION_FIELD_NUMBER: _ClassVar[int]
    device_type: str
    serial_number: str
    action: str
    def __init__(self, device_type: _Optional[str] = ..., serial_number: _Optional[str] = ..., action: _Optional[str] = ...) -> None: ...

class Tconts(_message.Message):
    __slots__ = ("uni_id", "port_no", "tconts")
    UNI_ID_FIELD_NUMBER: _ClassVar[int]
    PORT_NO_FIELD_NUMBER: _ClassVar[int]
    TCONTS_FIELD_NUMBER: _ClassVar[int]
    uni_id: int
    port_no: int
    tconts: _containers.RepeatedCompositeFieldContainer[_tech_profile_pb2.TrafficScheduler]
    def __init__(self, uni_id: _Optional[int] = ..., port_no: _Optional[int] = ..., tconts: _Optional[_Iterable[_Union[_tech_profile_pb2.TrafficScheduler, _Mapping]]] = ...) -> None: ...

class Flows(_message.Message):
    __slots__ = ("flows",)
    FLOWS_FIELD_NUMBER: _ClassVar[int]
    flows: _containers.RepeatedCompositeFieldContainer[_openolt_pb2.Flow]
    def __init__(self, flows: _Optional[_Iterable[_Union[_openolt_pb2.Flow, _Mapping]]] = ...) -> None: ...

class Empty(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...
