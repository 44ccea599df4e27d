from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class DmiEvent(_message.Message):
    __slots__ = ("event_name",)
    EVENT_NAME_FIELD_NUMBER: _ClassVar[int]
    event_name: str
    def __init__(self, event_name: _Optional[str] = ...) -> None: ...

class DmiResponse(_message.Message):
    __slots__ = ("status_code", "message")
    STATUS_CODE_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    status_code: int
    message: str
    def __init__(self, status_code: _Optional[int] = ..., message: _Optional[str] = ...) -> None: ...

class DmiEmpty(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class TransceiverRequest(_message.Message):
    __slots__ = ("TransceiverId",)
    TRANSCEIVERID_FIELD_NUMBER: _ClassVar[int]
    TransceiverId: int
    def __init__(self, TransceiverId: _Optional[int] = ...) -> None: ...

class Transceiver(_message.Message):
    __slots__ = ("ID", "UUID", "Name", "Technology", "PluggedIn", "PonIds")
    ID_FIELD_NUMBER: _ClassVar[int]
    UUID_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    TECHNOLOGY_FIELD_NUMBER: _ClassVar[int]
    PLUGGEDIN_FIELD_NUMBER: _ClassVar[int]
    PONIDS_FIELD_NUMBER: _ClassVar[int]
    ID: int
    UUID: str
    Name: str
    Technology: str
    PluggedIn: bool
    PonIds: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, ID: _Optional[int] = ..., UUID: _Optional[str] = ..., Name: _Optional[str] = ..., Technology: _Optional[str] = ..., PluggedIn: _Optional[bool] = ..., PonIds: _Optional[_Iterable[int]] = ...) -> None: ...

class Transceivers(_message.Message):
    __slots__ = ("Items",)
    ITEMS_FIELD_NUMBER: _ClassVar[int]
    Items: _containers.RepeatedCompositeFieldContainer[Transceiver]
    def __init__(self, Items: _Optional[_Iterable[_Union[Transceiver, _Mapping]]] = ...) -> None: ...
