"""The data plane's reading of a frame's header: a tag is whole when its TCI and the EtherType after it are there,
whatever follows; a frame shorter than that is malformed."""
from __future__ import annotations

import pytest

from oltsim.dataplane.wire import peel

MACS = bytes(12)


@pytest.mark.parametrize("tags, payload", [
    ((), b""),
    (((0x8100, 0x0384),), b""),
    (((0x88A8, 0x0384), (0x8100, 0x0385)), b""),
    (((0x8100, 0x0384),), b"\x00\x01"),
])
def test_a_header_with_whole_tags_is_read_however_short_the_payload(tags, payload):
    """A frame of only its MACs, its tags and its EtherType (a runt the output pads to 60 octets) is read, its
    tags and EtherType as sent."""
    frame = MACS + b"".join(tpid.to_bytes(2, "big") + tci.to_bytes(2, "big") for tpid, tci in tags) + b"\x88\xb5"
    frame += payload
    tag_octets, read, ethertype, proto, ports = peel(frame)
    assert read == tags and ethertype == 0x88B5 and tag_octets == frame[12:12 + 4 * len(tags)]
    assert (proto, ports) == (-1, b"")


@pytest.mark.parametrize("frame", [
    MACS + b"\x88",                                # no whole EtherType
    MACS + b"\x81\x00\x03\x84",                    # a tag with no EtherType after it
    MACS + b"\x81\x00\x03\x84\x81\x00\x03",        # a second tag cut short
])
def test_a_frame_cut_inside_its_header_is_malformed(frame):
    """A frame that ends inside its EtherType or a tag is no frame to decide on (counted as malformed)."""
    assert peel(frame) is None
