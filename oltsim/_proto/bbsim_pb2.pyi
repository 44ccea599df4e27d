from voltha_protos import openolt_pb2 as _openolt_pb2
from voltha_protos import tech_profile_pb2 as _tech_profile_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class UniType(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    ETH: _ClassVar[UniType]
    POTS: _ClassVar[UniType]

class SubActionTypes(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    JOIN: _ClassVar[SubActionTypes]
    LEAVE: _ClassVar[SubActionTypes]
    JOINV3: _ClassVar[SubActionTypes]
ETH: UniType
POTS: UniType
JOIN: SubActionTypes
LEAVE: SubActionTypes
JOINV3: SubActionTypes

class PONPort(_message.Message):
    __slots__ = ("ID", "OperState", "InternalState", "PacketCount", "AllocatedOnuIds", "AllocatedGemPorts", "AllocatedAllocIds", "Technology")
    ID_FIELD_NUMBER: _ClassVar[int]
    OPERSTATE_FIELD_NUMBER: _ClassVar[int]
    INTERNALSTATE_FIELD_NUMBER: _ClassVar[int]
    PACKETCOUNT_FIELD_NUMBER: _ClassVar[int]
    ALLOCATEDONUIDS_FIELD_NUMBER: _ClassVar[int]
    ALLOCATEDGEMPORTS_FIELD_NUMBER: _ClassVar[int]
    ALLOCATEDALLOCIDS_FIELD_NUMBER: _ClassVar[int]
    TECHNOLOGY_FIELD_NUMBER: _ClassVar[int]
    ID: int
    OperState: str
    InternalState: str
    PacketCount: int
    AllocatedOnuIds: _containers.RepeatedCompositeFieldContainer[PonAllocatedResources]
    AllocatedGemPorts: _containers.RepeatedCompositeFieldContainer[PonAllocatedResources]
    AllocatedAllocIds: _containers.RepeatedCompositeFieldContainer[PonAllocatedResources]
    Technology: str
    def __init__(self, ID: _Optional[int] = ..., OperState: _Optional[str] = ..., InternalState: _Optional[str] = ..., PacketCount: _Optional[int] = ..., AllocatedOnuIds: _Optional[_Iterable[_Union[PonAllocatedResources, _Mapping]]] = ..., AllocatedGemPorts: _Optional[_Iterable[_Union[PonAllocatedResources, _Mapping]]] = ..., AllocatedAllocIds: _Optional[_Iterable[_Union[PonAllocatedResources, _Mapping]]] = ..., Technology: _Optional[str] = ...) -> None: ...

class PonAllocatedResources(_message.Message):
    __slots__ = ("SerialNumber", "Id")
    SERIALNUMBER_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    SerialNumber: str
    Id: int
    def __init__(self, SerialNumber: _Optional[str] = ..., Id: _Optional[int] = ...) -> None: ...

class NNIPort(_message.Message):
    __slots__ = ("ID", "OperState")
    ID_FIELD_NUMBER: _ClassVar[int]
    OPERSTATE_FIELD_NUMBER: _ClassVar[int]
    ID: int
    OperState: str
    def __init__(self, ID: _Optional[int] = ..., OperState: _Optional[str] = ...) -> None: ...

class Olt(_message.Message):
    __slots__ = ("ID", "SerialNumber", "OperState", "InternalState", "IP", "NNIPorts", "PONPorts", "NniDhcpTrapVid")
    ID_FIELD_NUMBER: _ClassVar[int]
    SERIALNUMBER_FIELD_NUMBER: _ClassVar[int]
    OPERSTATE_FIELD_NUMBER: _ClassVar[int]
    INTERNALSTATE_FIELD_NUMBER: _ClassVar[int]
    IP_FIELD_NUMBER: _ClassVar[int]
    NNIPORTS_FIELD_NUMBER: _ClassVar[int]
    PONPORTS_FIELD_NUMBER: _ClassVar[int]
    NNIDHCPTRAPVID_FIELD_NUMBER: _ClassVar[int]
    ID: int
    SerialNumber: str
    OperState: str
    InternalState: str
    IP: str
    NNIPorts: _containers.RepeatedCompositeFieldContainer[NNIPort]
    PONPorts: _containers.RepeatedCompositeFieldContainer[PONPort]
    NniDhcpTrapVid: int
    def __init__(self, ID: _Optional[int] = ..., SerialNumber: _Optional[str] = ..., OperState: _Optional[str] = ..., InternalState: _Optional[str] = ..., IP: _Optional[str] = ..., NNIPorts: _Optional[_Iterable[_Union[NNIPort, _Mapping]]] = ..., PONPorts: _Optional[_Iterable[_Union[PONPort, _Mapping]]] = ..., NniDhcpTrapVid: _Optional[int] = ...) -> None: ...

class OltAllocatedResourceType(_message.Message):
    __slots__ = ("type",)
    class Type(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        UNKNOWN: _ClassVar[OltAllocatedResourceType.Type]
        ALLOC_ID: _ClassVar[OltAllocatedResourceType.Type]
        GEM_PORT: _ClassVar[OltAllocatedResourceType.Type]
    UNKNOWN: OltAllocatedResourceType.Type
    ALLOC_ID: OltAllocatedResourceType.Type
    GEM_PORT: OltAllocatedResourceType.Type
    TYPE_FIELD_NUMBER: _ClassVar[int]
    type: OltAllocatedResourceType.Type
    def __init__(self, type: _Optional[_Union[OltAllocatedResourceType.Type, str]] = ...) -> None: ...

class OltAllocatedResource(_message.Message):
    __slots__ = ("Type", "PonPortId", "OnuId", "PortNo", "ResourceId", "FlowId")
    TYPE_FIELD_NUMBER: _ClassVar[int]
    PONPORTID_FIELD_NUMBER: _ClassVar[int]
    ONUID_FIELD_NUMBER: _ClassVar[int]
    PORTNO_FIELD_NUMBER: _ClassVar[int]
    RESOURCEID_FIELD_NUMBER: _ClassVar[int]
    FLOWID_FIELD_NUMBER: _ClassVar[int]
    Type: str
    PonPortId: int
    OnuId: int
    PortNo: int
    ResourceId: int
    FlowId: int
    def __init__(self, Type: _Optional[str] = ..., PonPortId: _Optional[int] = ..., OnuId: _Optional[int] = ..., PortNo: _Optional[int] = ..., ResourceId: _Optional[int] = ..., FlowId: _Optional[int] = ...) -> None: ...

class OltAllocatedResources(_message.Message):
    __slots__ = ("resources",)
    RESOURCES_FIELD_NUMBER: _ClassVar[int]
    resources: _containers.RepeatedCompositeFieldContainer[OltAllocatedResource]
    def __init__(self, resources: _Optional[_Iterable[_Union[OltAllocatedResource, _Mapping]]] = ...) -> None: ...

class ONU(_message.Message):
    __slots__ = ("ID", "SerialNumber", "OperState", "InternalState", "PonPortID", "HwAddress", "PortNo", "services", "ImageSoftwareExpectedSections", "ImageSoftwareReceivedSections", "ActiveImageEntityId", "CommittedImageEntityId", "unis")
    ID_FIELD_NUMBER: _ClassVar[int]
    SERIALNUMBER_FIELD_NUMBER: _ClassVar[int]
    OPERSTATE_FIELD_NUMBER: _ClassVar[int]
    INTERNALSTATE_FIELD_NUMBER: _ClassVar[int]
    PONPORTID_FIELD_NUMBER: _ClassVar[int]
    HWADDRESS_FIELD_NUMBER: _ClassVar[int]
    PORTNO_FIELD_NUMBER: _ClassVar[int]
    SERVICES_FIELD_NUMBER: _ClassVar[int]
    IMAGESOFTWAREEXPECTEDSECTIONS_FIELD_NUMBER: _ClassVar[int]
    IMAGESOFTWARERECEIVEDSECTIONS_FIELD_NUMBER: _ClassVar[int]
    ACTIVEIMAGEENTITYID_FIELD_NUMBER: _ClassVar[int]
    COMMITTEDIMAGEENTITYID_FIELD_NUMBER: _ClassVar[int]
    UNIS_FIELD_NUMBER: _ClassVar[int]
    ID: int
    SerialNumber: str
    OperState: str
    InternalState: str
    PonPortID: int
    HwAddress: str
    PortNo: int
    services: _containers.RepeatedCompositeFieldContainer[Service]
    ImageSoftwareExpectedSections: int
    ImageSoftwareReceivedSections: int
    ActiveImageEntityId: int
    CommittedImageEntityId: int
    unis: _containers.RepeatedCompositeFieldContainer[UNI]
    def __init__(self, ID: _Optional[int] = ..., SerialNumber: _Optional[str] = ..., OperState: _Optional[str] = ..., InternalState: _Optional[str] = ..., PonPortID: _Optional[int] = ..., HwAddress: _Optional[str] = ..., PortNo: _Optional[int] = ..., services: _Optional[_Iterable[_Union[Service, _Mapping]]] = ..., ImageSoftwareExpectedSections: _Optional[int] = ..., ImageSoftwareReceivedSections: _Optional[int] = ..., ActiveImageEntityId: _Optional[int] = ..., CommittedImageEntityId: _Optional[int] = ..., unis: _Optional[_Iterable[_Union[UNI, _Mapping]]] = ...) -> None: ...

class UNI(_message.Message):
    __slots__ = ("ID", "OnuID", "OnuSn", "MeID", "OperState", "PortNo", "services", "Type")
    ID_FIELD_NUMBER: _ClassVar[int]
    ONUID_FIELD_NUMBER: _ClassVar[int]
    ONUSN_FIELD_NUMBER: _ClassVar[int]
    MEID_FIELD_NUMBER: _ClassVar[int]
    OPERSTATE_FIELD_NUMBER: _ClassVar[int]
    PORTNO_FIELD_NUMBER: _ClassVar[int]
    SERVICES_FIELD_NUMBER: _ClassVar[int]
    TYPE_FIELD_NUMBER: _ClassVar[int]
    ID: int
    OnuID: int
    OnuSn: str
    MeID: int
    OperState: str
    PortNo: int
    services: _containers.RepeatedCompositeFieldContainer[Service]
    Type: UniType
    def __init__(self, ID: _Optional[int] = ..., OnuID: _Optional[int] = ..., OnuSn: _Optional[str] = ..., MeID: _Optional[int] = ..., OperState: _Optional[str] = ..., PortNo: _Optional[int] = ..., services: _Optional[_Iterable[_Union[Service, _Mapping]]] = ..., Type: _Optional[_Union[UniType, str]] = ...) -> None: ...

class Service(_message.Message):
    __slots__ = ("Name", "HwAddress", "OnuSn", "STag", "CTag", "NeedsEapol", "NeedsDhcp", "NeedsIgmp", "GemPort", "EapolState", "DhcpState", "InternalState", "IGMPState", "UniId", "UniTagMatch", "UsCTagPriority", "UsSTagPriority", "DsCTagPriority", "DsSTagPriority", "NeedsPPPoE", "ConfigureMacAddress", "EnableMacLearning")
    NAME_FIELD_NUMBER: _ClassVar[int]
    HWADDRESS_FIELD_NUMBER: _ClassVar[int]
    ONUSN_FIELD_NUMBER: _ClassVar[int]
    STAG_FIELD_NUMBER: _ClassVar[int]
    CTAG_FIELD_NUMBER: _ClassVar[int]
    NEEDSEAPOL_FIELD_NUMBER: _ClassVar[int]
    NEEDSDHCP_FIELD_NUMBER: _ClassVar[int]
    NEEDSIGMP_FIELD_NUMBER: _ClassVar[int]
    GEMPORT_FIELD_NUMBER: _ClassVar[int]
    EAPOLSTATE_FIELD_NUMBER: _ClassVar[int]
    DHCPSTATE_FIELD_NUMBER: _ClassVar[int]
    INTERNALSTATE_FIELD_NUMBER: _ClassVar[int]
    IGMPSTATE_FIELD_NUMBER: _ClassVar[int]
    UNIID_FIELD_NUMBER: _ClassVar[int]
    UNITAGMATCH_FIELD_NUMBER: _ClassVar[int]
    USCTAGPRIORITY_FIELD_NUMBER: _ClassVar[int]
    USSTAGPRIORITY_FIELD_NUMBER: _ClassVar[int]
    DSCTAGPRIORITY_FIELD_NUMBER: _ClassVar[int]
    DSSTAGPRIORITY_FIELD_NUMBER: _ClassVar[int]
    NEEDSPPPOE_FIELD_NUMBER: _ClassVar[int]
    CONFIGUREMACADDRESS_FIELD_NUMBER: _ClassVar[int]
    ENABLEMACLEARNING_FIELD_NUMBER: _ClassVar[int]
    Name: str
    HwAddress: str
    OnuSn: str
    STag: int
    CTag: int
    NeedsEapol: bool
    NeedsDhcp: bool
    NeedsIgmp: bool
    GemPort: int
    EapolState: str
    DhcpState: str
    InternalState: str
    IGMPState: str
    UniId: int
    UniTagMatch: int
    UsCTagPriority: int
    UsSTagPriority: int
    DsCTagPriority: int
    DsSTagPriority: int
    NeedsPPPoE: bool
    ConfigureMacAddress: bool
    EnableMacLearning: bool
    def __init__(self, Name: _Optional[str] = ..., HwAddress: _Optional[str] = ..., OnuSn: _Optional[str] = ..., STag: _Optional[int] = ..., CTag: _Optional[int] = ..., NeedsEapol: _Optional[bool] = ..., NeedsDhcp: _Optional[bool] = ..., NeedsIgmp: _Optional[bool] = ..., GemPort: _Optional[int] = ..., EapolState: _Optional[str] = ..., DhcpState: _Optional[str] = ..., InternalState: _Optional[str] = ..., IGMPState: _Optional[str] = ..., UniId: _Optional[int] = ..., UniTagMatch: _Optional[int] = ..., UsCTagPriority: _Optional[int] = ..., UsSTagPriority: _Optional[int] = ..., DsCTagPriority: _Optional[int] = ..., DsSTagPriority: _Optional[int] = ..., NeedsPPPoE: _Optional[bool] = ..., ConfigureMacAddress: _Optional[bool] = ..., EnableMacLearning: _Optional[bool] = ...) -> None: ...

class ONUTrafficSchedulers(_message.Message):
    __slots__ = ("traffSchedulers",)
    TRAFFSCHEDULERS_FIELD_NUMBER: _ClassVar[int]
    traffSchedulers: _tech_profile_pb2.TrafficSchedulers
    def __init__(self, traffSchedulers: _Optional[_Union[_tech_profile_pb2.TrafficSchedulers, _Mapping]] = ...) -> None: ...

class ONUs(_message.Message):
    __slots__ = ("items",)
    ITEMS_FIELD_NUMBER: _ClassVar[int]
    items: _containers.RepeatedCompositeFieldContainer[ONU]
    def __init__(self, items: _Optional[_Iterable[_Union[ONU, _Mapping]]] = ...) -> None: ...

class Services(_message.Message):
    __slots__ = ("items",)
    ITEMS_FIELD_NUMBER: _ClassVar[int]
    items: _containers.RepeatedCompositeFieldContainer[Service]
    def __init__(self, items: _Optional[_Iterable[_Union[Service, _Mapping]]] = ...) -> None: ...

class UNIs(_message.Message):
    __slots__ = ("items",)
    ITEMS_FIELD_NUMBER: _ClassVar[int]
    items: _containers.RepeatedCompositeFieldContainer[UNI]
    def __init__(self, items: _Optional[_Iterable[_Union[UNI, _Mapping]]] = ...) -> None: ...

class ONURequest(_message.Message):
    __slots__ = ("SerialNumber",)
    SERIALNUMBER_FIELD_NUMBER: _ClassVar[int]
    SerialNumber: str
    def __init__(self, SerialNumber: _Optional[str] = ...) -> None: ...

class PONRequest(_message.Message):
    __slots__ = ("PonPortId",)
    PONPORTID_FIELD_NUMBER: _ClassVar[int]
    PonPortId: int
    def __init__(self, PonPortId: _Optional[int] = ...) -> None: ...

class UNIRequest(_message.Message):
    __slots__ = ("OnuSerialNumber", "UniID")
    ONUSERIALNUMBER_FIELD_NUMBER: _ClassVar[int]
    UNIID_FIELD_NUMBER: _ClassVar[int]
    OnuSerialNumber: str
    UniID: str
    def __init__(self, OnuSerialNumber: _Optional[str] = ..., UniID: _Optional[str] = ...) -> None: ...

class AlarmType(_message.Message):
    __slots__ = ()
    class Types(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        LOS: _ClassVar[AlarmType.Types]
        DYING_GASP: _ClassVar[AlarmType.Types]
        ONU_ALARM: _ClassVar[AlarmType.Types]
        ONU_STARTUP_FAILURE: _ClassVar[AlarmType.Types]
        ONU_SIGNAL_DEGRADE: _ClassVar[AlarmType.Types]
        ONU_DRIFT_OF_WINDOW: _ClassVar[AlarmType.Types]
        ONU_LOSS_OF_OMCI_CHANNEL: _ClassVar[AlarmType.Types]
        ONU_SIGNALS_FAILURE: _ClassVar[AlarmType.Types]
        ONU_TRANSMISSION_INTERFERENCE_WARNING: _ClassVar[AlarmType.Types]
        ONU_ACTIVATION_FAILURE: _ClassVar[AlarmType.Types]
        ONU_PROCESSING_ERROR: _ClassVar[AlarmType.Types]
        ONU_LOSS_OF_KEY_SYNC_FAILURE: _ClassVar[AlarmType.Types]
        ONU_ITU_PON_STATS: _ClassVar[AlarmType.Types]
        ONU_ALARM_LOS: _ClassVar[AlarmType.Types]
        ONU_ALARM_LOB: _ClassVar[AlarmType.Types]
        ONU_ALARM_LOPC_MISS: _ClassVar[AlarmType.Types]
        ONU_ALARM_LOPC_MIC_ERROR: _ClassVar[AlarmType.Types]
        ONU_ALARM_LOFI: _ClassVar[AlarmType.Types]
        ONU_ALARM_LOAMI: _ClassVar[AlarmType.Types]
    LOS: AlarmType.Types
    DYING_GASP: AlarmType.Types
    ONU_ALARM: AlarmType.Types
    ONU_STARTUP_FAILURE: AlarmType.Types
    ONU_SIGNAL_DEGRADE: AlarmType.Types
    ONU_DRIFT_OF_WINDOW: AlarmType.Types
    ONU_LOSS_OF_OMCI_CHANNEL: AlarmType.Types
    ONU_SIGNALS_FAILURE: AlarmType.Types
    ONU_TRANSMISSION_INTERFERENCE_WARNING: AlarmType.Types
    ONU_ACTIVATION_FAILURE: AlarmType.Types
    ONU_PROCESSING_ERROR: AlarmType.Types
    ONU_LOSS_OF_KEY_SYNC_FAILURE: AlarmType.Types
    ONU_ITU_PON_STATS: AlarmType.Types
    ONU_ALARM_LOS: AlarmType.Types
    ONU_ALARM_LOB: AlarmType.Types
    ONU_ALARM_LOPC_MISS: AlarmType.Types
    ONU_ALARM_LOPC_MIC_ERROR: AlarmType.Types
    ONU_ALARM_LOFI: AlarmType.Types
    ONU_ALARM_LOAMI: AlarmType.Types
    def __init__(self) -> None: ...

class AlarmParameter(_message.Message):
    __slots__ = ("Key", "Value")
    KEY_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    Key: str
    Value: str
    def __init__(self, Key: _Optional[str] = ..., Value: _Optional[str] = ...) -> None: ...

class ONUAlarmRequest(_message.Message):
    __slots__ = ("AlarmType", "SerialNumber", "Status", "Parameters")
    ALARMTYPE_FIELD_NUMBER: _ClassVar[int]
    SERIALNUMBER_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    PARAMETERS_FIELD_NUMBER: _ClassVar[int]
    AlarmType: str
    SerialNumber: str
    Status: str
    Parameters: _containers.RepeatedCompositeFieldContainer[AlarmParameter]
    def __init__(self, AlarmType: _Optional[str] = ..., SerialNumber: _Optional[str] = ..., Status: _Optional[str] = ..., Parameters: _Optional[_Iterable[_Union[AlarmParameter, _Mapping]]] = ...) -> None: ...

class OLTAlarmRequest(_message.Message):
    __slots__ = ("InterfaceID", "InterfaceType", "Status")
    INTERFACEID_FIELD_NUMBER: _ClassVar[int]
    INTERFACETYPE_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    InterfaceID: int
    InterfaceType: str
    Status: str
    def __init__(self, InterfaceID: _Optional[int] = ..., InterfaceType: _Optional[str] = ..., Status: _Optional[str] = ...) -> None: ...

class VersionNumber(_message.Message):
    __slots__ = ("version", "buildTime", "commitHash", "gitStatus")
    VERSION_FIELD_NUMBER: _ClassVar[int]
    BUILDTIME_FIELD_NUMBER: _ClassVar[int]
    COMMITHASH_FIELD_NUMBER: _ClassVar[int]
    GITSTATUS_FIELD_NUMBER: _ClassVar[int]
    version: str
    buildTime: str
    commitHash: str
    gitStatus: str
    def __init__(self, version: _Optional[str] = ..., buildTime: _Optional[str] = ..., commitHash: _Optional[str] = ..., gitStatus: _Optional[str] = ...) -> None: ...

class LogLevel(_message.Message):
    __slots__ = ("level", "caller")
    LEVEL_FIELD_NUMBER: _ClassVar[int]
    CALLER_FIELD_NUMBER: _ClassVar[int]
    level: str
    caller: bool
    def __init__(self, level: _Optional[str] = ..., caller: _Optional[bool] = ...) -> None: ...

class Response(_message.Message):
    __slots__ = ("status_code", "message")
    STATUS_CODE_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    status_code: int
    message: str
    def __init__(self, status_code: _Optional[int] = ..., message: _Optional[str] = ...) -> None: ...

class IgmpRequest(_message.Message):
    __slots__ = ("OnuSerialNumber", "UniID", "SubActionVal", "GroupAddress", "VLAN")
    ONUSERIALNUMBER_FIELD_NUMBER: _ClassVar[int]
    UNIID_FIELD_NUMBER: _ClassVar[int]
    SUBACTIONVAL_FIELD_NUMBER: _ClassVar[int]
    GROUPADDRESS_FIELD_NUMBER: _ClassVar[int]
    VLAN_FIELD_NUMBER: _ClassVar[int]
    OnuSerialNumber: str
    UniID: int
    SubActionVal: SubActionTypes
    GroupAddress: str
    VLAN: int
    def __init__(self, OnuSerialNumber: _Optional[str] = ..., UniID: _Optional[int] = ..., SubActionVal: _Optional[_Union[SubActionTypes, str]] = ..., GroupAddress: _Optional[str] = ..., VLAN: _Optional[int] = ...) -> None: ...

class Flows(_message.Message):
    __slots__ = ("flow_count", "flows")
    FLOW_COUNT_FIELD_NUMBER: _ClassVar[int]
    FLOWS_FIELD_NUMBER: _ClassVar[int]
    flow_count: int
    flows: _containers.RepeatedCompositeFieldContainer[_openolt_pb2.Flow]
    def __init__(self, flow_count: _Optional[int] = ..., flows: _Optional[_Iterable[_Union[_openolt_pb2.Flow, _Mapping]]] = ...) -> None: ...

class Timeout(_message.Message):
    __slots__ = ("delay",)
    DELAY_FIELD_NUMBER: _ClassVar[int]
    delay: int
    def __init__(self, delay: _Optional[int] = ...) -> None: ...

class Empty(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...
