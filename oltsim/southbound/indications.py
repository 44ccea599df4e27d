"""Model events -> OpenOLT `Indication` messages (a table, not logic)."""
from __future__ import annotations

from voltha_protos import common_pb2, openolt_pb2

from oltsim.model import events
from oltsim.openoltpb import serial_to_pb

_ALARM_TYPES = {f.name: f.message_type for f in openolt_pb2.AlarmIndication.DESCRIPTOR.fields}


def _alarm(event: events.Alarm) -> list:
    msg = openolt_pb2.AlarmIndication()
    sub = getattr(msg, event.kind)
    for key, value in event.fields.items():
        if isinstance(value, dict):
            nested = getattr(sub, key)
            for k2, v2 in value.items():
                setattr(nested, k2, v2)
        else:
            setattr(sub, key, value)
    sub.SetInParent()
    return [openolt_pb2.Indication(alarm_ind=msg)]


def _olt(event: events.OltIndication) -> list:
    return [openolt_pb2.Indication(olt_ind=openolt_pb2.OltIndication(oper_state=event.oper_state))]


def _nni(event: events.NniIndication) -> list:
    return [openolt_pb2.Indication(intf_oper_ind=openolt_pb2.IntfOperIndication(
        type="nni", intf_id=event.intf_id, oper_state=event.oper_state, speed=event.speed))]


def _pon(event: events.PonIndication) -> list:
    return [
        openolt_pb2.Indication(intf_ind=openolt_pb2.IntfIndication(intf_id=event.intf_id,
                                                                    oper_state=event.oper_state)),
        openolt_pb2.Indication(intf_oper_ind=openolt_pb2.IntfOperIndication(
            type="pon", intf_id=event.intf_id, oper_state=event.oper_state)),
    ]


def _disc(event: events.OnuDiscovery) -> list:
    return [openolt_pb2.Indication(onu_disc_ind=openolt_pb2.OnuDiscIndication(
        intf_id=event.intf_id, serial_number=serial_to_pb(event.serial)))]


def _onu(event: events.OnuIndication) -> list:
    return [openolt_pb2.Indication(onu_ind=openolt_pb2.OnuIndication(
        intf_id=event.intf_id, onu_id=event.onu_id, oper_state=event.oper_state,
        admin_state=event.admin_state, serial_number=serial_to_pb(event.serial)))]


def _omci(event: events.OmciIndication) -> list:
    # The two most frequent indications are filled in place: a sub-message passed to the constructor is built,
    # then copied into the Indication (about twice the time, per OMCI answer).
    indication = openolt_pb2.Indication()
    omci = indication.omci_ind
    omci.intf_id = event.intf_id
    omci.onu_id = event.onu_id
    omci.pkt = event.pkt
    return [indication]


def _pkt(event: events.PacketIndication) -> list:
    indication = openolt_pb2.Indication()
    pkt = indication.pkt_ind
    pkt.intf_type = event.intf_type
    pkt.intf_id = event.intf_id
    pkt.onu_id = event.onu_id
    pkt.uni_id = event.uni_id
    pkt.gemport_id = event.gemport_id
    pkt.port_no = event.port_no
    pkt.pkt = event.pkt
    return [indication]


def port_statistics(port_no: int, packets: int, timestamp: int) -> common_pb2.PortStatistics:
    """BBSim's split of a packet count: 40 % unicast, 30 % multicast, 30 % broadcast, 64-byte packets."""
    ucast, mcast = packets * 4 // 10, packets * 3 // 10
    counters = dict(bytes=64 * packets, packets=packets, ucast_packets=ucast, mcast_packets=mcast,
                    bcast_packets=packets - ucast - mcast)
    fields = {f"{d}_{k}": v for d in ("rx", "tx") for k, v in counters.items()}
    return common_pb2.PortStatistics(intf_id=port_no, timestamp=timestamp, **fields)


def _stats(event: events.PortStats) -> list:
    return [openolt_pb2.Indication(port_stats=port_statistics(event.intf_id, event.packets, event.timestamp))]


TRANSLATORS = {
    events.PortStats: _stats,
    events.OmciIndication: _omci,
    events.PacketIndication: _pkt,
    events.OltIndication: _olt,
    events.NniIndication: _nni,
    events.PonIndication: _pon,
    events.OnuDiscovery: _disc,
    events.OnuIndication: _onu,
    events.Alarm: _alarm,
}


def to_indications(event) -> list:
    """The indications an event becomes on the OpenOLT stream (none for internal events)."""
    translate = TRANSLATORS.get(type(event))
    return translate(event) if translate is not None else []
