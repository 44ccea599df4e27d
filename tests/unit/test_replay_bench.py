"""bench/replay.py's reader and dependency logic on a tiny synthetic recording (no simulator, no timing)."""
import asyncio
import base64
import threading

from voltha_protos import openolt_pb2, tech_profile_pb2

from bench import replay

SERIAL = openolt_pb2.SerialNumber(vendor_id=b"BBSM", vendor_specific=b"\x00\x00\x01\x01")
OTHER = openolt_pb2.SerialNumber(vendor_id=b"BBSM", vendor_specific=b"\x00\x00\x01\x02")
MAC = b"\x2e\x00\x01\x01\x00\x00"


def call(t, method, message, ms=1.0, code="OK"):
    return {"t": t, "m": method, "req": base64.b64encode(message.SerializeToString()).decode(), "ms": ms,
            "code": code}


def ind(t, **data):
    return {"t": t, "m": "EnableIndication",
            "ind": base64.b64encode(openolt_pb2.Indication(**data).SerializeToString()).decode()}


def omci(onu_id, tid):
    return openolt_pb2.OmciMsg(intf_id=1, onu_id=onu_id, pkt=f"{tid:04x}4f0a0002".encode())


def flow(onu_id, alloc, gem, flow_id=7):
    return openolt_pb2.Flow(access_intf_id=1, onu_id=onu_id, flow_id=flow_id, alloc_id=alloc, gemport_id=gem,
                            flow_type="upstream")


def eapol_start():
    return b"\x01\x80\xc2\x00\x00\x03" + MAC + b"\x88\x8e\x01\x01\x00\x00" + bytes(46)


def synthetic():
    """Two ONUs of PON 1: activation, an OMCI exchange, a flow, an EAPOL packet-in answered by a packet-out; the
    second ONU takes the alloc id the first freed. Lines are in file order, not time order, as the proxy wrote
    them (a call's line after its answer)."""
    return [
        call(0.0, "GetDeviceInfo", openolt_pb2.Empty()),
        {"t": 1.0, "m": "EnableIndication", "req": ""},
        ind(2.0, onu_disc_ind=openolt_pb2.OnuDiscIndication(intf_id=1, serial_number=SERIAL)),
        ind(2.1, onu_disc_ind=openolt_pb2.OnuDiscIndication(intf_id=1, serial_number=OTHER)),
        call(3.0, "ActivateOnu", openolt_pb2.Onu(intf_id=1, onu_id=1, serial_number=SERIAL)),
        call(3.1, "ActivateOnu", openolt_pb2.Onu(intf_id=1, onu_id=2, serial_number=OTHER)),
        ind(4.0, onu_ind=openolt_pb2.OnuIndication(intf_id=1, onu_id=1, oper_state="up")),
        ind(4.1, onu_ind=openolt_pb2.OnuIndication(intf_id=1, onu_id=2, oper_state="up")),
        ind(5.5, omci_ind=openolt_pb2.OmciIndication(intf_id=1, onu_id=1, pkt=b"\x80\x00\x2f\x0a")),
        call(5.0, "OmciMsgOut", omci(1, 0x8000)),       # written after its answer, arrived before it
        ind(5.6, omci_ind=openolt_pb2.OmciIndication(intf_id=1, onu_id=1, pkt=b"\x00\x00\x10\x0a")),
        call(6.0, "OmciMsgOut", omci(1, 0x8001)),
        call(7.0, "CreateTrafficSchedulers", tech_profile_pb2.TrafficSchedulers(
            intf_id=1, onu_id=1, traffic_scheds=[tech_profile_pb2.TrafficScheduler(alloc_id=1024)])),
        call(8.0, "FlowAdd", flow(1, 1024, 1024)),
        ind(9.0, pkt_ind=openolt_pb2.PacketIndication(intf_type="pon", intf_id=1, onu_id=1, pkt=eapol_start())),
        call(10.0, "OnuPacketOut", openolt_pb2.OnuPacket(intf_id=1, onu_id=1, pkt=MAC + bytes(54))),
        call(11.0, "FlowRemove", flow(1, 1024, 1024), ms=2.0, code="NOT_FOUND"),
        call(14.0, "FlowAdd", flow(2, 1024, 1025, flow_id=8)),
        call(15.0, "HeartbeatCheck", openolt_pb2.Empty()),
        {"t": 16.0, "m": "EnableIndication", "code": "CANCELLED"},
    ]


