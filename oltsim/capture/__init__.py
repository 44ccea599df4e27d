"""Capture: every frame the OLT exchanges, kept in a bounded ring and written as pcapng for Wireshark.

What is recorded, and where
---------------------------
`Capture.for_olt(olt, size)` (built by `oltsim.tap` unless ``--capture-size 0`` / ``bbsim.capture_size: 0``) keeps
the last `size` records (default 20,000), or each ONU's bring-up when that is more (`ring.onu_floor`: ONU_RECORDS +
UNI_RECORDS a UNI for each ONU), in a ring, each with the reactor clock's time, its direction, the ONU's serial, PON,
ONU id, UNI (or NNI) and GEM port:

- OMCI: the adapter's OmciMsgOut frames (the southbound calls `capture.omci_out(onu, frame)` after decoding the
  hex) and every OmciInd the ONUs send (`events.OmciIndication`, answers and autonomous messages), byte for byte,
  baseline or extended;
- at each UNI: what the subscriber sends (`events.PacketIndication` from a PON) and receives (OnuPacketOut:
  `capture.packet_out(onu, port_no, gemport_id, pkt)`), EAPOL, DHCP and IGMP as the subscriber has them;
- at the NNI: what the adapter sends out (UplinkPacketOut: `capture.uplink_out(nni_id, pkt)`) and what comes back
  (`events.PacketIndication` from the NNI), with the tags the flows put on them;
- annotations in the same timeline: scenario steps, alarms, OLT/NNI/PON/ONU/UNI state changes, ONU discovery and
  OnuInd, flows added and removed, MIB uploads started and ended, the adapter's ActivateOnu/Reboot/... calls.

The up direction comes from the OLT's event listener, the down one from the southbound's three hooks, each
behind one ``if capture is not None`` (with capture off there is no listener and nothing else is paid).

Memory: at most `size` records and `size` x FRAME_BUDGET (512) bytes of frames (older records go first; a frame
longer than SNAPLEN, 2048, is kept cut, with its original length). A record costs RECORD_OVERHEAD (150, measured)
bytes besides its frame's octets: a baseline OMCI message about 200 bytes, a DHCP frame about 500, an annotation
about 250 (the event object it keeps); 20,000 records of a bring-up, mostly OMCI, about 4-5 MiB, and at most
20,000 x (150 + 512) bytes, about 13 MiB, whatever the adapter sends. At 16x32 with 4 UNIs the floor is 378,880
records: a bring-up fills 290,341 of them, 60 MiB, 120 KiB an ONU (bench/capture_memory.py); the floor's records
beyond the size given hold FLOOR_FRAME_BUDGET (160) bytes of frames each, so that ring holds 118.7 MiB at most.

The API for the surfaces (REST, gRPC, /ui): all on the reactor thread
--------------------------------------------------------------------
- `CaptureFilter.of(onus=("BBSM000a0101",), pon=None, omci=False, packets=False)`: which frames to keep (serials in
  any case; `omci` / `packets`: only OMCI / only UNI and NNI frames; annotations about a kept ONU, PON or the whole
  OLT come along). `capture.check(filter)` raises NotFound for a serial (naming the nearest) or PON the OLT does not
  have.
- `capture.coverage(filter=None, since=None) -> Coverage`: how far back the ring reaches (`wrapped`, the time of its
  `oldest` record, and of the oldest of each ONU the filter names; `short` when `since` reaches past what it keeps);
  every stream has its own at open (`stream.coverage`), which the surfaces report (REST headers, gRPC's first
  CaptureChunk) and which, when `short`, is said first in the stream by an annotation.
- `capture.snapshot(filter=None, since=None) -> bytes`: the ring (its last `since` seconds) as a pcapng file.
- `capture.select(filter=None, since=None) -> list[record]`: the records themselves (tuples, see `records.TIME`
  ...).
- `capture.open_stream(filter=None, since=None, count=None, duration=None) -> CaptureStream`: live pcapng: the
  ring's last `since` seconds first, then each frame as it is recorded; it ends by itself after `count` frames
  (annotations not counted) or `duration` seconds. At most MAX_STREAMS (16) are open (ResourceExhausted beyond).
  - `stream.read() -> bytes`: what was written since the last read (the Section Header Block first), the ring's
    part written as it is read, up to READ_CHUNK (256 KiB) of it a read: call it until it gives b"";
    `stream.pending` is above 0 while something waits;
  - `stream.wakeup = fn`: called with no argument when bytes become readable or the stream ends;
  - `stream.ended`: None while live, else ``count``, ``duration``, ``closed`` or ``stopped`` (the OLT stopping,
    said in a last annotation in the stream);
  - `stream.close()`: the reader is done (always call it, e.g. when the connection is lost);
  - `async for chunk in reader.chunks(stream)`: the same on the reactor's asyncio loop, gathering on the capture's
    clock (closes the stream when left);
  - a reader that stops reading costs at most STREAM_LIMIT (2 MiB): frames beyond are dropped and counted
    (`stream.dropped`) until it has read half, then an annotation in the stream says how many were dropped; while
    the ring's part is unread, live frames wait behind it as records, QUEUE_LIMIT (8192) at most, then are dropped
    and told the same way; the OLT never waits for a reader.
- `capture.close()`: ends every stream (``stopped``) and stops recording (the daemon stopping).

pcapng as Wireshark expects it (`pcapng.PcapngWriter`, over that module's pure block functions)
----------------------------------------------------------------------------------------------
One interface per capture point, declared before its first packet: ``<serial> omci`` and ``<serial> uni-<n>``
(Ethernet), ``nni-<n>`` (Ethernet) and ``events`` (LINKTYPE_WIRESHARK_UPPER_PDU, each annotation a
``syslog`` packet, whose text Wireshark shows in the Info column). OMCI goes as Ethernet frames of ethertype 0x88b5
(what oltsim.lua, `oltsim.capture.wireshark`, and the wiki's omci.lua read), the ONU as
02:00:<olt id>:<pon>:<onu id, 2 octets> and the OLT as 02:ff:<olt id>:<pon>:00:00, so
``eth.addr == 02:00:0a:00:00:01`` picks one ONU's OMCI. Every packet has a comment with what a display filter cannot
see (``serial=... pon=... onu=... uni=... gem=... service=...``, the OMCI message type, ME and transaction id) and
the direction in epb_flags: inbound is towards the adapter (ONU to OLT at the OMCI channel and UNI, network to OLT
at the NNI).

The modules, by job
-------------------
`ring` the ring (`Capture`, `Coverage`, its sizes; `sizes` those the settings read) and `records` the layout of
its records; `filters` which records a filter keeps and the serial check (`check_serial`); `owners` whose a UNI or
NNI frame is (by its MAC); `annotations` the text of annotations and OMCI summaries; `pcapng` the blocks and
`PcapngWriter`; `stream` a live capture (`CaptureStream`); `reader` its async iterator for the gRPC surface;
`service` its place among the daemon's services.
"""
from oltsim.capture.filters import CaptureFilter
from oltsim.capture.pcapng import PcapngWriter, olt_mac, onu_mac
from oltsim.capture.ring import DEFAULT_SIZE, MAX_STREAMS, STREAM_LIMIT, Capture
from oltsim.capture.stream import CaptureStream

__all__ = ["Capture", "CaptureFilter", "CaptureStream", "PcapngWriter", "DEFAULT_SIZE", "MAX_STREAMS",
           "STREAM_LIMIT", "olt_mac", "onu_mac"]
