"""The frame path makeService composes: what answers the OMCI requests and the packets an adapter sends an ONU, built
once and handed to every device through its hub; an OMCI frame's octets parsed once where they enter."""
from __future__ import annotations

import pytest
from twisted.internet.task import Clock
from voltha_protos import openolt_pb2
from zope.interface.verify import verifyObject

from oltsim.daemon import OltService
from oltsim.dataplane.front import DataPlaneFront
from oltsim.model import events
from oltsim.model.errors import InvalidArgument
from oltsim.omci import codec, wrappers
from oltsim.omci.responder import OmciResponder
from oltsim.omci.vlanconfig import VlanRecorder
from oltsim.omci.wrappers import IOmciHandler, OmciFaultWrapper
from oltsim.packets.engine import ProtocolEngine
from oltsim.packets.handler import IFrameHandler
from oltsim.southbound.openolt import IndicationHub, OpenoltServicer
from oltsim.tap import Options, makeService

from conftest import grpc_call

GET = 0x49
ONU_G = 256


def built(*arguments: str):
    """makeService's OLT on a fake clock (nothing listens, nothing is made)."""
    options = Options()
    options.parseOptions(["--openolt", "tcp:0:interface=127.0.0.1", "--olt-id", "10", "--pon", "2", "--onu", "16",
                          *arguments])
    top = makeService(options, Clock())
    return next(child for child in top if isinstance(child, OltService)).olt


def chain(handler) -> list:
    """The classes of an OMCI handler and of what each wrapper wraps, outermost first."""
    out = [type(handler)]
    while hasattr(handler, "wrapped"):
        handler = handler.wrapped
        out.append(type(handler))
    return out


def test_without_a_data_plane_the_fault_knobs_stand_before_the_responder_and_the_engine_takes_the_packets():
    """Every ONU of the OLT (OLT id 10, 2x16) reaches the same OMCI chain, the fault knobs in front of the responder,
    and the protocol engine for its packets and flows; each part provides its declared interface."""
    olt = built()
    hubs = {id(onu.hub) for onu in olt.onus}
    assert hubs == {id(olt.hub)} and len(olt.onus) == 32
    assert chain(olt.hub.omci) == [OmciFaultWrapper, OmciResponder]
    assert type(olt.hub.frames) is ProtocolEngine
    assert verifyObject(IOmciHandler, olt.hub.omci) and verifyObject(IOmciHandler, olt.hub.omci.wrapped)
    assert verifyObject(IFrameHandler, olt.hub.frames)


def test_with_a_data_plane_the_vlan_record_is_outermost_and_the_data_plane_stands_before_the_engine():
    """With an NNI interface asked for, the OMCI the adapter writes is recorded before the fault knobs see it, and
    the data plane's front, its pipeline added, stands before the engine it passes the rest to."""
    olt = built("--nni-untagged-interface", "tnu0")
    assert chain(olt.hub.omci) == [VlanRecorder, OmciFaultWrapper, OmciResponder]
    front = olt.hub.frames
    assert type(front) is DataPlaneFront and verifyObject(IFrameHandler, front)
    assert type(front.engine) is ProtocolEngine and front.pipeline is not None


@pytest.mark.parametrize("arguments", [(), ("--nni-untagged-interface", "tnu0")])
def test_omci_msg_out_parses_the_frame_once_and_the_responder_answers(monkeypatch, arguments):
    """One OmciMsgOut through the servicer is parsed once on its way to the responder (however many stages stand in
    front), and answered with one OmciIndication; octets that are no OMCI frame are INVALID_ARGUMENT before any
    stage sees them."""
    olt = built(*arguments)
    seen: list = []
    olt.subscribe(seen.append)
    olt.start()
    olt.enable_indication()
    olt.clock.advance(60)
    onu = olt.pon(1).onus[15]
    olt.activate_onu(1, onu.serial, 16)
    servicer = OpenoltServicer(olt, IndicationHub(olt))
    parsed = []
    real_parse = codec.parse
    monkeypatch.setattr(wrappers.codec, "parse", lambda data: parsed.append(data) or real_parse(data))
    request = codec.encode(7, GET | codec.AR, ONU_G, 0, b"\x80\x00")
    before = len(seen)
    grpc_call(servicer, "OmciMsgOut", openolt_pb2.OmciMsg(intf_id=1, onu_id=16, pkt=request.hex().encode()))
    answers = [e for e in seen[before:] if isinstance(e, events.OmciIndication)]
    assert parsed == [request]
    assert len(answers) == 1 and (answers[0].intf_id, answers[0].onu_id) == (1, 16)
    assert real_parse(answers[0].pkt).tid == 7
    with pytest.raises(InvalidArgument, match="OMCI frame too short"):    # the servicer's INVALID_ARGUMENT
        grpc_call(servicer, "OmciMsgOut", openolt_pb2.OmciMsg(intf_id=1, onu_id=16, pkt=b"0001"))
    assert [e for e in seen[before:] if isinstance(e, events.OmciIndication)] == answers


def test_the_nni_mtu_setting_reaches_the_data_plane_and_is_checked():
    """--nni-mtu is the pipeline's MTU (1500 by default, 9000 for jumbo frames); a value no Ethernet carries is one
    ConfigError naming the option."""
    from oltsim.config import ConfigError, load_settings
    assert built("--nni-untagged-interface", "tnu0").hub.frames.pipeline.mtu == 1500
    assert built("--nni-untagged-interface", "tnu0", "--nni-mtu", "9000").hub.frames.pipeline.mtu == 9000
    for value in (20, 20000):
        with pytest.raises(ConfigError, match="nni"):
            load_settings({"nni_mtu": value}, None)
