"""Whose a UNI or NNI frame is: the subscriber (ONU serial, PON) and the service its MAC belongs to, for the
capture's filters and its packets' comments."""
from __future__ import annotations

from oltsim.capture.records import DATA, GEM, POINT, PORT, SERIAL, UNI, UP
from oltsim.model.errors import NotFound
from oltsim.packets import frames as f


class MacOwners:
    """The service MACs of `olt`'s subscribers and whose they are: read from the OLT when first asked, and again
    when a MAC is unknown and the OLT's generation has changed since."""

    def __init__(self, olt):
        self.olt = olt
        self._macs: dict | None = None
        self._macs_generation = -1

    def nni_owner(self, record: tuple) -> tuple[str, int]:
        """(serial, PON) of the subscriber an NNI frame is from or for (DHCP: its client's hardware address,
        else the Ethernet address on the subscriber's side); ("", -1) when no service has that MAC."""
        frame = _decode(record[DATA])
        if frame is None:
            return "", -1
        if frame.kind == "dhcp":
            mac = frame.dhcp.client_mac
        else:
            mac = frame.eth.src if record[UP] else frame.eth.dst
        return self._owner_of_mac(mac)

    def _owner_of_mac(self, mac: bytes) -> tuple[str, int]:
        macs = self._macs
        generation = self.olt.generation
        if macs is None or (mac not in macs and generation != self._macs_generation):
            macs = self._macs = {}
            self._macs_generation = generation
            for onu in self.olt.onus:
                for uni in onu.unis:
                    for index, service in enumerate(getattr(uni, "services", ())):
                        macs[f.mac_bytes(service.mac)] = (onu.serial, onu.pon.id, uni.id, service.name)
        owner = macs.get(mac)
        return (owner[0], owner[1]) if owner else ("", -1)

    def service_of(self, record: tuple) -> str:
        """The service name of a UNI or NNI frame (by its subscriber's MAC, else its GEM port), "" if none."""
        frame = _decode(record[DATA])
        if frame is None:
            return ""
        if frame.kind == "dhcp":
            mac = frame.dhcp.client_mac
        else:
            mac = frame.eth.src if record[UP] else frame.eth.dst
        self._owner_of_mac(mac)
        owner = self._macs.get(mac) if self._macs else None
        if owner is not None:
            return owner[3]
        if record[POINT] == UNI and record[GEM]:
            try:
                onu = self.olt.onu_by_serial(record[SERIAL])
                uni = onu.unis[record[PORT]]
            except (NotFound, IndexError):
                return ""
            for service in getattr(uni, "services", ()):
                if service.gem_port == record[GEM]:
                    return service.name
        return ""


def _decode(data):
    if data.__class__ is tuple:
        data = data[0]
    try:
        return f.decode(data)
    except f.PacketError:
        return None
