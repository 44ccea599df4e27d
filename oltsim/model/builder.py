"""Build the OLT model from settings: PONs, ONUs, UNIs, services, identifiers and tags."""
from __future__ import annotations

from oltsim.model.errors import InvalidArgument
from oltsim.model.olt import Olt, PonPort, Timings
from oltsim.model.onu import Onu, Service, Uni, onu_serial, service_mac
from oltsim.model.software import SoftwareImages

MAX_VLAN = 4094


class TagAllocator:
    """BBSim's per-service tag counters (iteration PON -> ONU -> UNI): `unique` tags grow by one
    per UNI; a unique C-tag that would pass 4094 rolls over to the next S-tag (BBSim crashes)."""

    def __init__(self, specs):
        self._specs = {s.name: s for s in specs}
        self._next: dict[str, tuple[int, int]] = {}

    def next(self, spec) -> tuple[int, int]:
        prev = self._next.get(spec.name)
        if prev is None:
            c_tag, s_tag = spec.c_tag, spec.s_tag
        else:
            c_tag, s_tag = prev
            if spec.s_tag_allocation == "unique":
                s_tag += 1
            if spec.c_tag_allocation == "unique":
                c_tag += 1
                if c_tag > MAX_VLAN:
                    c_tag = spec.c_tag
                    s_tag += 1
            if s_tag > MAX_VLAN and s_tag != prev[1]:
                raise InvalidArgument(
                    f"service {spec.name}: too many subscribers for its tags "
                    f"(S-tag would pass {MAX_VLAN}); use fewer ONUs or UNIs, or lower tags")
        self._next[spec.name] = (c_tag, s_tag)
        return c_tag, s_tag


def timings_from(settings) -> Timings:
    return Timings(
        discovery_delay=settings.delay_ms / 1000.0,
        discovery_retry=float(settings.discovery_retry),
        rediscovery_delay=float(settings.rediscovery_delay),
        reboot_grace=float(settings.reboot_grace),
        reboot_delay=float(settings.reboot_delay),
        port_stats_interval=float(settings.port_stats_interval),
    )


def device_info_from(settings) -> dict:
    device_id = settings.device_id or "0a:0a:0a:0a:0a:%02x" % (settings.olt_id % 256)
    return {
        "vendor": settings.vendor,
        "model": settings.model,
        "hardware_version": settings.hardware_version,
        "firmware_version": settings.firmware_version,
        "device_id": device_id,
    }


def range_for(settings, pon_id: int):
    for r in settings.pon_ranges:
        if r.pon_start <= pon_id <= r.pon_end:
            return r
    raise InvalidArgument(f"no resource range configured for PON {pon_id}")


def build_olt(settings, clock, random, *, omci=None, frames=None) -> Olt:
    """The whole OLT for `settings`, its devices handing the adapter's OMCI requests to `omci` and its packets and
    flows to `frames` (oltsim.model.hub.DeviceHub); raises InvalidArgument when it cannot be built."""
    olt = Olt(olt_id=settings.olt_id, clock=clock, random=random, timings=timings_from(settings), omci=omci,
              frames=frames,
              controlled_activation=settings.controlled_activation, nni=settings.nni,
              nni_speed=settings.nni_speed, device_info=device_info_from(settings),
              nni_dhcp_trap_vid=settings.nni_dhcp_trap_vid, max_flows=settings.max_flows,
              max_flows_per_onu=settings.max_flows_per_onu)
    olt.software = SoftwareImages.for_firmware(clock, settings.firmware_version,
                                               on_running_changed=lambda image: _run_firmware(olt, image))
    tags = TagAllocator(settings.services)
    specs = list(settings.services)
    eth_index = 0                   # the OLT's Ethernet UNIs in build order: which profiles a UNI's services take
    for pon_id in range(settings.pon):
        ranges = range_for(settings, pon_id)
        pon = PonPort(olt, pon_id, ranges.technology, ranges)
        olt.add_pon(pon)
        for index in range(1, settings.onu + 1):
            onu = Onu(olt.hub, pon, index, onu_serial(settings.olt_id, pon_id, index))
            for uni_id in range(settings.uni):
                uni = Uni(onu, uni_id, "ETH")
                for k, spec in enumerate(specs):
                    c_tag, s_tag = tags.next(spec)
                    mac = service_mac(settings.olt_id, pon_id, index, uni_id, k)
                    uni.services.append(Service(uni, k, spec, mac, c_tag, s_tag, spec.bandwidth_profiles(eth_index)))
                onu.unis.append(uni)
                eth_index += 1
            for uni_id in range(settings.uni, settings.uni + settings.pots):
                onu.unis.append(Uni(onu, uni_id, "POTS"))
            olt.add_onu(onu)
    return olt


def _run_firmware(olt, image) -> None:
    """The OLT runs ``image`` (DMI activation): the OpenOLT GetDeviceInfo reports its version from now on."""
    olt.device_info["firmware_version"] = image.version
    olt.touch()


def check_buildable(settings) -> None:
    """Raise InvalidArgument when `settings` cannot be built (tags run out, ranges missing),
    without building anything."""
    for pon_id in range(settings.pon):
        range_for(settings, pon_id)
    tags = TagAllocator(settings.services)
    for _ in range(settings.pon * settings.onu * settings.uni):
        for spec in settings.services:
            tags.next(spec)