def test_reader_splits_calls_into_chains_in_arrival_order():
    """Calls are ordered by arrival time, grouped per ONU and chain; calls of no ONU go to one chain; the
    stream's start and end are no calls; serials and client MACs map to their ONU."""
    recording = replay.parse_recording(synthetic())
    assert [c.method for c in recording.setup] == ["GetDeviceInfo"]
    assert recording.calls == 11 and recording.indications == 7
    one, two = (1, 1), (1, 2)
    assert [c.method for c in recording.chains[(one, "omci")]] == ["OmciMsgOut", "OmciMsgOut"]
    assert [c.method for c in recording.chains[(one, "flow")]] == ["CreateTrafficSchedulers", "FlowAdd",
                                                                    "FlowRemove"]
    assert [c.method for c in recording.chains[(replay.GLOBAL, "olt")]] == ["HeartbeatCheck"]
    assert recording.serials[bytes(SERIAL.vendor_id) + bytes(SERIAL.vendor_specific)] == one
    assert recording.macs == {MAC: one}
    assert recording.chains[(one, "flow")][2].code == "NOT_FOUND"
    assert recording.chains[(two, "act")][0].onu == two


def test_each_call_needs_what_its_onu_had_before_it():
    """A call needs the ONU's indications (discovery, up, OMCI answers but not autonomous ones, packet-ins) and
    its calls answered that came before it in the recording."""
    recording = replay.parse_recording(synthetic())
    one = (1, 1)
    needs = dict(zip(replay.KINDS, recording.chains[(one, "omci")][1].needs))
    assert needs == {"disc": 1, "up": 1, "omci": 1, "pkt": 0, "done": 2, "flows": 0}
    assert recording.chains[(one, "omci")][0].needs[:3] == (1, 1, 0)
    packet_out = dict(zip(replay.KINDS, recording.chains[(one, "pkt")][0].needs))
    assert packet_out["pkt"] == 1 and packet_out["flows"] == 2
    assert recording.chains[(one, "act")][0].needs == (1, 0, 0, 0, 0, 0)


def test_an_id_another_onu_freed_waits_for_its_release():
    """The second ONU's FlowAdd takes alloc 1024, which the first ONU's flow calls held: it waits for the first
    ONU's three flow calls (the release included) answered before it arrived."""
    recording = replay.parse_recording(synthetic())
    (other, needs), = recording.chains[((1, 2), "flow")][0].after
    assert other == (1, 1)
    assert needs[replay.FLOWS] == 3 and sum(needs) == 3
    assert recording.chains[((1, 1), "flow")][0].after == ()


def test_client_mac_reads_dhcp_chaddr_of_relayed_frames():
    """A relayed DHCP frame (broadcast, double-tagged) belongs to the client its chaddr names."""
    udp = b"\x00\x44\x00\x43" + bytes(4)
    bootp = bytes(28) + MAC + bytes(10)
    ip = b"\x45" + bytes(8) + b"\x11" + bytes(10)
    frame = b"\xff" * 6 + b"\xaa" * 6 + b"\x81\x00\x00\x0a" + b"\x81\x00\x00\x0b" + b"\x08\x00" + ip + udp + bootp
    assert replay.client_mac(frame, {MAC: (1, 1)}) == MAC
    assert replay.client_mac(frame, {}) is None
    assert replay.client_mac(MAC + bytes(60), {MAC: (1, 1)}) == MAC


def test_replay_waits_wake_on_the_counts_they_need():
    """A waiting call goes when its ONU's counts reach what it needs, not before; a wait past the stall time
    lets it go and counts a stall."""
    recording = replay.parse_recording(synthetic())
    run = replay.Replay(recording, "127.0.0.1:1", pid=0, stall=0.05, timeout=1.0)

    async def scenario():
        key, needs = (1, 1), (0, 1, 0, 0, 0, 0)
        waiting = asyncio.ensure_future(run._wait(key, needs))
        await asyncio.sleep(0)
        assert not waiting.done()
        run._on_indication(openolt_pb2.Indication(
            onu_ind=openolt_pb2.OnuIndication(intf_id=1, onu_id=1, oper_state="up")))
        await asyncio.wait_for(waiting, 1.0)
        assert run.stalls == 0
        await run._wait(key, (0, 0, 5, 0, 0, 0))
        assert run.stalls == 1

    # The test session's reactor runs an asyncio loop on this thread: the replay's loop gets a thread of its own.
    failures = []

    def in_thread():
        try:
            asyncio.run(scenario())
        except BaseException as exc:  # noqa: BLE001 - handed to the test's thread
            failures.append(exc)

    thread = threading.Thread(target=in_thread)
    thread.start()
    thread.join(10)
    assert not thread.is_alive()
    if failures:
        raise failures[0]
