"""The ONU upgrade end to end on real sockets, as VOLTHA runs it: the image fetched over HTTP from the SADIS port's
image server, then sent to the ONU over OMCI through OpenOLT OmciMsgOut (answers read from the indication stream)
by the openonu adapter's sequence (onu_upgrade.py): download, activate, reboot, commit; the ONU's image fields and
states checked over the v1 REST API at each step, and /images-count counting the download."""
from __future__ import annotations

import dataclasses

import pytest_twisted
import treq
from twisted.internet.threads import deferToThread
from voltha_protos import openolt_pb2

from onu_upgrade import OnuUpgrade
from scripted_adapter import ScriptedAdapter, is_onu_ind, kind
from test_adapter import HTTP_TIMEOUT, _listening_port, start_oltsim, stop_oltsim


def omci_answer(tid: int):
    """Matches the omci_ind whose OMCI transaction id is `tid`."""
    def match(indication):
        return kind(indication) == "omci_ind" and int.from_bytes(indication.omci_ind.pkt[:2], "big") == tid
    return match


@pytest_twisted.inlineCallbacks
def test_upgrade_over_openolt_with_the_image_from_the_sadis_port(tmp_path):
    """Image from GET /images/software-image.img (counted by /images-count); Start/sections/End accepted, the ONU
    in image_download_completed with all sections; Activate reboots it (OnuInd down then up) into image 1; Commit
    leaves it software_image_committed with image 1 active and committed."""
    sim = start_oltsim(tmp_path, "--delay", "0")
    # The ONU's power cycle after Activate lasts BBSim's 10 s; a short one keeps the test quick.
    sim.olt.timings = dataclasses.replace(sim.olt.timings, onu_reboot=0.5)
    sadis = f"http://127.0.0.1:{_listening_port(sim.top.getServiceNamed('sadis'))}"
    adapter = ScriptedAdapter(sim.openolt)
    try:
        def http_json(path):
            return treq.get(sadis + path, pool=sim.pool, timeout=HTTP_TIMEOUT).addCallback(treq.json_content)

        assert (yield http_json("/images-count")) == {"requests": 0}
        response = yield treq.get(sadis + "/images/software-image.img", pool=sim.pool, timeout=HTTP_TIMEOUT)
        assert response.code == 200
        assert response.headers.getRawHeaders("content-type") == ["application/octet-stream"]
        image = yield treq.content(response)
        assert len(image) == response.length and image[:14] == b"BBSM_IMG_00002"
        assert (yield http_json("/images-count")) == {"requests": 1}

        _, onus = yield deferToThread(adapter.bring_up, 1)
        onu = onus[0]

        def send(frame: bytes) -> None:
            adapter.stub.OmciMsgOut(openolt_pb2.OmciMsg(intf_id=onu.pon, onu_id=onu.onu_id,
                                                         pkt=frame.hex().encode("ascii")),
                                    timeout=adapter.call_timeout)

        def receive(tid: int) -> bytes:
            return adapter.stream.wait_for(omci_answer(tid), f"the OMCI answer to tid {tid}").omci_ind.pkt

        upgrade = OnuUpgrade(send, receive)

        @pytest_twisted.inlineCallbacks
        def onu_fields():
            listing = yield sim.get("/v1/olt/onus")
            (found,) = [o for o in listing["items"] if o["SerialNumber"].lower() == onu.serial.lower()]
            return (found["InternalState"], found.get("ImageSoftwareExpectedSections", 0),
                    found.get("ImageSoftwareReceivedSections", 0), found.get("ActiveImageEntityId", 0),
                    found.get("CommittedImageEntityId", 0))

        sections = -(-len(image) // 31)
        yield deferToThread(upgrade.download, image, 1)
        assert upgrade.sections_sent == sections and upgrade.windows == -(-sections // 32)
        assert (yield onu_fields()) == ("image_download_completed", sections, sections, 0, 0)
        assert (yield deferToThread(upgrade.get_image, 1)) == ("BBSM_IMG_00002", 0, 0)

        mark = len(adapter.stream.received)
        yield deferToThread(upgrade.activate, 1)
        assert (yield onu_fields())[0] in ("software_image_activated", "disabled")

        def rebooted():
            adapter.stream.cursor = mark
            adapter.stream.wait_for(is_onu_ind(onu.serial, oper_state="down"), "OnuInd down after Activate")
            adapter.stream.wait_for(is_onu_ind(onu.serial, oper_state="up"), "OnuInd up after the reboot")
        yield deferToThread(rebooted)
        assert (yield onu_fields()) == ("enabled", sections, sections, 1, 0)
        assert (yield deferToThread(upgrade.get_image, 1)) == ("BBSM_IMG_00002", 0, 1)

        yield deferToThread(upgrade.commit, 1)
        assert (yield onu_fields()) == ("software_image_committed", sections, sections, 1, 1)
        assert (yield deferToThread(upgrade.get_image, 1)) == ("BBSM_IMG_00002", 1, 1)
        assert (yield deferToThread(upgrade.get_image, 0)) == ("BBSM_IMG_00001", 0, 0)
        assert (yield http_json("/images-count")) == {"requests": 1}
    finally:
        yield stop_oltsim(sim, adapter)
